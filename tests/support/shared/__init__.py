"""What test modules share: fixtures and helpers that lived in one test module and that others used (no test module imports another)."""
