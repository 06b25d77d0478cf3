"""The integration tests of index."""
