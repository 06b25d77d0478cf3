"""Mailbox resources, ``imap://{account_id}/mailbox/{mailbox}``, and their subscriptions.

Reading one returns the mailbox's counts (:mod:`.mailbox_resource`: STATUS, nothing selected or marked). Subscribing to one
starts watching it on a connection of its own (:mod:`mail_imap_mcp.imap.watch`) and sends
``notifications/resources/updated`` for its URI whenever any client changes it (a delivery, an
expunge, a flag). The SDK decides the wire form by the protocol version the client chose:

* handshake versions (up to 2025-11-25): ``resources/subscribe`` and ``resources/unsubscribe``; the
  notifications go to the session's stream (stdio, or the HTTP session's GET stream), and the watches
  end with the session;
* 2026-07-28: ``subscriptions/listen`` with ``resource_subscriptions``; the notifications come on
  that request's stream, and the watches end with it.

Watching threads hand each change to the event loop; one delivery task (run by the server's lifespan)
sends it, so a slow client never holds a watching connection.

Every subscription is its user's (the caller's view of the application, from the request's access
token): it watches that user's mailbox, and its notifications go only to that user's streams (each
user listens on a bus of their own: the same URI of a ``per_user`` account names another mailbox for
each user).
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, SubscriptionBus
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourceUpdated, ServerEvent
from mcp_types import (
    INVALID_PARAMS,
    EmptyResult,
    SubscribeRequestParams,
    SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
    UnsubscribeRequestParams,
)

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.app.changes import CHANGES_CHANNEL
from mail_imap_mcp.imap.watch import Watch, WatchHub
from mail_imap_mcp.sdk import connection_of, lowlevel_server
from mail_imap_mcp.state import ANONYMOUS, user_of, user_tag
from mail_imap_mcp.subscriptions.mailbox_resource import resolve_uri, serve_mailboxes

log = logging.getLogger("mail_imap_mcp.subscriptions")

#: Notifications waiting for the delivery task; past this many (a stalled client), new ones are dropped.
_QUEUE = 1024
#: How long one notification may take to be written before it is given up (a client that stopped reading).
SEND_TIMEOUT_S = 5.0
#: How often a subscription looks whether its mailbox is watched yet, before it is answered.
_READY_POLL_S = 0.02
#: Most resource URIs one session (or one subscriptions/listen request) may subscribe to (docs/security.md, L3).
MAX_SUBSCRIPTIONS = 100

Send = Callable[[], Awaitable[None]]
Context = ServerRequestContext[Any, Any]


def _check_cap(count: int) -> None:
    """An MCP error when a session (or a listen request) would hold more than MAX_SUBSCRIPTIONS URIs."""
    if count > MAX_SUBSCRIPTIONS:
        raise MCPError(
            INVALID_PARAMS,
            f"At most {MAX_SUBSCRIPTIONS} mailbox resources can be subscribed to at once (per session, or "
            "per subscriptions/listen request); unsubscribe from some first.",
            data={"limit": MAX_SUBSCRIPTIONS},
        )


class MailboxSubscriptions:
    """The mailbox resource template and every subscription to it, for one server."""

    def __init__(
        self, app: AppContext, bus: SubscriptionBus, bus_for: Callable[[str], SubscriptionBus] | None = None
    ) -> None:
        self._app = app
        #: Each user's bus and listen handler (``bus`` is the one-person server's), kept while the user has
        #: a listen stream open (``_listening`` counts them): a team user's goes with their last stream.
        self._bus_for = bus_for or (lambda user: InMemorySubscriptionBus())
        self._buses: dict[str, tuple[SubscriptionBus, ListenHandler]] = {ANONYMOUS: (bus, ListenHandler(bus))}
        self._listening: dict[str, int] = {}
        #: Told when a user's first listen stream here opens and when their last one ends (:meth:`follow`).
        self._followers: list[tuple[Callable[[str], None], Callable[[str], None]]] = []
        #: The hub each watch was started on (its user's), to end it there.
        self._hubs: dict[Watch, WatchHub] = {}
        #: Handshake-era subscriptions: one watch per session and mailbox (account, the server's name),
        #: notifying the URI first subscribed; every URI a session subscribed names its mailbox.
        self._sessions: dict[tuple[Connection, str, str], Watch] = {}
        self._uris: dict[tuple[Connection, str], tuple[str, str]] = {}
        self._watched_sessions: set[Connection] = set()
        #: Listen-era subscriptions: one watch per mailbox, shared by the streams that listen to it, and
        #: the URIs it notifies with how many streams listen to each.
        self._shared: dict[tuple[str, str, str], tuple[Watch, dict[str, int]]] = {}
        self._outbox, self._inbox = anyio.create_memory_object_stream[Send](_QUEUE)
        self._token: anyio.lowlevel.EventLoopToken | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- wiring --------------------------------------------------------------------------------------

    def register(self, server: MCPServer[Any]) -> None:
        """Add the mailbox resource template and the subscription handlers to ``server``."""
        serve_mailboxes(server, self._app)
        # MCPServer has no decorator for these; the lowlevel server's registry is where they go.
        lowlevel = lowlevel_server(server)
        lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, self.subscribe)
        lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, self.unsubscribe)
        lowlevel.add_request_handler("subscriptions/listen", SubscriptionsListenRequestParams, self.listen)

    def follow(self, opened: Callable[[str], None], ended: Callable[[str], None]) -> None:
        """(On the event loop.) Call ``opened(user)`` when a user's first listen stream here opens, and
        ``ended(user)`` when their last one ends: what is kept for a user's streams goes with them."""
        self._followers.append((opened, ended))

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Deliver notifications while inside; at the end, stop every watch. With a shared store, the
        writes of every instance are heard too (:meth:`_changed_elsewhere`)."""
        self._token = anyio.lowlevel.current_token()
        self._loop = asyncio.get_running_loop()  # the server runs on asyncio (uvicorn, anyio.run's default)
        heard = (
            self._app.store.subscribe(CHANGES_CHANNEL, self._changed_elsewhere)
            if self._app.store.shared
            else None
        )
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self._deliver)
                try:
                    yield
                finally:
                    group.cancel_scope.cancel()
        finally:
            if heard is not None:
                heard.close()
            with anyio.CancelScope(shield=True):
                await self.close()

    def _changed_elsewhere(self, message: bytes) -> None:
        """A write on some instance changed mail of an account (a store thread calls this): handed to
        the event loop (:meth:`_heard_change`) without waiting for it, since the subscriptions it looks
        at change there (regression: read from this thread, they changed under it)."""
        try:
            event = json.loads(message)
            account_id, tag = str(event["account"]), str(event["user"])
        except (ValueError, KeyError, TypeError):
            return
        if self._loop is None:
            return
        try:
            self._loop.call_soon_threadsafe(self._heard_change, account_id, tag)
        except RuntimeError:  # the loop is closed: the server is stopping
            log.debug("a change announced after the server stopped", exc_info=True)

    def _heard_change(self, account_id: str, tag: str) -> None:
        """(On the event loop.) Tell the listen streams of this process that listen to ``account_id``'s
        mailboxes, the writer's own for a ``per_user`` account (``tag``: the writer, :func:`user_tag`) and
        every allowed user's for a shared one (``-``). A hint, as any update: the client reads again."""
        for key in [key for key in self._shared if key[1] == account_id and tag in ("-", user_tag(key[0]))]:
            self.queue(functools.partial(self._publish, key))

    async def close(self) -> None:
        """End every subscription's watch."""
        watches = list(self._sessions.values()) + [watch for watch, _ in self._shared.values()]
        self._sessions.clear()
        self._uris.clear()
        self._shared.clear()
        await self._cancel(watches)

    # -- handshake era: resources/subscribe ------------------------------------------------------------

    def _bus(self, user: str) -> tuple[SubscriptionBus, ListenHandler]:
        if user not in self._buses:
            bus = self._bus_for(user)
            self._buses[user] = (bus, ListenHandler(bus))
        return self._buses[user]

    def _watch(self, app: AppContext, account_id: str, mailbox: str, send: Send) -> Watch:
        hub = app.watches
        watch = hub.watch(account_id, mailbox, functools.partial(self._post, send))
        self._hubs[watch] = hub
        return watch

    async def subscribe(self, ctx: Context, params: SubscribeRequestParams) -> EmptyResult:
        app = self._app.for_caller(user_of(ctx))
        uri = str(params.uri)
        connection = connection_of(ctx)
        if (connection, uri) in self._uris:
            return EmptyResult()
        _check_cap(sum(1 for known, _ in self._uris if known is connection) + 1)
        account_id, mailbox = await resolve_uri(app, uri)
        self._uris[connection, uri] = (account_id, mailbox)
        if connection not in self._watched_sessions:
            self._watched_sessions.add(connection)
            connection.exit_stack.push_async_callback(self._end_session, connection)
        if (connection, account_id, mailbox) in self._sessions:
            return EmptyResult()  # another spelling of a watched mailbox: its one watch tells of changes
        watch = self._watch(
            app, account_id, mailbox, functools.partial(connection.send_resource_updated, uri)
        )
        self._sessions[connection, account_id, mailbox] = watch
        log.info("account=%s watching a mailbox for a session", account_id)
        await self._until_watched(app, [watch])
        return EmptyResult()

    async def unsubscribe(self, ctx: Context, params: UnsubscribeRequestParams) -> EmptyResult:
        connection = connection_of(ctx)
        mailbox = self._uris.pop((connection, str(params.uri)), None)
        if mailbox is None or mailbox in (
            named for (known, _), named in self._uris.items() if known is connection
        ):
            return EmptyResult()
        watch = self._sessions.pop((connection, *mailbox), None)
        await self._cancel([watch] if watch is not None else [])
        return EmptyResult()

    async def _end_session(self, connection: Connection) -> None:
        self._watched_sessions.discard(connection)
        for key in [key for key in self._uris if key[0] is connection]:
            del self._uris[key]
        ended = [key for key in self._sessions if key[0] is connection]
        await self._cancel([self._sessions.pop(key) for key in ended])

    # -- 2026-07-28: subscriptions/listen --------------------------------------------------------------

    async def listen(
        self, ctx: Context, params: SubscriptionsListenRequestParams
    ) -> SubscriptionsListenResult:
        user = user_of(ctx)
        uris = list(dict.fromkeys(params.notifications.resource_subscriptions or ()))
        _check_cap(len(uris))
        self._listening[user] = self._listening.get(user, 0) + 1
        try:
            if self._listening[user] == 1:
                for opened, _ in self._followers:
                    opened(user)
            return await self._listen(ctx, params, user, uris)
        finally:
            self._listening[user] -= 1
            if not self._listening[user]:
                del self._listening[user]
                if user != ANONYMOUS:
                    self._buses.pop(user, None)
                for _, ended in self._followers:
                    ended(user)

    async def _listen(
        self, ctx: Context, params: SubscriptionsListenRequestParams, user: str, uris: list[str]
    ) -> SubscriptionsListenResult:
        app = self._app.for_caller(user)
        resolved = [(uri, *await resolve_uri(app, uri)) for uri in uris]
        keys = []
        for uri, account_id, mailbox in resolved:
            key = (user, account_id, mailbox)
            if key not in self._shared:
                watch = self._watch(app, account_id, mailbox, functools.partial(self._publish, key))
                self._shared[key] = (watch, {})
            listened = self._shared[key][1]
            listened[uri] = listened.get(uri, 0) + 1
            keys.append((key, uri))
        try:
            await self._until_watched(
                app, list({self._shared[key][0] for key, _ in keys if key in self._shared})
            )
            return await self._bus(user)[1](ctx, params)
        finally:
            ended = []
            for key, uri in keys:
                if key not in self._shared:
                    continue  # closed meanwhile
                watch, listened = self._shared[key]
                listened[uri] -= 1
                if not listened[uri]:
                    del listened[uri]
                if not listened:
                    del self._shared[key]
                    ended.append(watch)
            with anyio.CancelScope(shield=True):
                await self._cancel(ended)

    async def tell(self, user: str, event: ServerEvent) -> None:
        """Publish ``event`` to ``user``'s listen streams, where they have any open (the one-person
        server's bus always)."""
        held = self._buses.get(user)
        if held is not None:
            await held[0].publish(event)

    async def _publish(self, key: tuple[str, str, str]) -> None:
        """Tell the user's streams listening to the mailbox ``key`` of a change: once per URI they
        listen to."""
        _, listened = self._shared.get(key, (None, {}))
        held = self._buses.get(key[0])
        if held is None:  # the user's last stream ended meanwhile
            return
        for uri in list(listened):
            await held[0].publish(ResourceUpdated(uri))

    # -- delivery ----------------------------------------------------------------------------------------

    def _post(self, send: Send) -> None:
        """Called by a watching thread: queue ``send`` for the delivery task, never waiting on a client."""
        if self._token is None:
            return
        try:
            anyio.from_thread.run_sync(self.queue, send, token=self._token)
        except Exception:  # the event loop is gone: the server is stopping
            log.debug("a mailbox change came after the server stopped", exc_info=True)

    def queue(self, send: Send) -> None:
        """(On the event loop.) Have the delivery task run ``send``, within SEND_TIMEOUT_S."""
        try:
            self._outbox.send_nowait(send)
        except anyio.WouldBlock:
            log.warning("%d mailbox notifications waiting; dropping one", _QUEUE)
        except anyio.ClosedResourceError:
            pass

    async def _deliver(self) -> None:
        async for send in self._inbox:
            with anyio.move_on_after(SEND_TIMEOUT_S):
                try:
                    await send()
                except Exception:  # the session ended meanwhile: its watches end with it
                    log.debug("a mailbox notification could not be sent", exc_info=True)

    async def _until_watched(self, app: AppContext, watches: list[Watch]) -> None:
        """Answer a subscription only once its mailboxes are watched, so that every change made after the
        answer is reported (regression: a message appended right after a subscription on Courier went into
        what the watch started from, and no notification came). Bounded by the account's connect and
        command timeouts; a watch still not ready then goes on trying, and the answer is sent anyway.
        Looked at every 20 ms rather than waited for in a thread: the tool calls share the thread pool."""
        accounts = app.config.accounts
        started = anyio.current_time()
        for watch in watches:
            account = accounts[watch.account_id]
            deadline = started + account.connect_timeout_s + account.command_timeout_s
            while not watch.ready.is_set() and anyio.current_time() < deadline:
                await anyio.sleep(_READY_POLL_S)
            if not watch.ready.is_set():
                log.warning(
                    "account=%s a subscribed mailbox is not watched after %g s; answering anyway",
                    watch.account_id,
                    anyio.current_time() - started,
                )

    async def _cancel(self, watches: list[Watch]) -> None:
        def cancel_all() -> None:
            for watch in watches:
                hub = self._hubs.pop(watch, None)
                if hub is not None:
                    hub.cancel(watch)

        if watches:
            await anyio.to_thread.run_sync(cancel_all)
