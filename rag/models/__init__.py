"""Model construction: the chat model and its budget, the bundled MiniLM."""
