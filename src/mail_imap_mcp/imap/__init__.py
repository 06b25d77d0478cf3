"""The IMAP layer: connections, mailboxes, search, fetch and MIME. Knows nothing of MCP."""
