"""The Streamlit chat (app.py) and its rendering helpers (render.py)."""
