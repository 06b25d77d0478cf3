"""The integration tests of sign in."""
