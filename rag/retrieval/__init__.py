"""Retrieve: hybrid, paper-level search with filters, and the relevance decision."""
