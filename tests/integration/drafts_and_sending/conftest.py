"""The integration tests of drafts and sending."""
