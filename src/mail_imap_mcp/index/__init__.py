"""The local full-text index: a store behind a small interface (SQLite FTS5 by default), kept up to date
through the IMAP layer, answering the queries ``query/fts5.py`` compiles (docs/index.md)."""
