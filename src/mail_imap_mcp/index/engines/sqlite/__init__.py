"""The SQLite engine: an FTS5 file per index (its store, compiler, schema, pages, ranking, words and
where its files live); the only package that imports ``sqlite3``, with ``tantivy/`` beside it."""
