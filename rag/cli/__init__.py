"""The command line: a thin caller of the same public functions as the page."""
