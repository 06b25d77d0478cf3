"""MCP over stdio: one client that started this process; ends when stdin closes or on a signal."""

from __future__ import annotations

import logging
import os
import signal

import anyio

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.config import Config
from mail_imap_mcp.server import build_server
from mail_imap_mcp.transport import close_app


async def serve_stdio(config: Config) -> None:
    app = AppContext.from_config(config)
    app.pool.prepare()
    server = build_server(config, app)
    async with anyio.create_task_group() as group:

        async def stop_on_signal() -> None:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
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
