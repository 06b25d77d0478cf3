"""What changed in one mailbox since a token: new messages, flag changes, expunges (imap_get_changes).

A token (:class:`ChangesToken`) is opaque and self-contained: the server keeps nothing. It names the
account, the mailbox, its UIDVALIDITY, UIDNEXT and (with CONDSTORE) HIGHESTMODSEQ, and, where the server
has no QRESYNC, carries a bounded digest of the newest :data:`DIGEST_MESSAGES` messages: their UIDs, and
on a server without CONDSTORE their flags. It is versioned and sealed with a keyed checksum against
accidents and casual edits; the key is in this source, so the seal is not a security boundary (a token
grants nothing: the account's own credentials do, and every number in it is checked before use).

Three plans, chosen by what the connection has. After the mailbox is selected (or its selection of an
earlier call revalidated), each asks everything it needs in one round trip of pipelined commands:

* QRESYNC (RFC 7162; Dovecot and Cyrus), enabled on the connection serving tool calls right after login
  (:class:`~.connection.AccountConnection`; ``ENABLE`` is valid only before a mailbox is selected, RFC
  5161), whose view then reads ``* VANISHED`` like ``* EXPUNGE`` (:mod:`.view`): ``STATUS
  (HIGHESTMODSEQ)``, ``UID FETCH 1:<uidnext-1> (UID FLAGS MODSEQ) (CHANGEDSINCE m VANISHED)`` and
  ``UID SEARCH UID <uidnext>:*``. The FETCH's ``* VANISHED (EARLIER) <set>`` names every message expunged since ``m``,
  whatever the mailbox's size, so the token needs no digest and the answer is never partial. Only UIDs
  below the token's UIDNEXT are reported: the set may also hold UIDs the caller never saw (messages
  added and removed since the token, above it) and, as RFC 7162 3.2.6 allows a server that does not keep
  every expunge's modseq, UIDs that were gone before the token or never existed (below it); those above
  were neither new nor gone for the caller, those below are gone in any case (a caller may see such a
  UID named again, never a message that is there). The new token's modseq is HIGHESTMODSEQ as STATUS says
  it before the FETCH runs: every change up to it is in the FETCH's answer, and an expunge raises it
  without a MODSEQ of its own to read there (the highest MODSEQ read would name the same expunges again).
* CONDSTORE without QRESYNC: ``UID FETCH 1:* (UID FLAGS MODSEQ) (CHANGEDSINCE m)`` (every flag change,
  exact) and ``UID SEARCH UID <tracked>,<uidnext>:*`` (which tracked messages remain, and the new ones).
  The new token's modseq is the highest MODSEQ of that answer: every change not in it has a higher one.
  The first token asks ``STATUS (HIGHESTMODSEQ)``. Both are CONDSTORE enabling commands, so nothing else
  is sent; what enabling changes for the session's other commands (a MODSEQ in FETCH answers) they
  already read.
* Without CONDSTORE (Courier, an IMAP4rev1-only server): ``UID FETCH <tracked> (UID FLAGS)``, ``FETCH
  n:* (UID FLAGS)`` (the newest messages by sequence number, for the new digest) and ``UID SEARCH UID
  <uidnext>:*``: flag changes and expunges by comparison with the digest, new mail from UIDNEXT.

New mail is found by UID in all three, and a token's UIDNEXT is one above the highest UID the call saw in
the session's view (not the server's UIDNEXT, which may count a message the view does not show yet), so a
message is new exactly once. Without QRESYNC, expunges outside the digest are counted (from the message
count) but not named, and without CONDSTORE flag changes are not seen: :class:`Changes` says how many
messages that leaves untracked, and the tool warns. A token made with QRESYNC and used where the server
no longer has it has an empty digest: its expunges are counted, with the warning. ``\\Recent`` is never
a change: it is left out of every flag set.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from mail_imap_mcp.imap import parsing, view
from mail_imap_mcp.imap.changes_token import (
    DIGEST_MESSAGES,
    PALETTE_CHARS,
    ChangesToken,
    ChangesTokenError,
    Flags,
)
from mail_imap_mcp.imap.errors import is_connection_broken, says_mailbox_missing
from mail_imap_mcp.imap.fetch_response import parse_fetch_response
from mail_imap_mcp.imap.uidplus import format_uid_set
from mail_imap_mcp.imap.view import MailboxState
from mail_imap_mcp.mail.errors import MailboxGone, UidValidityChanged

if TYPE_CHECKING:
    from mail_imap_mcp.imap.session import ImapSession

#: A token's length at most (what the model carries from call to call; issue 33 item 11): UIDs scattered
#: by expunges, or many distinct flag sets, leave fewer messages tracked rather than a longer token.
TOKEN_CHARS = 300


@dataclass
class Changes:
    """What changed since a token, and the token of now."""

    token: ChangesToken
    #: New messages (UID >= the old token's UIDNEXT), newest first.
    new: list[int] = field(default_factory=list)
    #: Messages whose flags changed, with their flags now (``\\Recent`` left out).
    changed: dict[int, Flags] = field(default_factory=dict)
    #: Tracked messages that are gone, ascending.
    expunged: list[int] = field(default_factory=list)
    #: Messages outside the digest that were expunged: counted, not named.
    deleted_untracked: int = 0
    #: Messages whose flag changes could not be seen (no CONDSTORE, outside the digest).
    flags_untracked: int = 0
    #: How many messages the token compared with tracked (at most :data:`DIGEST_MESSAGES`).
    tracked: int = 0


def start(session: ImapSession, account_id: str, mailbox: str, user: str) -> ChangesToken:
    """The token of ``mailbox`` as it is now: the starting point (fitted to ``user``'s seal)."""
    state = _examined(session, mailbox)
    condstore = _condstore(session, state)
    # With QRESYNC the newest message is read for UIDNEXT only: no digest. A NOMODSEQ mailbox has no
    # QRESYNC whatever the server says, and its token is the digest of the newest messages.
    qresync = session.qresync and condstore
    commands = [_newest(state, 1 if qresync else DIGEST_MESSAGES)] if state.exists else []
    if condstore:
        answers = _pipelined(session, account_id, mailbox, [_status_modseq(session, mailbox), *commands])
        modseq = _read_modseq(answers[0])
        if modseq:
            found = _flags_of(answers[1]) if commands else {}
            qresynced = {"with_flags": False, "digest": not qresync}
            return _token(session, account_id, state, 1, modseq, found, user, **qresynced)
    found = _flags_of(_pipelined(session, account_id, mailbox, commands)[0]) if commands else {}
    return _token(session, account_id, state, 1, 0, found, user, with_flags=True)


def changes_since(session: ImapSession, since: ChangesToken, user: str) -> Changes:
    """New messages, flag changes and expunges in ``since.mailbox`` since ``since``, and the token of now
    (fitted to ``user``'s seal).

    :class:`UidValidityChanged` when the mailbox was recreated since; :class:`ChangesTokenError` when the
    token was made with CONDSTORE and the mailbox no longer has it."""
    state = _examined(session, since.mailbox, since.uidvalidity)
    if since.flags is None:
        if not _condstore(session, state):
            raise ChangesTokenError(
                "since", "it was made while the mailbox had CONDSTORE, which it no longer has"
            )
        if session.qresync:
            return _since_by_vanished(session, state, since, user)
        return _since_by_modseq(session, state, since, user)
    return _since_by_digest(session, state, since, user)


def new_below(session: ImapSession, since: ChangesToken, anchor: int, until: int) -> list[int]:
    """The messages with ``since.uidnext <= UID < anchor`` (and below ``until``), newest first: the next
    page of ``new``."""
    state = _examined(session, since.mailbox, since.uidvalidity)
    high = min(anchor, until) - 1
    if high < since.uidnext or not state.exists:
        return []
    command: Command = ("SEARCH", ["UID", b"SEARCH", b"UID", f"{since.uidnext}:{high}".encode()])
    found = parsing.search_uids(_pipelined(session, since.account_id, since.mailbox, [command])[0])
    return sorted((uid for uid in set(found) if since.uidnext <= uid <= high), reverse=True)


# -- the plans ------------------------------------------------------------------------------------------


def _since_by_vanished(session: ImapSession, state: MailboxState, since: ChangesToken, user: str) -> Changes:
    mailbox = since.mailbox
    # HIGHESTMODSEQ before the FETCH: every change up to it is in the FETCH's answer, expunges included
    # (they raise HIGHESTMODSEQ but have no MODSEQ to read), so it is the new token's. Sent even to an
    # empty mailbox: VANISHED then names every message there was. Its UIDs end at the token's UIDNEXT,
    # not at "*": VANISHED (EARLIER) names the UIDs of the set asked (RFC 7162 3.2.6), and "*" is the
    # highest UID left, so Cyrus left out the newest messages when they were expunged.
    known = f"1:{since.uidnext - 1}".encode() if since.uidnext > 1 else b"1:*"
    commands: list[Command] = [
        _status_modseq(session, mailbox),
        (
            "FETCH",
            ["UID", b"FETCH", known, b"(UID FLAGS MODSEQ)", b"(CHANGEDSINCE %d VANISHED)" % since.modseq],
        ),
        ("SEARCH", ["UID", b"SEARCH", b"UID", f"{since.uidnext}:*".encode()]),
    ]
    view.take_vanished_earlier(session.client.untagged)  # none of an earlier command may count
    announced = len(view.plain_vanished(session.client.untagged))
    answers = _pipelined(session, since.account_id, mailbox, commands)
    # An expunge made after the view was last brought up to date comes as the view's own VANISHED while
    # these commands run, and the FETCH's VANISHED (EARLIER) leaves it out: both name what is gone.
    vanished = [
        *view.take_vanished_earlier(session.client.untagged),
        *view.plain_vanished(session.client.untagged)[announced:],
    ]
    fetched = _read_fetch(answers[1])
    new = dict.fromkeys((uid for uid in parsing.search_uids(answers[2]) if uid >= since.uidnext), ())
    # Only UIDs below the token's UIDNEXT: those above were never in the caller's view (new since and
    # gone again), so they are neither new nor expunged for the caller.
    gone = {uid for uid_set in vanished for uid in view.uids_below(uid_set, since.uidnext)}
    modseq = max([since.modseq, _read_modseq(answers[0]), *(modseq for _, modseq in fetched.values())])
    token = _token(
        session, since.account_id, state, since.uidnext, modseq, new, user, with_flags=False, digest=False
    )
    return Changes(
        token=token,
        new=sorted(new, reverse=True),
        changed={uid: flags for uid, (flags, _) in sorted(fetched.items()) if uid < since.uidnext},
        expunged=sorted(gone),
    )


def _since_by_modseq(session: ImapSession, state: MailboxState, since: ChangesToken, user: str) -> Changes:
    mailbox = since.mailbox
    answers: list[list[Any]] = [[], []]
    if state.exists:
        # New messages are found by UID (not by MODSEQ), so one the view did not have when the token was
        # made is new, whatever its MODSEQ.
        changed_since = b"(CHANGEDSINCE %d)" % since.modseq
        uid_set = _uid_set(since.uids, f"{since.uidnext}:*")
        commands: list[Command] = [
            ("FETCH", ["UID", b"FETCH", b"1:*", b"(UID FLAGS MODSEQ)", changed_since]),
            ("SEARCH", ["UID", b"SEARCH", b"UID", uid_set]),
        ]
        answers = _pipelined(session, since.account_id, mailbox, commands)
    fetched = _read_fetch(answers[0])
    found = set(parsing.search_uids(answers[1]))
    present = set(since.uids) & found
    new = dict.fromkeys((uid for uid in found if uid >= since.uidnext), ())
    changes = _compare(session, state, since, present, new)
    changes.changed = {uid: flags for uid, (flags, _) in sorted(fetched.items()) if uid < since.uidnext}
    # Every change not in this answer has a higher MODSEQ than every change in it.
    modseq = max([since.modseq, *(modseq for _, modseq in fetched.values())])
    known = dict.fromkeys(present, ()) | new
    floor = since.uidnext
    changes.token = _token(session, since.account_id, state, floor, modseq, known, user, with_flags=False)
    return changes


def _since_by_digest(session: ImapSession, state: MailboxState, since: ChangesToken, user: str) -> Changes:
    mailbox = since.mailbox
    answers: list[list[Any]] = [[], [], []]
    if state.exists:
        # The tracked messages' flags, the newest messages' flags (the new token tracks them) and every
        # message at or above the old UIDNEXT: the new ones.
        commands: list[Command | None] = [
            ("FETCH", ["UID", b"FETCH", _uid_set(since.uids, ""), b"(UID FLAGS)"]) if since.uids else None,
            _newest(state),
            ("SEARCH", ["UID", b"SEARCH", b"UID", f"{since.uidnext}:*".encode()]),
        ]
        sent = _pipelined(session, since.account_id, mailbox, [c for c in commands if c is not None])
        answers = [[], *sent] if not since.uids else sent
    tracked = dict(zip(since.uids, since.flags or (), strict=True))
    fetched = {uid: flags for uid, flags in _flags_of(answers[0]).items() if uid in tracked}
    newest = _flags_of(answers[1])
    new: dict[int, Flags | None] = {
        uid: newest.get(uid) for uid in parsing.search_uids(answers[2]) if uid >= since.uidnext
    }
    present = set(fetched)
    changes = _compare(session, state, since, present, new)
    changes.changed = {
        uid: flags for uid, flags in sorted(fetched.items()) if set(flags) != set(tracked[uid])
    }
    changes.flags_untracked = since.older
    # The newest messages refill the digest where tracked ones went (their flags are known now).
    known: dict[int, Flags | None] = {**newest, **fetched, **{uid: newest.get(uid) for uid in new}}
    changes.token = _token(session, since.account_id, state, since.uidnext, 0, known, user, with_flags=True)
    return changes


def _compare(
    session: ImapSession,
    state: MailboxState,
    since: ChangesToken,
    present: set[int],
    new: dict[int, Any],
) -> Changes:
    """New messages, the tracked ones expunged, and how many untracked ones went: the message count says
    how many, not which."""
    exists = session.refresh_counts(state).exists
    untracked_now = exists - len(present) - len(new)
    return Changes(
        token=since,  # replaced by the token of now
        new=sorted(new, reverse=True),
        expunged=sorted(set(since.uids) - present),
        deleted_untracked=max(0, since.older - untracked_now),
        tracked=len(since.uids),
    )


def _token(
    session: ImapSession,
    account_id: str,
    state: MailboxState,
    floor: int,
    modseq: int,
    known: dict[int, Any],
    user: str,
    *,
    with_flags: bool,
    digest: bool = True,
) -> ChangesToken:
    """The token of now. ``known`` holds messages this call saw in the session's view (UID -> flags, None
    where not read); its UIDNEXT is above every one of them (and at least ``floor``), so a message the
    view did not show yet is new next time. The newest messages whose flags are known (or not needed)
    make the digest, unless ``digest`` is false (QRESYNC names every expunge: no digest needed)."""
    exists = session.refresh_counts(state).exists
    tracked: list[int] = []
    palette: set[Flags] = set()
    for uid in sorted(known, reverse=True):
        if len(tracked) == (DIGEST_MESSAGES if digest else 0):
            break
        if with_flags:
            flags = known[uid]
            if flags is None or (flags not in palette and len(palette) == len(PALETTE_CHARS)):
                continue  # not read, or yet another distinct flag set: not tracked
            palette.add(flags)
        tracked.append(uid)
    tracked.sort()
    return fitted(
        user,
        ChangesToken(
            account_id=account_id,
            mailbox=state.name,
            uidvalidity=state.uidvalidity,
            uidnext=max([floor, *(uid + 1 for uid in known)]),
            modseq=modseq,
            older=max(0, exists - len(tracked)),
            uids=tuple(tracked),
            flags=tuple(known[uid] for uid in tracked) if with_flags else None,
        ),
    )


def fitted(user: str, token: ChangesToken) -> ChangesToken:
    """``token`` within :data:`TOKEN_CHARS` when sealed for ``user``: its digest keeps as many of its newest messages as fit (the
    others are counted in ``older``, as every message beyond the digest is). A token without a digest
    is as long as its account and mailbox names make it."""
    if not token.uids or len(token.encode(user)) <= TOKEN_CHARS:
        return token
    low, high = 0, len(token.uids) - 1  # the most newest messages kept that fit lies in [low, high]
    while low < high:
        middle = (low + high + 1) // 2
        if len(_newest_kept(token, middle).encode(user)) <= TOKEN_CHARS:
            low = middle
        else:
            high = middle - 1
    # Compression makes the length only nearly monotonic in the count: what was found is checked.
    while low and len(_newest_kept(token, low).encode(user)) > TOKEN_CHARS:
        low -= 1
    return _newest_kept(token, low)


def _newest_kept(token: ChangesToken, count: int) -> ChangesToken:
    dropped = len(token.uids) - count
    flags = token.flags[dropped:] if token.flags is not None else None
    return replace(token, uids=token.uids[dropped:], flags=flags, older=token.older + dropped)


# -- commands and answers -------------------------------------------------------------------------------

Command = tuple[str, list[str | bytes]]


def _examined(session: ImapSession, mailbox: str, uidvalidity: int | None = None) -> MailboxState:
    """``mailbox`` selected read-only, its view as fresh as the start of the call (a pending revalidation
    answered), and :class:`UidValidityChanged` when it is not ``uidvalidity``."""
    state = session.examine(mailbox)
    session.settle()
    state = session.refresh_counts(state)
    if uidvalidity is not None and state.uidvalidity != uidvalidity:
        raise UidValidityChanged(uidvalidity, state.uidvalidity)
    return state


def _condstore(session: ImapSession, state: MailboxState) -> bool:
    """CONDSTORE may be used on the mailbox of ``state``: the server has it and the mailbox keeps MODSEQs
    (a ``NOMODSEQ`` mailbox answers ``CHANGEDSINCE`` with BAD)."""
    return session.profile.condstore and state.modseqs


def _newest(state: MailboxState, count: int = DIGEST_MESSAGES) -> Command:
    """FETCH of the UIDs and flags of the newest ``count`` messages of the view, by sequence number:
    exactly those, however sparse the UIDs."""
    first = max(1, state.exists - count + 1)
    return ("FETCH", ["FETCH", f"{first}:*".encode(), b"(UID FLAGS)"])


def _status_modseq(session: ImapSession, mailbox: str) -> Command:
    return ("STATUS", ["STATUS", session.client.mailbox_argument(mailbox), b"(HIGHESTMODSEQ)"])


def _uid_set(uids: Sequence[int], more: str) -> bytes:
    return ",".join([*([format_uid_set(uids)] if uids else []), *([more] if more else [])]).encode()


def _pipelined(
    session: ImapSession, account_id: str, mailbox: str, commands: Sequence[Command]
) -> list[list[Any]]:
    """Send every command before reading any answer (one round trip for all); the untagged answers of
    each (its FETCH, SEARCH or STATUS responses). Every answer is read even when one fails, so the
    connection stays in step; a mailbox found missing is :class:`MailboxGone`."""
    client = session.client
    for name in ("FETCH", "SEARCH", "STATUS"):
        client.untagged.pop(name, None)
    tags = [client.send(*args) for _, args in commands]
    answers: list[list[Any]] = []
    failure: Exception | None = None
    for (name, _), tag in zip(commands, tags, strict=True):
        try:
            typ, data = client.complete(name, tag)
            client.check_ok(name.lower(), typ, data)
            answers.append(client.take_untagged(typ, data, name))
        except Exception as exc:
            if is_connection_broken(exc):
                raise
            failure = failure or exc
            answers.append([])
    if failure is not None:
        if says_mailbox_missing(failure):
            raise MailboxGone(account_id, mailbox) from failure
        raise failure
    return answers


_HIGHESTMODSEQ = re.compile(rb"\bHIGHESTMODSEQ (\d+)", re.IGNORECASE)


def _read_modseq(answer: list[Any]) -> int:
    """HIGHESTMODSEQ of a STATUS answer; 0 when the mailbox has none (RFC 7162 NOMODSEQ)."""
    text = b" ".join(part for item in answer for part in parsing.response_bytes(item))
    found = _HIGHESTMODSEQ.search(text)
    return int(found.group(1)) if found else 0


def _flags_of(answer: list[Any]) -> dict[int, Flags]:
    return {uid: flags for uid, (flags, _) in _read_fetch(answer).items()}


def _read_fetch(answer: list[Any]) -> dict[int, tuple[Flags, int]]:
    """The flags (``\\Recent`` left out) and MODSEQ (0 when not sent) of each message of a FETCH answer,
    by UID; responses without a UID (a flag change another session made, reported unsolicited) are left
    out."""
    found: dict[int, tuple[Flags, int]] = {}
    if not answer:
        return found
    for response in parse_fetch_response(answer, False, False).values():
        uid, flags, modseq = response.get(b"UID"), response.get(b"FLAGS"), response.get(b"MODSEQ")
        if isinstance(uid, int) and isinstance(flags, tuple):
            texts = (parsing.as_text(flag) for flag in flags)
            kept = tuple(sorted(t for t in texts if t and t.lower() != "\\recent"))
            found[uid] = (kept, int(modseq[0]) if isinstance(modseq, tuple) and modseq else 0)
    return found
