"""What a mailbox holds, read (or changed) out of band by an IMAP session of the test's own.

Tests compare these before and after a tool call: flags per UID, the Message-IDs of every mailbox
(``message_id_counts`` counts copies; ``message_id_listing`` also lists mailboxes that cannot be
selected), and ``change_inbox`` plays another client appending and expunging.
"""

from __future__ import annotations

import re
import socket
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from imapclient import IMAPClient

from tests.support.servers.imapserver import ImapServer

_MESSAGE_ID = re.compile(rb"<[^<>\s]+>")
_NOT_SELECTABLE = {b"\\noselect", b"\\nonexistent"}

#: Mailbox -> Message-ID -> how many copies.
MessageIdCounts = dict[str, Counter[str]]
#: Mailbox -> its sorted Message-IDs (None: the mailbox cannot be selected).
MessageIdListing = dict[str, list[str] | None]


def flag_snapshot(server: ImapServer, user: str) -> dict[str, dict[int, frozenset[str]]]:
    """Flags of every message in every mailbox (EXAMINE, so the snapshot itself changes nothing)."""
    snapshot: dict[str, dict[int, frozenset[str]]] = {}
    imap = server.connect(user)
    try:
        for flags, _delimiter, name in imap.list_folders():
            if {f.lower() for f in flags} & _NOT_SELECTABLE:
                continue
            info = imap.select_folder(name, readonly=True)
            if not info.get(b"EXISTS"):
                snapshot[name] = {}
                continue
            fetched = imap.fetch(imap.search("ALL"), ["FLAGS"])  # UID FETCH <every uid> (FLAGS)
            snapshot[name] = {
                uid: frozenset(f.decode() for f in data[b"FLAGS"] if f.lower() != b"\\recent")
                for uid, data in fetched.items()
            }
    finally:
        imap.logout()
    return snapshot


def flags_of(server: ImapServer, user: str, mailbox: str) -> dict[int, tuple[bytes, ...]]:
    """UID -> sorted flags (without ``\\Recent``) of every message in ``mailbox``."""
    client = server.connect(user)
    try:
        client.select_folder(mailbox, readonly=True)
        fetched = client.fetch(client.search("ALL"), ["FLAGS"])
        return {
            uid: tuple(sorted(f for f in data[b"FLAGS"] if f != b"\\Recent")) for uid, data in fetched.items()
        }
    finally:
        client.logout()


def _message_ids_per_mailbox(server: ImapServer, user: str) -> Iterator[tuple[str, list[str] | None]]:
    """Each mailbox of ``user`` with the Message-IDs of its messages ("" for none; None: not selectable)."""
    with server.connect(user, tls=False, starttls=False) as client:
        # imapclient writes some commands in two pieces: without this each waits for a delayed ACK (40 ms).
        client.socket().setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for flags, _, name in client.list_folders():
            if any(flag.lower() in _NOT_SELECTABLE for flag in flags):
                yield name, None
                continue
            client.select_folder(name, readonly=True)
            uids = client.search("ALL")
            fetched = client.fetch(uids, ["BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)]"]) if uids else {}
            ids = []
            for response in fetched.values():
                header = next(v for k, v in response.items() if k.startswith(b"BODY[HEADER"))
                match = _MESSAGE_ID.search(header)
                ids.append(match.group().decode() if match else "")
            yield name, ids


def copies_of(client: IMAPClient, message_id: str) -> int:
    """How many messages, in every selectable mailbox of ``client``'s session, carry the Message-ID
    ``message_id`` (the server's ``SEARCH HEADER``: one answer per mailbox, however much else it holds;
    one session for many questions, where each login costs the server a process)."""
    copies = 0
    for flags, _, name in client.list_folders():
        if not any(flag.lower() in _NOT_SELECTABLE for flag in flags):
            client.select_folder(name, readonly=True)
            copies += len(client.search(["HEADER", "Message-ID", message_id]))
            client.unselect_folder()  # none stays selected: another client may delete it meanwhile
    return copies


def message_id_counts(server: ImapServer, user: str) -> MessageIdCounts:
    """Every selectable mailbox of ``user`` with the Message-IDs in it, read by a session of its own."""
    return {name: Counter(ids) for name, ids in _message_ids_per_mailbox(server, user) if ids is not None}


def message_id_listing(server: ImapServer, user: str) -> MessageIdListing:
    """Every mailbox of ``user`` with the sorted Message-IDs in it (None: not selectable), read by an
    IMAP session of its own."""
    return {
        name: None if ids is None else sorted(ids) for name, ids in _message_ids_per_mailbox(server, user)
    }


def change_inbox(
    server: ImapServer,
    user: str,
    *,
    add: Sequence[bytes] = (),
    remove: Callable[[Any], list[int]] = lambda _: [],
) -> None:
    """Out of band, as another client: append ``add`` to INBOX and expunge the UIDs ``remove`` picks."""
    writer = server.connect(user)
    try:
        for message in add:
            writer.append("INBOX", message)
        writer.select_folder("INBOX")
        doomed = remove(writer)
        if doomed:
            writer.delete_messages(doomed)
            writer.expunge()
    finally:
        writer.logout()


def raw_messages(server: ImapServer, user: str, mailbox: str) -> dict[str, bytes]:
    """Message-ID -> the whole message as the server stores it (``BODY.PEEK[]``: nothing is marked read)."""
    with server.connect(user) as client:
        client.select_folder(mailbox, readonly=True)
        uids = client.search("ALL")
        fetched = client.fetch(uids, ["BODY.PEEK[]"]) if uids else {}
    found = {}
    for response in fetched.values():
        raw = response[b"BODY[]"]
        match = _MESSAGE_ID.search(raw.split(b"\r\n\r\n", 1)[0].split(b"Message-ID:", 1)[-1])
        found[match.group().decode() if match else ""] = raw
    return found


def move_last(server: ImapServer, user: str, source: str, target: str) -> None:
    """As another client: move the message of ``source`` with the highest UID to ``target`` (MOVE, else
    COPY and EXPUNGE, which keep its INTERNALDATE)."""
    with server.connect(user) as other:
        other.select_folder(source)
        uid = max(other.search(["ALL"]))
        if other.has_capability("MOVE"):
            other.move([uid], target)
        else:
            other.copy([uid], target)
            other.delete_messages([uid])
            other.expunge()
