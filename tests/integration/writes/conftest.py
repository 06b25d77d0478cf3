"""The integration tests of writes."""
