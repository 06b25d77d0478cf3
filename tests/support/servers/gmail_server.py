"""A Gmail emulation: a real IMAP server on loopback that behaves as Google's "IMAP Extensions" page of
the Gmail developer documentation describes Gmail (tests cannot reach Gmail).

What it does as Gmail does (see tests/support/servers/gmail_store.py for the data): ``CAPABILITY`` with
``X-GM-EXT-1`` and no SORT or THREAD; ``ID`` answered as Gimap; LIST with the special-use folders
(``[Gmail]/All Mail`` ``\\All``, Drafts, Important, Sent Mail, Spam ``\\Junk``, Starred ``\\Flagged``,
Trash) under the ``\\Noselect`` ``[Gmail]``; labels as folders; the ``X-GM-MSGID``, ``X-GM-THRID`` and
``X-GM-LABELS`` FETCH items; ``STORE [+-]X-GM-LABELS``; ``SEARCH X-GM-RAW`` (the operators
:func:`~tests.support.servers.gmail_store.raw_matcher` names), ``X-GM-MSGID``, ``X-GM-THRID`` and
``X-GM-LABELS``; an EXPUNGE or MOVE out of a label folder removes only the label; COPY or MOVE to Trash
removes every label; LOGIN, ``AUTHENTICATE PLAIN`` and ``XOAUTH2`` (the password is the token);
at most 15 simultaneous connections per user, as Gmail allows. Besides: IMAP4rev1 with UIDPLUS, MOVE,
CONDSTORE, ESEARCH, LIST-EXTENDED + LIST-STATUS, SPECIAL-USE, IDLE, NAMESPACE, UNSELECT, ENABLE.

One command is the tests' own, never offered in CAPABILITY: ``XEMULATION FAIL-LABEL-STORE <n>`` makes
the account's next ``STORE [+-]X-GM-LABELS`` change its first ``n`` messages and then answer NO, as a
server whose store fails part way (the FETCH answers of the messages changed come before the NO).

Run it alone with ``scripts/gmail-emulator`` (one JSON line: host, port, user, password, CA file), or
from tests as :class:`Gmail` (tests/support/servers/gmail.py), an ``ImapServer`` like Dovecot.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import itertools
import re
import socket
import socketserver
import ssl
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from tests.support.servers import gmail_mime as mime
from tests.support.servers import gmail_store as store
from tests.support.servers.gmail_protocol import (
    Channel,
    Closed,
    ProtocolError,
    Token,
    astring,
    imap_date,
    internaldate_text,
    listed,
    parse_internaldate,
    sequence_set,
    text,
    tokenize,
    uid_set,
)

#: What Gmail offers before login (without its private and deprecated names: XYZZY, XLIST, QUOTA).
CAPABILITIES_BEFORE = (
    "IMAP4rev1 UNSELECT IDLE NAMESPACE ID CHILDREN X-GM-EXT-1 SASL-IR AUTH=XOAUTH2 AUTH=PLAIN"
)
#: What it offers once logged in (Gmail's list, less COMPRESS, UTF8=ACCEPT, XLIST and QUOTA).
CAPABILITIES = (
    "IMAP4rev1 UNSELECT IDLE NAMESPACE ID CHILDREN X-GM-EXT-1 UIDPLUS ENABLE MOVE CONDSTORE ESEARCH "
    "LIST-EXTENDED LIST-STATUS LITERAL- SPECIAL-USE APPENDLIMIT=35651584"
)
#: Gmail's largest message (APPENDLIMIT, RFC 7889).
APPEND_LIMIT = 35_651_584
#: Gmail's limit of simultaneous IMAP connections per account.
MAX_CONNECTIONS = 15
SYSTEM_FLAGS = ["\\Answered", "\\Flagged", "\\Draft", "\\Deleted", "\\Seen"]


class State:
    """The emulation's accounts (one per user name, made at first login) and its settings."""

    def __init__(self, password: str, capabilities: str, before: str, mark: str = "") -> None:
        self.password = password
        self.mark = mark
        self.capabilities = capabilities.split()
        self.before = before.split()
        self.accounts: dict[str, store.Account] = {}
        self.connections: dict[str, int] = {}
        self.lock = threading.Lock()
        self._uidvalidity = itertools.count(int(time.time()) % 1_000_000 * 10)

    def account(self, user: str) -> store.Account:
        with self.lock:
            if user not in self.accounts:
                self.accounts[user] = store.Account(self._uidvalidity)
            return self.accounts[user]


class Bad(Exception):
    """Answered BAD with this text."""


class No(Exception):
    """Answered NO with this text (a response code may lead it)."""


