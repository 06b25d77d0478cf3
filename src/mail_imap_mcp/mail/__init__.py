"""What services speak about mail, whatever the protocol: message ids, the records services return,
mailbox roles, domain errors and step failures, and the backend Protocols (:mod:`.backend`) a protocol
implements (``imap/`` today). Knows no IMAP and no MCP."""
