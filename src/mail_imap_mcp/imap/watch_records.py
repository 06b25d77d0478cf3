"""What a :class:`~mail_imap_mcp.imap.watch.WatchHub` and its watchers (:mod:`mail_imap_mcp.imap.watcher`)
share: a watch, the hub's settings and what a watcher reads of its hub. Apart from the watcher, so that a
server's start makes its hub without the connection stack a watcher runs on (imported by its first watch).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from mail_imap_mcp.state.clock import Pause

#: Called (in the watching thread) when the watched mailbox changed or may have changed.
Listener = Callable[[], None]


@dataclass(frozen=True)
class WatchSettings:
    max_connections: int = 3
    poll_interval_s: float = 10.0
    idle_restart_s: float = 1500.0


@dataclass(eq=False)
class Watch:
    """One listener's watch of one mailbox; pass it to :meth:`WatchHub.cancel`."""

    account_id: str
    mailbox: str
    listener: Listener
    #: Set once the watching connection has seen the mailbox (EXAMINE, STATUS or NOTIFY SET answered):
    #: every change after that is reported. A change before it is part of what the watch starts from.
    ready: threading.Event = field(default_factory=threading.Event)


class WatchingHub(Protocol):
    """What a watcher shares with its hub: the lock its mailboxes change under, the settings and time."""

    lock: threading.Lock
    settings: WatchSettings
    clock: Callable[[], float]
    pause: Pause
