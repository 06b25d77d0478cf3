"""The integration tests of team."""
