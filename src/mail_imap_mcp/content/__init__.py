"""Pure content work beside the IMAP layer: HTML sanitising and rendering as text or Markdown (html.py), text
cleaning, the new text of a reply (quotes.py), attachment text extraction and image preparation (run in a
sandboxed child process). Imports nothing from imap/, tools/ or the MCP layer."""