class Session:
    """One client connection."""

    def __init__(
        self, state: State, channel: Channel, *, tls: bool, tls_context: ssl.SSLContext | None
    ) -> None:
        self.state = state
        self.channel = channel
        self.tls = tls
        self.tls_context = tls_context
        self.user: str | None = None
        self.account: store.Account | None = None
        self.selected: str | None = None
        self.readonly = False
        self.known: list[int] = []
        self.reported: dict[int, int] = {}  # uid -> modseq whose flags the client has seen
        self.condstore = False
        self.out: list[bytes] = []
        self.tag = ""

    # ------------------------------------------------------------------ loop

    def run(self) -> None:
        greeting = f"* OK Gimap ready for requests from 127.0.0.1 emulation {self.state.mark}".rstrip()
        self.channel.send(greeting.encode() + b"\r\n")
        try:
            while True:
                parts = self.channel.command()
                try:
                    tokens = tokenize(parts)
                except ProtocolError as exc:
                    self.channel.send(b"* BAD " + str(exc).encode() + b"\r\n")
                    continue
                if len(tokens) < 2 or not isinstance(tokens[0], str) or not isinstance(tokens[1], str):
                    self.channel.send(b"* BAD Invalid tag or command\r\n")
                    continue
                if not self.dispatch(tokens[0], tokens[1].upper(), tokens[2:]):
                    return
        except (Closed, OSError, ProtocolError):
            return
        finally:
            if self.user is not None:
                with self.state.lock:
                    self.state.connections[self.user] -= 1

    def dispatch(self, tag: str, command: str, args: list[Token]) -> bool:
        """Run one command and answer it; False once the connection is to close."""
        handler: Callable[[list[Token]], str] | None = getattr(self, "do_" + command.replace(" ", "_"), None)
        if command == "UID" and args:
            command = "UID " + text(args[0]).upper()
            handler = getattr(self, "do_UID_" + text(args[0]).upper(), None)
            args = args[1:]
        if command == "LOGOUT":
            self.channel.send(b"* BYE LOGOUT Requested\r\n" + tag.encode() + b" OK 73 good day (Success)\r\n")
            return False
        if handler is None or (self.account is None and command not in _BEFORE_LOGIN):
            self.channel.send(tag.encode() + b" BAD Unknown command or not allowed now\r\n")
            return True
        if command.split()[-1] in _NEEDS_SELECTED and self.selected is None:
            self.channel.send(tag.encode() + b" BAD Command valid only in selected state\r\n")
            return True
        self.tag = tag
        # IDLE waits for changes with the lock released; every other command holds it throughout.
        lock = self.account.lock if self.account is not None and command != "IDLE" else threading.RLock()
        try:
            with lock:
                self.out = []
                done = handler(args)
                if self.selected is not None and command not in (
                    "FETCH",
                    "STORE",
                    "SEARCH",
                    "SELECT",
                    "EXAMINE",
                ):
                    with self.mail.lock:
                        self.sync()
                answer = b"".join(self.out) + tag.encode() + b" OK " + done.encode() + b"\r\n"
        except Bad as exc:
            answer = b"".join(self.out) + tag.encode() + b" BAD " + str(exc).encode() + b"\r\n"
        except No as exc:
            answer = b"".join(self.out) + tag.encode() + b" NO " + str(exc).encode() + b"\r\n"
        except (ProtocolError, ValueError, IndexError, KeyError) as exc:
            answer = tag.encode() + b" BAD Could not parse command (" + str(exc).encode()[:200] + b")\r\n"
        self.channel.send(answer)
        if command == "STARTTLS" and answer.split()[1] == b"OK":
            self.start_tls()
        return True

    def untagged(self, line: bytes | str) -> None:
        self.out.append(b"* " + (line.encode() if isinstance(line, str) else line) + b"\r\n")

    # ------------------------------------------------------------------ before login

    def do_CAPABILITY(self, args: list[Token]) -> str:
        names = self.state.capabilities if self.account is not None else list(self.state.before)
        if self.account is None and not self.tls:
            names.append("STARTTLS")
        self.untagged("CAPABILITY " + " ".join(names))
        return "Success"

    def do_NOOP(self, args: list[Token]) -> str:
        return "Success"

    do_CHECK = do_NOOP

    def do_ID(self, args: list[Token]) -> str:
        self.untagged(
            'ID ("name" "GImap" "vendor" "Google, Inc." "support-url" "https://support.google.com/mail")'
        )
        return "Success"

    def do_STARTTLS(self, args: list[Token]) -> str:
        if self.tls or self.tls_context is None:
            raise Bad("STARTTLS not available")
        return "Begin TLS negotiation now"

    def start_tls(self) -> None:
        assert self.tls_context is not None
        self.channel.sock = self.tls_context.wrap_socket(self.channel.sock, server_side=True)
        self.tls = True

    def do_LOGIN(self, args: list[Token]) -> str:
        return self.login(text(args[0]), text(args[1]))

    def login(self, user: str, secret: str) -> str:
        if secret != self.state.password:
            raise No("[AUTHENTICATIONFAILED] Invalid credentials (Failure)")
        with self.state.lock:
            if self.state.connections.get(user, 0) >= MAX_CONNECTIONS:
                raise No("[ALERT] Too many simultaneous connections. (Failure)")
            self.state.connections[user] = self.state.connections.get(user, 0) + 1
        self.user = user
        self.account = self.state.account(user)
        self.untagged("CAPABILITY " + " ".join(self.state.capabilities))
        return f"{user} authenticated (Success)"

    def do_AUTHENTICATE(self, args: list[Token]) -> str:
        mechanism = text(args[0]).upper()
        if mechanism not in ("PLAIN", "XOAUTH2"):
            raise No("[CANNOT] Unsupported mechanism")
        if len(args) > 1:
            response = text(args[1])
        else:
            self.channel.send(b"+ \r\n")
            response = self.channel.line().decode().strip()
        try:
            decoded = base64.b64decode(response, validate=True).decode()
        except ValueError:
            raise Bad("Invalid SASL argument") from None
        if mechanism == "PLAIN":
            _, user, secret = decoded.split("\x00")
            return self.login(user, secret)
        fields = dict(part.split("=", 1) for part in decoded.split("\x01") if "=" in part)
        token = fields.get("auth", "").removeprefix("Bearer ")
        if token != self.state.password:
            error = base64.b64encode(
                b'{"status":"400","schemes":"Bearer","scope":"https://mail.google.com/"}'
            )
            self.channel.send(b"+ " + error + b"\r\n")
            self.channel.line()
            raise No("[AUTHENTICATIONFAILED] Invalid credentials (Failure)")
        return self.login(fields.get("user", ""), token)

    # ------------------------------------------------------------------ folders

    @property
    def mail(self) -> store.Account:
        assert self.account is not None
        return self.account

    def do_NAMESPACE(self, args: list[Token]) -> str:
        self.untagged('NAMESPACE (("" "/")) NIL NIL')
        return "Success"

    def do_ENABLE(self, args: list[Token]) -> str:
        enabled = [
            text(a).upper()
            for a in args
            if text(a).upper() in ("CONDSTORE",) and "CONDSTORE" in self.state.capabilities
        ]
        if enabled:
            self.condstore = True
        self.untagged("ENABLED" + "".join(" " + name for name in enabled))
        return "Success"

    def folder(self, name: str) -> store.Folder:
        if name.upper() == "INBOX":
            name = "INBOX"
        found = self.mail.folders.get(name)
        if found is None:
            raise No("[NONEXISTENT] Unknown Mailbox: " + name + " (Failure)")
        return found

    def folder_name(self, token: Token) -> str:
        name = text(token)
        return "INBOX" if name.upper() == "INBOX" else name

    def do_SELECT(self, args: list[Token], readonly: bool = False) -> str:
        name = self.folder_name(args[0])
        folder = self.folder(name)
        if len(args) > 1 and isinstance(args[1], list) and "CONDSTORE" in [text(a).upper() for a in args[1]]:
            self.condstore = True
        self.selected, self.readonly = name, readonly
        self.known = list(folder.uids)
        self.reported = {uid: self.mail.messages[msgid].modseq for uid, msgid in folder.uids.items()}
        self.untagged("FLAGS (" + " ".join(SYSTEM_FLAGS) + " $NotPhishing $Phishing)")
        self.untagged(
            "OK [PERMANENTFLAGS (" + " ".join(SYSTEM_FLAGS) + " $NotPhishing $Phishing \\*)] Flags permitted."
        )
        self.untagged(f"OK [UIDVALIDITY {folder.uidvalidity}] UIDs valid.")
        self.untagged(f"{len(self.known)} EXISTS")
        self.untagged("0 RECENT")
        self.untagged(f"OK [UIDNEXT {folder.uidnext}] Predicted next UID.")
        if "CONDSTORE" in self.state.capabilities:
            self.untagged(f"OK [HIGHESTMODSEQ {self.mail.modseq}]")
        mode = "READ-ONLY" if readonly else "READ-WRITE"
        return f"[{mode}] {name} selected. (Success)"

    def do_EXAMINE(self, args: list[Token]) -> str:
        return self.do_SELECT(args, readonly=True)

    def do_UNSELECT(self, args: list[Token]) -> str:
        self.selected = None
        self.known = []
        return "Returned to authenticated state. (Success)"

    def do_CLOSE(self, args: list[Token]) -> str:
        if not self.readonly:
            self.expunge(None, report=False)
        return self.do_UNSELECT(args)

    def do_CREATE(self, args: list[Token]) -> str:
        name = self.folder_name(args[0]).rstrip("/")
        if name in self.mail.folders or name.startswith(store.PARENT):
            raise No("[ALREADYEXISTS] Folder name conflicts with existing folder name. (Failure)")
        self.mail.create(name)
        return "Success"

    def do_DELETE(self, args: list[Token]) -> str:
        name = self.folder_name(args[0])
        self.folder(name)
        if name in store.SYSTEM:
            raise No("[CANNOT] System folders cannot be deleted. (Failure)")
        self.mail.delete(name)
        return "Success"

    def do_RENAME(self, args: list[Token]) -> str:
        old, new = self.folder_name(args[0]), self.folder_name(args[1])
        self.folder(old)
        if old in store.SYSTEM or new in self.mail.folders:
            raise No("[CANNOT] Folder cannot be renamed so. (Failure)")
        self.mail.rename(old, new)
        return "Success"

    def do_SUBSCRIBE(self, args: list[Token]) -> str:
        return "Success"

    do_UNSUBSCRIBE = do_SUBSCRIBE

    def names(self) -> list[str]:
        """Every folder, and the ``[Gmail]`` parent of the system ones, in Gmail's order."""
        labels = sorted(n for n in self.mail.folders if n not in store.SYSTEM)
        parents = {n.rsplit("/", 1)[0] for n in labels if "/" in n} - set(labels)
        return [
            "INBOX",
            *sorted(set(labels) | parents),
            store.PARENT,
            *[n for n in store.SYSTEM if n != "INBOX"],
        ]

    def attributes(self, name: str) -> list[str]:
        if name == store.PARENT:
            return ["\\HasChildren", "\\Noselect"]
        children = any(other.startswith(name + "/") for other in self.mail.folders)
        out = ["\\HasChildren" if children else "\\HasNoChildren"]
        if name not in self.mail.folders:
            out.append("\\Noselect")
        use = store.SYSTEM.get(name, ("", ""))[0]
        return out + ([use] if use else [])

    def do_LIST(self, args: list[Token], command: str = "LIST") -> str:
        selection: list[str] = []
        if isinstance(args[0], list):
            selection = [text(a).upper() for a in args[0]]
            args = args[1:]
        reference, pattern = text(args[0]), args[1]
        patterns = [text(p) for p in pattern] if isinstance(pattern, list) else [text(pattern)]
        returns: list[Token] = []
        if len(args) > 3 and text(args[2]).upper() == "RETURN" and isinstance(args[3], list):
            returns = args[3]
        if patterns == [""]:
            self.untagged(f'{command} (\\Noselect) "/" ""')
            return "Success"
        status_items: list[str] = []
        for index, item in enumerate(returns):
            if isinstance(item, str) and item.upper() == "STATUS" and isinstance(returns[index + 1], list):
                status_items = [text(s).upper() for s in listed(returns[index + 1])]
        for name in self.names():
            if not any(_matches(reference + p, name) for p in patterns):
                continue
            attributes = self.attributes(name)
            if "SPECIAL-USE" in selection and not any(a in attributes for a, _ in store.SYSTEM.values() if a):
                continue
            self.untagged(f'{command} ({" ".join(attributes)}) "/" '.encode() + astring(name))
            if status_items and name in self.mail.folders:
                self.untagged(
                    b"STATUS " + astring(name) + b" (" + self.status_values(name, status_items) + b")"
                )
        return "Success"

    def do_LSUB(self, args: list[Token]) -> str:
        return self.do_LIST(args, "LSUB")

    def status_values(self, name: str, items: list[str]) -> bytes:
        folder = self.folder(name)
        messages = [self.mail.messages[msgid] for msgid in folder.uids.values()]
        values = {
            "MESSAGES": len(messages),
            "RECENT": 0,
            "UIDNEXT": folder.uidnext,
            "UIDVALIDITY": folder.uidvalidity,
            "UNSEEN": sum("\\Seen" not in m.flags for m in messages),
            "HIGHESTMODSEQ": self.mail.modseq,
        }
        return " ".join(f"{item} {values[item]}" for item in items if item in values).encode()

    def do_STATUS(self, args: list[Token]) -> str:
        name = self.folder_name(args[0])
        items = [text(a).upper() for a in listed(args[1])]
        self.untagged(b"STATUS " + astring(name) + b" (" + self.status_values(name, items) + b")")
        return "Success"

    def do_APPEND(self, args: list[Token]) -> str:
        name = self.folder_name(args[0])
        try:
            folder = self.folder(name)
        except No:
            raise No("[TRYCREATE] Folder doesn't exist. (Failure)") from None
        flags: set[str] = set()
        when: dt.datetime | None = None
        rest = args[1:]
        if rest and isinstance(rest[0], list):
            flags = {text(f) for f in rest[0]}
            rest = rest[1:]
        if len(rest) > 1:
            when = parse_internaldate(text(rest[0]))
            rest = rest[1:]
        raw = rest[0]
        if not isinstance(raw, bytes) or not raw:
            raise Bad("APPEND needs a message literal")
        if len(raw) > APPEND_LIMIT:
            raise No("[TOOBIG] Message too large. (Failure)")
        message = self.mail.append(name, raw, flags, when)
        return f"[APPENDUID {folder.uidvalidity} {folder.by_msgid[message.msgid]}] (Success)"

    def do_IDLE(self, args: list[Token]) -> str:
        self.channel.send(b"+ idling\r\n")
        while True:
            with self.mail.lock:
                self.out = []
                if self.selected is not None:
                    self.sync()
                if self.out:
                    self.channel.send(b"".join(self.out))
                    self.out = []
                self.mail.changed.wait(0.05)
            if self.channel.readable(0.05):
                line = self.channel.line().strip().upper()
                if line == b"DONE":
                    return "IDLE terminated (Success)"
                raise Bad("Expected DONE")

    # ------------------------------------------------------------------ the selected folder

    def sync(self) -> None:
        """Tell the client what changed in its folder: expunged messages, flags and labels, arrivals."""
        folder = self.mail.folders.get(self.selected or "")
        if folder is None:
            return
        for seq in range(len(self.known), 0, -1):
            if self.known[seq - 1] not in folder.uids:
                self.untagged(f"{seq} EXPUNGE")
                self.reported.pop(self.known.pop(seq - 1), None)
        for seq, uid in enumerate(self.known, 1):
            message = self.mail.messages[folder.uids[uid]]
            if message.modseq > self.reported.get(uid, 0):
                self.untagged(f"{seq} FETCH (UID {uid} FLAGS ({' '.join(self.flags_of(folder, uid))}))")
                self.reported[uid] = message.modseq
        top = self.known[-1] if self.known else 0
        new = [uid for uid in folder.uids if uid > top]
        if new:
            self.known.extend(new)
            for uid in new:
                self.reported[uid] = self.mail.messages[folder.uids[uid]].modseq
            self.untagged(f"{len(self.known)} EXISTS")

    def flags_of(self, folder: store.Folder, uid: int) -> list[str]:
        message = self.mail.messages[folder.uids[uid]]
        return sorted(message.flags | ({"\\Deleted"} if uid in folder.deleted else set()))

    def targets(self, value: str, *, by_uid: bool) -> list[tuple[int, int]]:
        """``(sequence number, uid)`` of the messages a set names, still in the folder."""
        folder = self.folder(self.selected or "")
        if by_uid:
            largest = self.known[-1] if self.known else 0
            wanted = sequence_set(value, largest)
            return [
                (seq, uid) for seq, uid in enumerate(self.known, 1) if uid in wanted and uid in folder.uids
            ]
        wanted = sequence_set(value, len(self.known))
        return [(seq, uid) for seq, uid in enumerate(self.known, 1) if seq in wanted and uid in folder.uids]

    def do_FETCH(self, args: list[Token], by_uid: bool = False) -> str:
        folder = self.folder(self.selected or "")
        items = args[1] if isinstance(args[1], list) else [args[1]]
        names = _expand([text(i) for i in items])
        changed_since = None
        if len(args) > 2 and isinstance(args[2], list):
            modifiers = [text(m).upper() for m in args[2]]
            if "CHANGEDSINCE" in modifiers:
                changed_since = int(modifiers[modifiers.index("CHANGEDSINCE") + 1])
                self.condstore = True
                names.append("MODSEQ")
        if by_uid and "UID" not in [n.upper() for n in names]:
            names.insert(0, "UID")
        for seq, uid in self.targets(text(args[0]), by_uid=by_uid):
            message = self.mail.messages[folder.uids[uid]]
            if changed_since is not None and message.modseq <= changed_since:
                continue
            self.untagged(b"%d FETCH (" % seq + self.fetch_items(folder, uid, message, names) + b")")
        return "Success"

    def do_UID_FETCH(self, args: list[Token]) -> str:
        return self.do_FETCH(args, by_uid=True)

    def fetch_items(self, folder: store.Folder, uid: int, message: store.Message, names: list[str]) -> bytes:
        out: list[bytes] = []
        seen_now = False
        for name in names:
            upper = name.upper()
            if upper == "UID":
                out.append(b"UID %d" % uid)
            elif upper == "FLAGS":
                continue  # last, after a BODY[] that sets \Seen
            elif upper == "INTERNALDATE":
                out.append(b'INTERNALDATE "' + internaldate_text(message.internaldate).encode() + b'"')
            elif upper == "RFC822.SIZE":
                out.append(b"RFC822.SIZE %d" % len(message.raw))
            elif upper == "ENVELOPE":
                out.append(b"ENVELOPE " + mime.envelope(message.entity))
            elif upper in ("BODYSTRUCTURE", "BODY"):
                out.append(
                    upper.encode() + b" " + mime.bodystructure(message.entity, extended=upper != "BODY")
                )
            elif upper == "X-GM-MSGID":
                out.append(b"X-GM-MSGID %d" % message.msgid)
            elif upper == "X-GM-THRID":
                out.append(b"X-GM-THRID %d" % message.thrid)
            elif upper == "X-GM-LABELS":
                out.append(b"X-GM-LABELS " + self.labels_list(message))
            elif upper == "MODSEQ":
                out.append(b"MODSEQ (%d)" % message.modseq)
            elif upper in ("RFC822", "RFC822.HEADER", "RFC822.TEXT"):
                spec = {"RFC822": "", "RFC822.HEADER": "HEADER", "RFC822.TEXT": "TEXT"}[upper]
                data = mime.section_bytes(message.entity, message.raw, spec) or b""
                out.append(upper.encode() + b" {%d}\r\n" % len(data) + data)
                seen_now |= upper != "RFC822.HEADER"
            elif upper.startswith(("BODY[", "BODY.PEEK[", "BINARY.PEEK[", "BINARY[")):
                out.append(self.section(message, name))
                seen_now |= not upper.startswith(("BODY.PEEK", "BINARY.PEEK"))
            else:
                raise Bad(f"Unknown FETCH item {name}")
        if seen_now and not self.readonly and "\\Seen" not in message.flags:
            message.flags.add("\\Seen")
            self.mail.touch(message)
        if "FLAGS" in (n.upper() for n in names) or seen_now:
            out.append(b"FLAGS (" + " ".join(self.flags_of(folder, uid)).encode() + b")")
            self.reported[uid] = message.modseq
        return b" ".join(out)

    def labels_list(self, message: store.Message) -> bytes:
        return b"(" + b" ".join(astring(label) for label in sorted(message.all_labels())) + b")"

    def section(self, message: store.Message, name: str) -> bytes:
        found = re.fullmatch(r"(BODY|BINARY)(?:\.PEEK)?\[(.*)\](?:<(\d+)(?:\.(\d+))?>)?", name, re.S | re.I)
        if not found:
            raise Bad(f"Bad section {name}")
        spec = found.group(2)
        data = mime.section_bytes(message.entity, message.raw, spec)
        if data is None:
            data = b""
        key = found.group(1).upper() + "[" + spec + "]"
        if found.group(3) is not None:
            start = int(found.group(3))
            length = int(found.group(4)) if found.group(4) is not None else len(data)
            data = data[start : start + length]
            key += f"<{start}>"
        return key.encode() + b" {%d}\r\n" % len(data) + data

    def do_STORE(self, args: list[Token], by_uid: bool = False) -> str:
        folder = self.folder(self.selected or "")
        if self.readonly:
            raise No("[READ-ONLY] Mailbox is read-only. (Failure)")
        rest = list(args[1:])
        if isinstance(rest[0], list) and text(rest[0][0]).upper() == "UNCHANGEDSINCE":
            rest = rest[1:]
        action = text(rest[0]).upper()
        values = listed(rest[1]) if isinstance(rest[1], list) else rest[1:]
        names = {text(v) for v in values}
        silent = action.endswith(".SILENT")
        action = action.removesuffix(".SILENT")
        kind = action.lstrip("+-")
        if kind not in ("FLAGS", "X-GM-LABELS"):
            raise Bad(f"Unknown STORE item {action}")
        for seq, uid in self.targets(text(args[0]), by_uid=by_uid):
            message = self.mail.messages[folder.uids[uid]]
            if kind == "FLAGS":
                self.store_flags(folder, uid, message, action[0] if action[0] in "+-" else "=", names)
            else:
                if self.mail.failing_label_store == 0:
                    self.mail.failing_label_store = None
                    raise No("[CANNOT] The labels of some messages could not be changed. (Failure)")
                if self.mail.failing_label_store is not None:
                    self.mail.failing_label_store -= 1
                labels = {self.label_name(n) for n in names}
                current = message.all_labels()
                new = (
                    current | labels if action[0] == "+" else current - labels if action[0] == "-" else labels
                )
                self.mail.set_labels(message, new)
            if silent or uid not in folder.uids:
                continue
            item = (
                b"FLAGS (" + " ".join(self.flags_of(folder, uid)).encode() + b")"
                if kind == "FLAGS"
                else b"X-GM-LABELS " + self.labels_list(message)
            )
            uid_part = b"UID %d " % uid if by_uid else b""
            modseq = b" MODSEQ (%d)" % message.modseq if self.condstore else b""
            self.untagged(b"%d FETCH (" % seq + uid_part + item + modseq + b")")
            if kind == "FLAGS":
                self.reported[uid] = message.modseq
        return "Success"

    def do_XEMULATION(self, args: list[Token]) -> str:
        """The tests' fault hook (module docstring): ``FAIL-LABEL-STORE <n>``."""
        if len(args) != 2 or text(args[0]).upper() != "FAIL-LABEL-STORE":
            raise Bad("XEMULATION FAIL-LABEL-STORE <n>")
        self.mail.failing_label_store = int(text(args[1]))
        return "Armed"

    def label_name(self, name: str) -> str:
        """A label as a client names it: ``\\Inbox`` and the other system labels in any case."""
        for label in (*store.SYSTEM_LABELS, "\\Starred"):
            if name.lower() == label.lower():
                return label
        return "INBOX" if name.upper() == "INBOX" else name

    def store_flags(
        self, folder: store.Folder, uid: int, message: store.Message, how: str, names: set[str]
    ) -> None:
        wanted = {_flag_case(n) for n in names}
        deleted = uid in folder.deleted
        current = message.flags | ({"\\Deleted"} if deleted else set())
        new = current | wanted if how == "+" else current - wanted if how == "-" else wanted
        if "\\Deleted" in new:
            folder.deleted.add(uid)
        else:
            folder.deleted.discard(uid)
        message.flags = new - {"\\Deleted", "\\Recent"}
        self.mail.touch(message)

    def do_UID_STORE(self, args: list[Token]) -> str:
        return self.do_STORE(args, by_uid=True)

    def expunge(self, only: set[int] | None, *, report: bool = True) -> None:
        folder = self.folder(self.selected or "")
        for uid in sorted(folder.deleted):
            if only is not None and uid not in only:
                continue
            if uid in folder.uids:
                self.mail.take_out(self.mail.messages[folder.uids[uid]], folder.name)

    def do_EXPUNGE(self, args: list[Token]) -> str:
        if self.readonly:
            raise No("[READ-ONLY] Mailbox is read-only. (Failure)")
        self.expunge(None)
        return "Success"

    def do_UID_EXPUNGE(self, args: list[Token]) -> str:
        if self.readonly:
            raise No("[READ-ONLY] Mailbox is read-only. (Failure)")
        self.expunge(sequence_set(text(args[0]), self.known[-1] if self.known else 0))
        return "Success"

    def do_COPY(self, args: list[Token], by_uid: bool = False, move: bool = False) -> str:
        folder = self.folder(self.selected or "")
        target_name = self.folder_name(args[1])
        try:
            target = self.folder(target_name)
        except No:
            raise No("[TRYCREATE] Folder doesn't exist. (Failure)") from None
        if move and self.readonly:
            raise No("[READ-ONLY] Mailbox is read-only. (Failure)")
        chosen = self.targets(text(args[0]), by_uid=by_uid)
        pairs: list[tuple[int, int]] = []
        for _, uid in chosen:
            message = self.mail.messages[folder.uids[uid]]
            self.mail.copy_into(message, target.name)
            if move and target.name != folder.name and uid in folder.uids:
                self._move_out(message, folder.name, target.name)
            if message.msgid in target.by_msgid:
                pairs.append((uid, target.by_msgid[message.msgid]))
        if not pairs:
            return "No messages (Success)"
        source, dest = uid_set([p[0] for p in pairs]), uid_set([p[1] for p in pairs])
        code = f"[COPYUID {target.uidvalidity} {source} {dest}]"
        if move:
            self.untagged(f"OK {code}")
            return "(Success)"
        return f"{code} (Success)"

    def _move_out(self, message: store.Message, source: str, target: str) -> None:
        """MOVE's second half: the source's label goes (nothing leaves All Mail but for Trash or Spam,
        which the copy has done)."""
        if target in (store.TRASH, store.SPAM) or source == store.ALL:
            return
        if source in (store.TRASH, store.SPAM):
            return  # the copy took it out of Trash or Spam already
        if source == store.STARRED:
            message.flags.discard("\\Flagged")
        elif (label := self.mail.label_of(source)) is not None:
            message.labels.discard(label)
        self.mail.touch(message)

    def do_UID_COPY(self, args: list[Token]) -> str:
        return self.do_COPY(args, by_uid=True)

    def do_MOVE(self, args: list[Token]) -> str:
        return self.do_COPY(args, move=True)

    def do_UID_MOVE(self, args: list[Token]) -> str:
        return self.do_COPY(args, by_uid=True, move=True)

    # ------------------------------------------------------------------ SEARCH

    def do_SEARCH(self, args: list[Token], by_uid: bool = False) -> str:
        folder = self.folder(self.selected or "")
        returns: list[str] | None = None
        if args and isinstance(args[0], str) and args[0].upper() == "RETURN":
            returns = [text(r).upper() for r in listed(args[1])]
            args = args[2:]
        if args and isinstance(args[0], str) and args[0].upper() == "CHARSET":
            args = args[2:]
        test = self.criteria(list(args), folder)
        found = [(seq, uid) for seq, uid in enumerate(self.known, 1) if uid in folder.uids and test(seq, uid)]
        numbers = [uid if by_uid else seq for seq, uid in found]
        if returns is None:
            self.untagged("SEARCH" + "".join(f" {n}" for n in numbers))
            return "SEARCH completed (Success)"
        returns = returns or ["ALL"]
        parts = []
        if "MIN" in returns and numbers:
            parts.append(f"MIN {min(numbers)}")
        if "MAX" in returns and numbers:
            parts.append(f"MAX {max(numbers)}")
        if "COUNT" in returns:
            parts.append(f"COUNT {len(numbers)}")
        if "ALL" in returns and numbers:
            parts.append(f"ALL {uid_set(numbers)}")
        self.untagged(
            f'ESEARCH (TAG "{self.tag}")' + (" UID" if by_uid else "") + "".join(" " + p for p in parts)
        )
        return "SEARCH completed (Success)"

    def do_UID_SEARCH(self, args: list[Token]) -> str:
        return self.do_SEARCH(args, by_uid=True)

    def criteria(self, tokens: list[Token], folder: store.Folder) -> Callable[[int, int], bool]:
        tests: list[Callable[[int, int], bool]] = []
        while tokens:
            tests.append(self.criterion(tokens, folder))
        return lambda seq, uid: all(t(seq, uid) for t in tests)

    def criterion(self, tokens: list[Token], folder: store.Folder) -> Callable[[int, int], bool]:
        token = tokens.pop(0)
        if isinstance(token, list):
            return self.criteria(list(token), folder)
        key = text(token).upper()

        def message(uid: int) -> store.Message:
            return self.mail.messages[folder.uids[uid]]

        def on(check: Callable[[store.Message], bool]) -> Callable[[int, int], bool]:
            return lambda seq, uid: check(message(uid))

        if key == "ALL":
            return lambda seq, uid: True
        if key == "NOT":
            inner = self.criterion(tokens, folder)
            return lambda seq, uid: not inner(seq, uid)
        if key == "OR":
            left, right = self.criterion(tokens, folder), self.criterion(tokens, folder)
            return lambda seq, uid: left(seq, uid) or right(seq, uid)
        if key == "UID":
            wanted = sequence_set(text(tokens.pop(0)), self.known[-1] if self.known else 0)
            return lambda seq, uid: uid in wanted
        if re.fullmatch(r"[\d*:,]+", key):
            numbers = sequence_set(key, len(self.known))
            return lambda seq, uid: seq in numbers
        flags = {"SEEN": "\\Seen", "ANSWERED": "\\Answered", "FLAGGED": "\\Flagged", "DRAFT": "\\Draft"}
        if key in flags or (key.startswith("UN") and key[2:] in flags):
            flag, want = flags[key.removeprefix("UN")], not key.startswith("UN")
            return on(lambda m: (flag in m.flags) == want)
        if key in ("DELETED", "UNDELETED"):
            want = key == "DELETED"
            return lambda seq, uid: (uid in folder.deleted) == want
        if key in ("NEW", "RECENT", "OLD"):
            return lambda seq, uid: key == "OLD"
        if key in ("KEYWORD", "UNKEYWORD"):
            word, want = text(tokens.pop(0)), key == "KEYWORD"
            return on(lambda m: any(f.lower() == word.lower() for f in m.flags) == want)
        if key in ("FROM", "TO", "CC", "BCC", "SUBJECT"):
            needle = text(tokens.pop(0)).lower()
            return on(lambda m: needle in m.header(key.lower()).lower())
        if key == "HEADER":
            name, needle = text(tokens.pop(0)), text(tokens.pop(0)).lower()
            return on(lambda m: m.entity.fields.get(name) is not None and needle in m.header(name).lower())
        if key in ("BODY", "TEXT"):
            needle = text(tokens.pop(0)).lower()
            if key == "BODY":
                return on(lambda m: needle in m.text)
            return on(
                lambda m: needle in m.text or needle in m.entity.header.decode("utf-8", "replace").lower()
            )
        if key in ("BEFORE", "ON", "SINCE", "SENTBEFORE", "SENTON", "SENTSINCE"):
            day = imap_date(text(tokens.pop(0)))

            def date_of(m: store.Message) -> dt.date | None:
                if key.startswith("SENT"):
                    sent = m.sent_date
                    return sent.date() if sent else None
                return m.internaldate.date()

            compare: dict[str, Callable[[dt.date], bool]] = {
                "BEFORE": lambda d: d < day,
                "ON": lambda d: d == day,
                "SINCE": lambda d: d >= day,
            }
            check = compare[key.removeprefix("SENT")]
            return on(lambda m: (d := date_of(m)) is not None and check(d))
        if key in ("LARGER", "SMALLER"):
            size = int(text(tokens.pop(0)))
            return on(lambda m: len(m.raw) > size if key == "LARGER" else len(m.raw) < size)
        if key == "MODSEQ":
            since = int(text(tokens.pop(0)))
            return on(lambda m: m.modseq >= since)
        if key == "X-GM-RAW":
            try:
                matcher = store.raw_matcher(text(tokens.pop(0)), self.mail, dt.datetime.now(dt.UTC))
            except ValueError as exc:
                raise Bad(f"Invalid Gmail search: {exc}") from None
            return on(matcher)
        if key in ("X-GM-MSGID", "X-GM-THRID"):
            wanted_id = int(text(tokens.pop(0)))
            attribute = "msgid" if key == "X-GM-MSGID" else "thrid"
            return on(lambda m: getattr(m, attribute) == wanted_id)
        if key == "X-GM-LABELS":
            label = self.label_name(text(tokens.pop(0)))
            return on(lambda m: label in m.all_labels())
        raise Bad(f"Unknown search key {key}")


