"""ICLR 2025 research assistant: load, chunk, index, retrieve, answer, verify, present."""
