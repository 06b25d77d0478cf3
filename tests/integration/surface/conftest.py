"""The integration tests of surface."""