_BEFORE_LOGIN = {"CAPABILITY", "NOOP", "LOGIN", "AUTHENTICATE", "STARTTLS", "ID", "LOGOUT"}
_NEEDS_SELECTED = {"FETCH", "STORE", "SEARCH", "COPY", "MOVE", "EXPUNGE", "CLOSE", "UNSELECT", "CHECK"}
_MACROS = {
    "ALL": ["FLAGS", "INTERNALDATE", "RFC822.SIZE", "ENVELOPE"],
    "FAST": ["FLAGS", "INTERNALDATE", "RFC822.SIZE"],
    "FULL": ["FLAGS", "INTERNALDATE", "RFC822.SIZE", "ENVELOPE", "BODY"],
}


def _expand(names: list[str]) -> list[str]:
    if len(names) == 1 and names[0].upper() in _MACROS:
        return list(_MACROS[names[0].upper()])
    return names


def _flag_case(name: str) -> str:
    for flag in SYSTEM_FLAGS:
        if name.lower() == flag.lower():
            return flag
    return name


def _matches(pattern: str, name: str) -> bool:
    regex = "".join(".*" if c == "*" else "[^/]*" if c == "%" else re.escape(c) for c in pattern)
    if pattern.upper().startswith("INBOX") and name == "INBOX":
        return re.fullmatch(regex, name, re.I) is not None
    return re.fullmatch(regex, name) is not None


