"""The integration tests of search."""
