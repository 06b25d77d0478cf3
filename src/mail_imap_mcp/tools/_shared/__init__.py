"""What the tools share: argument types, the output shapes the model sees, message lookup and reading,
attachment handling, the search page. Each module says what it holds; the tools themselves are the
modules of :mod:`mail_imap_mcp.tools`."""
