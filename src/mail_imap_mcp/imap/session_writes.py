"""The commands that change mail, for :class:`~mail_imap_mcp.imap.session.ImapSession` (which inherits
them): NAMESPACE, CREATE, RENAME, DELETE and APPEND for imap_manage_mailbox and imap_save_draft; UID COPY,
MOVE and EXPUNGE of exactly the given UIDs for imap_apply_to_messages; FETCH FLAGS and UID STORE for
imap_update_message_flags. Each is sent only where its extension is offered, inside the session's
``write_command`` (never retried); a server's refusal leaves as a typed error.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Callable, Collection, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from mail_imap_mcp.imap import parsing, wire
from mail_imap_mcp.imap.budget import StreamedLiteral
from mail_imap_mcp.imap.errors import Context, ServerRefused, classify, says_mailbox_missing
from mail_imap_mcp.imap.personality import Profile
from mail_imap_mcp.imap.personality.gmail import label_names_of
from mail_imap_mcp.imap.uidplus import CopyUid, MalformedUidSet, format_uid_set, parse_copyuids, parse_uid_set
from mail_imap_mcp.imap.wire import BudgetedIMAPClient
from mail_imap_mcp.mail.write_errors import DestinationMissing, ExtensionMissing, WriteRefused

T = TypeVar("T")

log = logging.getLogger("mail_imap_mcp.imap")


class WriteSession(Protocol):
    """What the write commands use of the session."""

    @property
    def client(self) -> BudgetedIMAPClient: ...
    @property
    def profile(self) -> Profile: ...
    @property
    def selected_mailbox(self) -> str | None: ...
    @property
    def account_id(self) -> str: ...
    def write_command(self, uids: Sequence[int] = ()) -> AbstractContextManager[None]: ...
    def fetch(self, uids: list[int], items: list[str]) -> dict[int, dict[bytes, Any]]: ...


class WriteCommands:
    """The commands that change mail (see the module)."""

    def personal_namespace(self: WriteSession) -> tuple[str, str | None]:
        """Prefix and separator of the personal namespace (RFC 2342): ``("INBOX.", ".")`` on Cyrus and
        Courier, ``("", "/")`` on Dovecot; ``("", None)`` where the server does not offer NAMESPACE."""
        if not self.profile.namespaces:
            return "", None
        personal = self.client.namespace().personal or ()
        if not personal:
            return "", None
        prefix, separator = (parsing.as_text(part) for part in personal[0])
        return prefix or "", separator

    def create_mailbox(self: WriteSession, mailbox: str) -> None:
        naming_command("CREATE", mailbox, self.client.create_folder, mailbox)

    def rename_mailbox(self: WriteSession, mailbox: str, new_name: str) -> None:
        """RENAME (leave the mailbox first if this connection has it selected: :meth:`deselect`)."""
        naming_command("RENAME", mailbox, self.client.rename_folder, mailbox, new_name)

    def delete_mailbox(self: WriteSession, mailbox: str) -> None:
        """DELETE (leave the mailbox first if this connection has it selected: :meth:`deselect`)."""
        naming_command("DELETE", mailbox, self.client.delete_folder, mailbox)

    def append(
        self: WriteSession, mailbox: str, message: bytes | bytearray | StreamedLiteral, flags: Sequence[str]
    ) -> tuple[int, int] | None:
        """APPEND ``message`` (a :class:`StreamedLiteral` a piece at a time) with ``flags``; ``(uidvalidity, uid)`` of the new message from APPENDUID
        where the server advertises UIDPLUS (RFC 4315), else None."""
        answer = naming_command("APPEND", mailbox, self.client.append, mailbox, message, flags)
        if not self.profile.uidplus:
            return None
        found = re.search(rb"\[APPENDUID (\d+) (\d+)\]", answer if isinstance(answer, bytes) else b"")
        return (int(found.group(1)), int(found.group(2))) if found else None

    # -- imap_apply_to_messages: UID COPY, UID MOVE, UID EXPUNGE of exactly the given UIDs ------------
    # The source is selected read-write (select) and the UIDs checked to exist in it; never retried.

    def uid_copy(self: WriteSession, uids: Sequence[int], destination: str) -> CopyUid | None:
        """``UID COPY`` to ``destination``; the COPYUID answer (UIDPLUS), ``None`` when there is none."""
        with self.write_command(uids):
            return _copy_or_move(self, "COPY", uids, destination)

    def uid_move(self: WriteSession, uids: Sequence[int], destination: str) -> CopyUid | None:
        """Move to ``destination``: ``UID MOVE`` (MOVE), else ``UID COPY``, ``\\Deleted`` and ``UID EXPUNGE``
        of exactly the copied UIDs (UIDPLUS), else refused: never a mailbox-wide EXPUNGE."""
        if not self.profile.moves_exactly:
            raise ExtensionMissing("MOVE or UIDPLUS", "move messages")
        with self.write_command(uids):
            if self.profile.moves:
                return _copy_or_move(self, "MOVE", uids, destination)
            copied = _copy_or_move(self, "COPY", uids, destination)
            try:
                _expunge_uids(self, [uid for uid in uids if copied is None or uid in copied.new_uids])
            except WriteRefused as refused:
                refused.copied_to = destination  # copied, and still in the selected mailbox as well
                raise
            return copied

    def uid_expunge(self: WriteSession, uids: Sequence[int], marked: Collection[int] = ()) -> None:
        """Remove exactly ``uids`` for good: ``UID STORE +FLAGS.SILENT (\\Deleted)`` (of those not
        ``marked`` so already), ``UID EXPUNGE`` (UIDPLUS). Other messages marked ``\\Deleted`` stay."""
        if not self.profile.uidplus:
            raise ExtensionMissing("UIDPLUS", "remove exactly these messages (UID EXPUNGE)")
        with self.write_command(uids):
            _expunge_uids(self, uids, marked)

    # -- imap_update_message_flags: FETCH FLAGS (and MODSEQ), UID STORE (CONDSTORE UNCHANGEDSINCE) ------
    # The mailbox is selected read-write (select); store_flags is never retried.

    def fetch_flags(self: WriteSession, uids: Sequence[int], *, modseq: bool = False) -> dict[int, FlagState]:
        """Flags of those of ``uids`` that exist (without the session flag ``\\Recent``); with ``modseq``
        (CONDSTORE, RFC 7162) each message's MODSEQ too."""
        if modseq and not self.profile.condstore:
            raise ValueError("MODSEQ needs CONDSTORE, which the server does not advertise")
        wanted = set(uids)
        answer = self.fetch(sorted(wanted), ["FLAGS", "MODSEQ"] if modseq else ["FLAGS"])
        found: dict[int, FlagState] = {}
        for uid, data in answer.items():
            if uid not in wanted or b"FLAGS" not in data:
                continue
            flags = tuple(
                text
                for text in (parsing.as_text(f) for f in data[b"FLAGS"])
                if text and text.lower() != "\\recent"
            )
            value = data.get(b"MODSEQ")
            found[uid] = FlagState(flags, int(value[0]) if isinstance(value, tuple) and value else None)
        return found

    def store_flags(
        self: WriteSession,
        uids: Sequence[int],
        mode: str,
        flags: Sequence[str],
        *,
        unchanged_since: int | None = None,
    ) -> set[int]:
        """``UID STORE`` of ``flags`` (``mode``: ``+`` add, ``-`` remove, ``""`` replace; ``.SILENT``), sent
        inside :meth:`write_command`. With ``unchanged_since`` (CONDSTORE) the server leaves alone every
        message changed since that MODSEQ and names it in ``[MODIFIED]``: those UIDs are returned."""
        if mode not in ("+", "-", "") or not uids or not all(wire.is_flag_atom(f) for f in flags):
            raise ValueError(f"not a flag STORE: {mode!r} {list(flags)!r}")
        if unchanged_since is not None and not self.profile.condstore:
            raise ValueError("UNCHANGEDSINCE needs CONDSTORE, which the server does not advertise")
        client = self.client
        args = [format_uid_set(uids).encode("ascii")]
        if unchanged_since is not None:
            args.append(b"(UNCHANGEDSINCE %d)" % unchanged_since)
        args += [f"{mode}FLAGS.SILENT".encode("ascii"), ("(" + " ".join(flags) + ")").encode("ascii")]
        untagged = client.untagged
        untagged.pop("MODIFIED", None)
        with self.write_command(uids):
            try:
                with wire.answers_typed():
                    typ, data = client.uid_command(b"STORE", args)
                    client.check_ok("store", typ, data)  # NO; imaplib raises BAD itself
            except ServerRefused as exc:
                raise WriteRefused(exc, "UID STORE", self.selected_mailbox or "") from None
        changed: set[int] = set()
        for part in untagged.pop("MODIFIED", []):
            try:
                changed.update(parse_uid_set(parsing.as_text(part) or ""))
            except MalformedUidSet:
                log.warning("account=%s malformed [MODIFIED]: every UID counts as changed", self.account_id)
                changed.update(uids)
        return changed & set(uids)

    def fetch_labels(self: WriteSession, uids: Sequence[int]) -> dict[int, LabelState]:
        """Flags, Gmail labels (X-GM-LABELS, decoded) and X-GM-MSGID of those of ``uids`` that exist."""
        if not self.profile.gmail_extensions:
            raise ExtensionMissing("X-GM-EXT-1", "read or change labels")
        wanted = set(uids)
        answer = self.fetch(sorted(wanted), ["FLAGS", "X-GM-LABELS", "X-GM-MSGID"])
        return {uid: _label_state(data) for uid, data in answer.items() if uid in wanted and b"FLAGS" in data}

    def store_labels(
        self: WriteSession, uids: Sequence[int], mode: str, labels: Sequence[str]
    ) -> dict[int, list[str]]:
        """``UID STORE [+-]X-GM-LABELS (labels)`` (``mode``: ``+`` add, ``-`` remove, ``""`` replace), sent
        inside :meth:`write_command`; the labels each message has now, as the server answered (a message
        it did not answer for is left out)."""
        if mode not in ("+", "-", "") or not uids:
            raise ValueError(f"not a label STORE: {mode!r}")
        if not self.profile.gmail_extensions:
            raise ExtensionMissing("X-GM-EXT-1", "change labels")
        client = self.client
        listed = b"(" + b" ".join(client.mailbox_argument(label) for label in labels) + b")"
        args = [format_uid_set(uids).encode("ascii"), f"{mode}X-GM-LABELS".encode("ascii"), listed]
        client.untagged.pop("FETCH", None)
        with self.write_command(uids):
            try:
                with wire.answers_typed():
                    typ, data = client.uid_command(b"STORE", args)
                    client.check_ok("store", typ, data)
            except ServerRefused as exc:
                raise WriteRefused(exc, "UID STORE", self.selected_mailbox or "") from None
        answered = client.parse_fetch(client.untagged.pop("FETCH", []))
        wanted = set(uids)
        return {
            uid: _label_state(data).labels
            for uid, data in answered.items()
            if uid in wanted and b"X-GM-LABELS" in data
        }


