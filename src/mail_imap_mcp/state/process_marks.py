"""Marks a process holds while it waits (an approval page open for the user), each recording its owner: the
host, the process id and when that process started. A mark whose owner is gone (a server quit, crashed or
was killed while its page waited) is cleared by the next process of the same host that wants it, instead
of refusing everyone until the mark's time to live runs out.

Only a mark of this host is checked: a process id says nothing of another host's processes (a Redis shared
by several machines), so such a mark keeps its time to live. A short time to live renewed by a heartbeat
would free those too, but it frees a living owner's mark as well when its renewals stall (a suspended
laptop, a paused process), and then two pages would be open; an owner found gone never is. Where the
system cannot tell whether a process lives (no ``/proc`` and no signal 0: Windows), the mark is kept.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import sys
from pathlib import Path

from mail_imap_mcp.state.store import Store

#: The start of a process that cannot be read here: its id alone names it.
_UNKNOWN_START = ""


def _started(pid: int) -> str | None:
    """When process ``pid`` started, as the kernel counts it (``/proc/<pid>/stat``'s 22nd field, ticks
    since boot); :data:`_UNKNOWN_START` where there is no ``/proc``; None when there is no such process, or
    only what is left of one (a zombie)."""
    if not Path("/proc/self/stat").exists():
        return _UNKNOWN_START
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] in ("Z", "X") else fields[19]


def _owner() -> bytes:
    """The value of a mark this process takes: its host, id and start, and a part of its own (two marks
    of one process are never taken for each other)."""
    pid = os.getpid()
    owner = {"host": socket.gethostname(), "pid": pid, "started": _started(pid) or _UNKNOWN_START}
    return json.dumps({**owner, "hold": secrets.token_hex(8)}).encode()


def owner_gone(value: bytes) -> bool:
    """Whether the mark ``value`` is of a process of this host that has ended (or whose id a new process
    took since); False for another host's mark, a mark of another form, or where it cannot be told."""
    try:
        owner = json.loads(value)
        host, pid, started = owner["host"], int(owner["pid"]), owner["started"]
    except (ValueError, TypeError, KeyError):
        return False
    if host != socket.gethostname():
        return False
    now = _started(pid)
    if now == _UNKNOWN_START:
        return not _signal_zero_answers(pid)
    return now is None or (started != _UNKNOWN_START and now != started)


def _signal_zero_answers(pid: int) -> bool:
    """Whether ``pid`` exists, by signal 0 (POSIX without ``/proc``); True where that cannot be asked
    (Windows, whose ``os.kill`` would end the process)."""
    if sys.platform == "win32":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: it exists
        return True
    return True


def hold(store: Store, key: str, ttl_s: float) -> bytes | None:
    """Take the mark ``key`` for ``ttl_s`` seconds: its value (give it back with ``store.release(key,
    value)``), or None while a living owner (or one that cannot be checked) holds it. A mark of an owner
    gone is cleared first, only where it still holds that owner's value (never one taken meanwhile)."""
    mine = _owner()
    if store.add(key, mine, ttl_s):
        return mine
    held = store.get(key)
    if held is not None:
        if not owner_gone(held):
            return None
        store.release(key, held)
    return mine if store.add(key, mine, ttl_s) else None
