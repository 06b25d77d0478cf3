"""The PostgreSQL engine: a schema per index in one shared database (its store, compiler, schema,
pages by key and kept match counts)."""
