"""Language: the Chinese gloss and its glossary, the fixed text in each language."""
