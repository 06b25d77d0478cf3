"""The local full-text index: a store behind a small interface (SQLite FTS5 by default), kept up to date
through the IMAP layer, answering query trees each engine compiles itself (``index/engine.py``) (docs/index.md)."""
