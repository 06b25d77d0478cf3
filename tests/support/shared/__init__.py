"""What test modules share: the fixtures and helpers that lived in one test module and that others used,
one module here per such test module (no test module imports another)."""
