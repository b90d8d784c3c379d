"""Evaluation: retrieval and answer metrics on labelled question sets."""
