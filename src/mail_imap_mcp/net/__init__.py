"""What any mail protocol needs below its own commands: a call's time budget, TCP and TLS sockets, SASL
messages and where an OAuth 2.0 access token comes from.

Protocol-neutral: it imports nothing of ``imap/`` or the layers above it (``tests/unit/test_architecture.py``),
so IMAP today and SMTP submission tomorrow use the same pieces, and no socket, TLS or SASL code lives
in a protocol's own package.
"""
