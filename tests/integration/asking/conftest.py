"""The integration tests of asking."""
