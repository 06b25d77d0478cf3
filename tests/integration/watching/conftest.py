"""The integration tests of watching."""
