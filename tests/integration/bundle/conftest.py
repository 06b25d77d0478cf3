"""The integration tests of bundle."""