def _copy_or_move(
    session: WriteSession, command: str, uids: Sequence[int], destination: str
) -> CopyUid | None:
    client = session.client
    untagged = client.untagged
    untagged.pop("COPYUID", None)
    try:
        with wire.answers_typed():
            if command == "MOVE":
                client.move(format_uid_set(uids), destination)
            else:
                client.copy(format_uid_set(uids), destination)
    except ServerRefused as exc:
        if says_mailbox_missing(exc):
            raise DestinationMissing(destination) from None
        raise WriteRefused(exc, f"UID {command}", session.selected_mailbox or "") from None
    answers = untagged.pop("COPYUID", [])
    if not session.profile.uidplus:
        return None  # Dovecot sends COPYUID even when told not to advertise UIDPLUS: not relied on
    try:
        copied = parse_copyuids(answers)
    except MalformedUidSet:
        log.warning("account=%s ignoring a malformed COPYUID answer", session.account_id)
        return None
    if copied is None:
        return None
    wanted = set(uids)  # a server naming UIDs we did not send is ignored
    return CopyUid(copied.uidvalidity, {o: n for o, n in copied.new_uids.items() if o in wanted})


def _expunge_uids(session: WriteSession, uids: Sequence[int], marked: Collection[int] = ()) -> None:
    if not uids:  # never an EXPUNGE without a UID set: that one would be mailbox-wide
        return
    client, uid_set = session.client, format_uid_set(uids)
    unmarked = [uid for uid in uids if uid not in marked]
    try:
        with wire.answers_typed():
            if unmarked:
                client.add_flags(format_uid_set(unmarked), [b"\\Deleted"], silent=True)
            client.uid_expunge(uid_set)
    except ServerRefused as exc:
        with contextlib.suppress(ServerRefused), wire.answers_typed():  # leave nothing marked
            client.remove_flags(uid_set, [b"\\Deleted"], silent=True)
        raise WriteRefused(exc, "UID EXPUNGE", session.selected_mailbox or "") from None


