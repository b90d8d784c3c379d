"""Explore: the topic map, related papers, comparison, BibTeX."""
