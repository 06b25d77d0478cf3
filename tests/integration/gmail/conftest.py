"""The integration tests of gmail."""