@dataclass(frozen=True)
class FlagState:
    """A message's flags (``\\Recent`` left out) and, where CONDSTORE is on, its MODSEQ."""

    flags: tuple[str, ...]
    modseq: int | None = None


def naming_command(command: str, mailbox: str, send: Callable[..., T], *args: Any) -> T:
    """``send(*args)``: a command naming ``mailbox`` (CREATE, RENAME, DELETE, APPEND), its NO or BAD
    raised as the classified domain error (:class:`MailboxMissing`, :class:`CommandRefused`) for the
    tool to say which argument it concerns; a dead connection as it is (``write_command`` decides)."""
    try:
        with wire.answers_typed():
            return send(*args)
    except ServerRefused as exc:
        raise (classify(exc, Context(command, mailbox)) or exc) from None


@dataclass(frozen=True)
class LabelState:
    """A message's flags, Gmail labels (as X-GM-LABELS names them) and X-GM-MSGID."""

    flags: tuple[str, ...]
    labels: list[str]
    gmail_id: int | None


def _label_state(data: dict[bytes, Any]) -> LabelState:
    flags = tuple(
        t for t in (parsing.as_text(f) for f in data.get(b"FLAGS", ())) if t and t.lower() != "\\recent"
    )
    msgid = data.get(b"X-GM-MSGID")
    return LabelState(flags, label_names_of(data), msgid if isinstance(msgid, int) else None)
