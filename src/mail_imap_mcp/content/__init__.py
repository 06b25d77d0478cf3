"""Pure content work beside the IMAP layer: text cleaning, attachment text extraction and
image preparation (run in a sandboxed child process). Imports nothing from imap/, tools/
or the MCP layer."""
