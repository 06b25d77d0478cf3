"""The tools: each module (or package, ``<tool>/`` with its spec and dispatch in ``__init__.py`` and a
module per flow) declares one :class:`~mail_imap_mcp.tools.spec.ToolSpec` (``TOOL``) and
validates input, calls the IMAP layer and builds an envelope; failures become envelope errors in
:mod:`mail_imap_mcp.presentation.failures`, which runs every handler. The list of them is
:mod:`mail_imap_mcp.tools.registry`: this package imports nothing, so that a part of it (the failure
registry, for ``mail-imap-mcp check``) loads without every tool and the MCP SDK."""
