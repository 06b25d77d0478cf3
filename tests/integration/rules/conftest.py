"""The integration tests of rules (issue 91): a rule's condition compiled from a query, run by the server's
Sieve on real messages."""
