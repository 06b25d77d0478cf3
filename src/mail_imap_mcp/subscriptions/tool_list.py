"""``notifications/tools/list_changed``, where what ``tools/list`` shows a caller changed since they listed.

What is listed depends on more than the configuration: rules are listed only where the account's server may
offer ManageSieve, which a look in the background finds after startup (and a verdict of a port that did not
answer lapses). Whoever tells of such a change (``mail/sieve_presence.py``'s ``on_change``) has the check
here run on the event loop: each caller's listing is made again and compared with the one they were shown,
and where it differs they are told, in the wire form of their protocol version, by the subscriptions'
delivery task (:meth:`MailboxSubscriptions.queue`: a slow client holds nothing up):

* handshake versions (up to 2025-11-25): on the session that listed the tools (the server declares
  ``tools.listChanged``: :func:`mail_imap_mcp.sdk.declare_tool_list_changes`);
* 2026-07-28: ``ToolsListChanged`` on the user's subscription bus, for their ``subscriptions/listen``
  streams that asked for ``tools_list_changed`` (a stateless request names no session: a user is told once
  their listing differs from what it was when their first stream here opened, or the last they were told
  of).

What is kept for a caller goes with what it was kept for: a session's listing with the session, a user's
with their last listen stream of this process (:meth:`MailboxSubscriptions.follow`; their bus goes then
too, so nothing could reach them), so a team server with many users coming and going keeps only those
connected.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.shared.subscriptions import ServerEvent, ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mail_imap_mcp.sdk import connection_of
from mail_imap_mcp.state import user_of

log = logging.getLogger("mail_imap_mcp.subscriptions")

Names = frozenset[str]
Send = Callable[[], Awaitable[None]]
#: Subscribe a listener to changes (called on any thread); returns the function that unsubscribes it.
OnChange = Callable[[Callable[[], None]], Callable[[], None]]


class ToolListChanges:
    """The tools each caller was shown, and the notifications when that changes.

    ``names`` gives the names of the tools a user sees listed now; ``tell`` publishes an event on a user's
    subscription bus (:meth:`MailboxSubscriptions.tell`); ``deliver`` hands a notification to the delivery
    task (:meth:`MailboxSubscriptions.queue`)."""

    def __init__(
        self,
        names: Callable[[str], Names],
        tell: Callable[[str, ServerEvent], Awaitable[None]],
        deliver: Callable[[Send], None],
    ) -> None:
        self._names = names
        self._tell = tell
        self._deliver = deliver
        #: Handshake-era sessions that listed tools: their user and the names they were last shown.
        self._sessions: dict[Connection, tuple[str, Names]] = {}
        #: Each user with a listen stream open here: their names, as when it opened or last told of.
        self._users: dict[str, Names] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    def listed(self, ctx: ServerRequestContext[Any, Any], names: Names) -> None:
        """The caller of ``ctx`` was answered ``names`` by ``tools/list``."""
        connection = connection_of(ctx)
        if connection.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return  # no session to tell: the user's listen streams are (:meth:`listening`)
        if connection not in self._sessions:
            connection.exit_stack.callback(self._sessions.pop, connection, None)
        self._sessions[connection] = (user_of(ctx), names)

    def listening(self, user: str) -> None:
        """(On the event loop.) ``user``'s first listen stream here opened: from now on they are told when
        what they would be listed changes."""
        if user not in self._users:
            self._users[user] = self._names(user)

    def forget(self, user: str) -> None:
        """(On the event loop.) ``user``'s last listen stream here ended: nothing is kept for them."""
        self._users.pop(user, None)

    @property
    def followed(self) -> int:
        """How many sessions and users are kept (each told when their listing changes)."""
        return len(self._sessions) + len(self._users)

    @asynccontextmanager
    async def running(self, on_change: OnChange) -> AsyncIterator[None]:
        """Check the listings whenever ``on_change`` says something they depend on changed, while inside
        (the delivery task running)."""
        self._loop = asyncio.get_running_loop()
        stop = on_change(self._changed)
        try:
            yield
        finally:
            stop()
            self._loop = None

    def _changed(self) -> None:
        """(Any thread, the event loop's too.) Have the check run on the event loop, without waiting."""
        loop = self._loop
        if loop is None:
            return
        try:
            loop.call_soon_threadsafe(self.check)
        except RuntimeError:  # the loop is closed: the server is stopping
            log.debug("a change to the tools listed came after the server stopped", exc_info=True)

    def check(self) -> None:
        """(On the event loop.) Tell every caller whose listing differs from what they were shown."""
        now: dict[str, Names] = {}

        def names(user: str) -> Names:
            if user not in now:
                now[user] = self._names(user)
            return now[user]

        told = 0
        for connection, (user, shown) in list(self._sessions.items()):
            if names(user) != shown:
                self._sessions[connection] = (user, names(user))
                self._deliver(connection.send_tool_list_changed)
                told += 1
        for user, shown in list(self._users.items()):
            if names(user) != shown:
                self._users[user] = names(user)
                self._deliver(functools.partial(self._tell, user, ToolsListChanged()))
                told += 1
        if told:
            log.info("the tools listed changed; telling %d session(s) or user(s)", told)
