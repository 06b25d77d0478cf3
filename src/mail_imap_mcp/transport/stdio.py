"""MCP over stdio: one client that started this process; ends when stdin closes or on a signal.

The signals are those the platform has (no SIGHUP on Windows), and only where the event loop can
handle signals at all (Windows' cannot): there the process ends when stdin closes, and Ctrl-C ends
it through KeyboardInterrupt (cli/__init__.py).
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import signal

import anyio

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.asking.page import approval_page
from mail_imap_mcp.config import Config
from mail_imap_mcp.credentials.sign_in_flow import SignInAttempts
from mail_imap_mcp.imap.token_check import new_sign_in_refusal
from mail_imap_mcp.net.browser import BrowserOpener
from mail_imap_mcp.server import build_server
from mail_imap_mcp.transport import close_app

#: The signals that stop the server, of those this platform has.
STOP_SIGNALS = tuple(
    number for name in ("SIGTERM", "SIGINT", "SIGHUP") if (number := getattr(signal, name, None)) is not None
)


async def serve_stdio(config: Config) -> None:
    app = AppContext.from_config(config)
    # The user sits at this machine: a call may start a sign-in and open their browser.
    opener = BrowserOpener.for_stdio()
    app.sign_ins = SignInAttempts(config.accounts, opener, check=new_sign_in_refusal)
    # ... and approve a send in their browser where the client cannot ask them (no MCP elicitation).
    app.approval_page = approval_page(
        lambda url: opener.open_for_user(url, f"approval-{secrets.token_hex(8)}")
    )
    app.pool.prepare()
    server = build_server(config, app)
    async with anyio.create_task_group() as group:

        async def stop_on_signal() -> None:
            with contextlib.ExitStack() as stack:
                try:
                    signals = stack.enter_context(anyio.open_signal_receiver(*STOP_SIGNALS))
                except NotImplementedError:  # an event loop without signal handlers (Windows')
                    return
                async for signum in signals:
                    logging.getLogger("mail_imap_mcp").info("signal %s received; shutting down", signum)
                    await close_app(app)
                    logging.shutdown()
                    # The stdin reader thread cannot be cancelled; exit without waiting for it.
                    os._exit(0)

        group.start_soon(stop_on_signal)
        await server.run_stdio_async()
        group.cancel_scope.cancel()
    await close_app(app)
