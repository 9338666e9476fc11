"""The broker metadata under config/: topics.json (topics.py)."""
