"""The integration tests of backends."""
