"""The integration tests of harness."""
