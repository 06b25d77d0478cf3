"""The integration tests of setup."""
