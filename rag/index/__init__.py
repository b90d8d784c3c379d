"""Chunk and index: chunking, the Chroma store, the paper index, BM25, ingest."""
