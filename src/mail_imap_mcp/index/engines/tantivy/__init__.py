"""The ``sqlite+tantivy`` engine: the SQLite engine's files, each with a Tantivy index of its text beside it
(an optional dependency, imported only when chosen)."""
