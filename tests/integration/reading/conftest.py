"""The integration tests of reading."""
