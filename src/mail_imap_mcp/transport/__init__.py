"""How MCP reaches the server: stdio (one client, the default) and streamable HTTP (many clients)."""

from __future__ import annotations

import anyio

from mail_imap_mcp.app import AppContext

#: How long shutdown waits for the IMAP connections to log out.
LOGOUT_GRACE_S = 0.8


async def close_app(app: AppContext) -> None:
    """Log out every IMAP connection, bounded: a call in flight may hold an account's connection, and
    shutdown must not wait for it."""
    with anyio.move_on_after(LOGOUT_GRACE_S):
        await anyio.to_thread.run_sync(app.close, abandon_on_cancel=True)
