"""The session's view of its selected mailbox: what EXAMINE or SELECT said (:class:`MailboxState`) and
the updates the server sends with later answers, unasked.

A message count changes with ``* n EXISTS`` and with every removal: ``* n EXPUNGE``, or, on a connection
with QRESYNC enabled (RFC 7162 3.2.10), ``* VANISHED <uid set>`` in its place, one response for any
number of messages. Both are read here, alike: for the count and to tell a revalidation that the mailbox
changed under a pipelined command. ``* VANISHED (EARLIER) <uid set>`` is not an update of the view: it
answers a ``UID FETCH ... (CHANGEDSINCE m VANISHED)`` (the changes plan, :mod:`.changes`) and names
messages removed before, which the view never counted; it is left for that plan to take.

These functions read imaplib's untagged-response queue (``BudgetedIMAPClient.untagged``: response name
to the data of each response received and not yet taken).
"""

from __future__ import annotations

import logging
import re
from typing import Any

from mail_imap_mcp.imap import parsing
from mail_imap_mcp.imap.mailbox_state import MailboxState

__all__ = ["MailboxState", "Untagged", "apply_updates"]

log = logging.getLogger("mail_imap_mcp.imap")

Untagged = dict[str, list[Any]]

_EARLIER = re.compile(rb"^\(EARLIER\)\s*", re.IGNORECASE)
_UID_SET = re.compile(rb"^[0-9]+(:[0-9]+)?(,[0-9]+(:[0-9]+)?)*$")


def apply_updates(untagged: Untagged, state: MailboxState) -> MailboxState:
    """Take the EXISTS, EXPUNGE and VANISHED updates queued since the last look into ``state``: the
    newest EXISTS sets the count, else each removal lowers it (a VANISHED by the size of its set)."""
    removed = len(untagged.pop("EXPUNGE", [])) + sum(
        _count_uid_set(text) for text in _take_vanished(untagged)
    )
    exists = untagged.pop("EXISTS", [])
    if exists:
        state.exists = int(exists[-1])
    elif removed:
        state.exists = max(0, state.exists - removed)
    return state


def removals_queued(untagged: Untagged) -> bool:
    """Whether an EXPUNGE or a VANISHED (not EARLIER) is queued: messages left the view."""
    return "EXPUNGE" in untagged or any(not _is_earlier(item) for item in untagged.get("VANISHED", []))


def consumed_by_selection(untagged: Untagged) -> None:
    """Forget what a SELECT or EXAMINE answered: the removals queued for the view it replaced, and its
    EXISTS, now in its :class:`MailboxState` (left queued, it would outweigh a later EXPUNGE or VANISHED
    in :func:`apply_updates`)."""
    untagged.pop("EXPUNGE", None)
    untagged.pop("EXISTS", None)
    _take_vanished(untagged)


def take_vanished_earlier(untagged: Untagged) -> list[bytes]:
    """The UID sets of the ``VANISHED (EARLIER)`` responses queued (the answer of a FETCH with the
    VANISHED modifier), taken; the view's own VANISHED responses stay queued."""
    queued = untagged.pop("VANISHED", [])
    earlier = [_EARLIER.sub(b"", _text(item)) for item in queued if _is_earlier(item)]
    kept = [item for item in queued if not _is_earlier(item)]
    if kept:
        untagged["VANISHED"] = kept
    return earlier


def plain_vanished(untagged: Untagged) -> list[bytes]:
    """The UID sets of the view's VANISHED responses queued (not EARLIER), in arrival order, left queued:
    expunges announced to the view, which a ``UID FETCH ... (CHANGEDSINCE m VANISHED)`` does not name
    again (Dovecot announces an expunge made while the command waited so, and not in its EARLIER answer)."""
    return [_text(item).strip() for item in untagged.get("VANISHED", []) if not _is_earlier(item)]


def uids_below(uid_set: bytes, below: int) -> list[int]:
    """The UIDs of ``uid_set`` (``4:6,9``) under ``below``, ascending, without expanding the part at or
    above it (a server may name a range far larger than the mailbox). A malformed set names none."""
    if not _UID_SET.match(uid_set):
        log.warning("ignoring a malformed VANISHED set: %r", uid_set[:80])
        return []
    found: set[int] = set()
    for low, high in _ranges(uid_set):
        found.update(range(low, min(high, below - 1) + 1))
    return sorted(found)


def _take_vanished(untagged: Untagged) -> list[bytes]:
    """The UID sets of the view's VANISHED responses, taken; VANISHED (EARLIER) ones stay queued."""
    queued = untagged.pop("VANISHED", [])
    earlier = [item for item in queued if _is_earlier(item)]
    if earlier:
        untagged["VANISHED"] = earlier
    return [_text(item).strip() for item in queued if not _is_earlier(item)]


def _count_uid_set(uid_set: bytes) -> int:
    if not _UID_SET.match(uid_set):
        log.warning("ignoring a malformed VANISHED set: %r", uid_set[:80])
        return 0
    return sum(high - low + 1 for low, high in _ranges(uid_set))


def _ranges(uid_set: bytes) -> list[tuple[int, int]]:
    """``(low, high)`` of each part of a well-formed UID set (a range runs either way round)."""
    ranges = []
    for part in uid_set.split(b","):
        first, _, last = part.partition(b":")
        low, high = sorted((int(first), int(last or first)))
        ranges.append((low, high))
    return ranges


def _text(item: Any) -> bytes:
    return b" ".join(parsing.response_bytes(item)).strip()


def _is_earlier(item: Any) -> bool:
    return _EARLIER.match(_text(item)) is not None