class _Handler(socketserver.BaseRequestHandler):
    server: _Listener

    def handle(self) -> None:
        sock: socket.socket = self.request
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        listener = self.server
        if listener.implicit_tls:
            try:
                sock = listener.tls_context.wrap_socket(sock, server_side=True)
            except (ssl.SSLError, OSError):
                return
        session = Session(
            listener.state, Channel(sock), tls=listener.implicit_tls, tls_context=listener.tls_context
        )
        session.run()


class _Listener(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self, address: tuple[str, int], state: State, tls_context: ssl.SSLContext, implicit_tls: bool
    ) -> None:
        super().__init__(address, _Handler)
        self.state = state
        self.tls_context = tls_context
        self.implicit_tls = implicit_tls


def serve(
    host: str,
    plain_port: int,
    tls_port: int,
    cert: str,
    key: str,
    password: str,
    capabilities: str = CAPABILITIES,
    mark: str = "",
) -> list[_Listener]:
    """Start listening (plaintext with STARTTLS on ``plain_port``, implicit TLS on ``tls_port``; 0: any
    free port) in daemon threads; return the listeners (``server_address`` has the ports)."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    offered = capabilities.split()
    before = " ".join(n for n in CAPABILITIES_BEFORE.split() if n != "X-GM-EXT-1" or n in offered)
    state = State(password, capabilities, before, mark)
    listeners = [
        _Listener((host, plain_port), state, context, False),
        _Listener((host, tls_port), state, context, True),
    ]
    for listener in listeners:
        threading.Thread(target=listener.serve_forever, daemon=True).start()
    return listeners


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--plain-port", type=int, default=0)
    parser.add_argument("--tls-port", type=int, default=0)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--password-file", required=True)
    parser.add_argument("--capabilities", default=CAPABILITIES)
    parser.add_argument("--mark", default="", help="text in the greeting that tells this instance")
    options = parser.parse_args(argv)
    with open(options.password_file) as handle:
        password = handle.read().strip()
    listeners = serve(
        options.host,
        options.plain_port,
        options.tls_port,
        options.cert,
        options.key,
        password,
        options.capabilities,
        options.mark,
    )
    ports = [listener.server_address[1] for listener in listeners]
    print(f"listening {ports[0]} {ports[1]}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())


__all__: list[Any] = ["CAPABILITIES", "main", "serve"]
