"""The drafts family of the mail backend (``mail/drafts.py``) over one account's IMAP connection: each
call one ``AccountConnection.run`` (a write one ``run_write``, never replayed), with the commands it
always sent: APPEND with ``\\Draft \\Seen`` (Courier's step out of an EXAMINEd Drafts first), one
``UID SEARCH HEADER Message-ID`` where no APPENDUID or COPYUID said where a message landed, ``UID MOVE``
(or COPY and EXPUNGE of that UID) of a replaced draft checked afresh, FETCH of a draft's size and flags
and of its source a chunk at a time, and the search, read and ``STORE`` of the message a send answers
or forwards."""

from __future__ import annotations

from collections.abc import Sequence

from mail_imap_mcp import mime
from mail_imap_mcp.imap import parsing
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.imap.fetch import find_item
from mail_imap_mcp.imap.flags import not_permitted
from mail_imap_mcp.imap.read import copy_raw
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.mail.directory import same_mailbox
from mail_imap_mcp.mail.draft_errors import DraftNotReplaceable, NotReplaceable
from mail_imap_mcp.mail.drafts import DRAFT_FLAGS, Located, Marked, Moved, Stored, is_draft
from mail_imap_mcp.mail.errors import CommandRefused, MailboxMissing, MessageGone, still_names
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.mail.write_errors import AppendRefused, ExtensionMissing
from mail_imap_mcp.mime.message_file import MessageFile


def _message_id(header_id: str) -> list[bytes | str | int]:
    return [b"HEADER", b"MESSAGE-ID", header_id]


class ImapDrafts:
    """The drafts family on ``_connection``'s account (a part of :class:`~.backend.ImapMail`)."""

    _connection: AccountConnection

    def save_draft(self, mailbox: str, message: bytes | bytearray) -> tuple[int, int] | None:
        account_id = self._connection.account_id

        def append(session: ImapSession) -> tuple[int, int] | None:
            selected = session.selected_mailbox
            if selected is not None and same_mailbox(selected, mailbox):
                session.deselect()  # Courier refuses an APPEND to the mailbox the connection has EXAMINEd
            try:
                with session.write_command():
                    return session.append(mailbox, message, DRAFT_FLAGS)
            except (CommandRefused, MailboxMissing) as refused:  # named as the setting that chose it
                raise AppendRefused(refused, account_id, mailbox, "drafts_mailbox") from None

        return self._connection.run_write(append)

    def with_message_id(self, mailbox: str, header_id: str) -> Located:
        def search(session: ImapSession) -> Located:
            state = session.examine(mailbox)
            return Located(state.uidvalidity, session.uid_search(_message_id(header_id)))

        return self._connection.run(search)

    def stored(self, ref: MessageRef) -> Stored:
        def read(session: ImapSession) -> Stored:
            still_names(ref, session.examine(ref.mailbox).uidvalidity)
            found = session.fetch([ref.uid], ["RFC822.SIZE", "FLAGS"]).get(ref.uid)
            if not found:
                raise MessageGone(ref)
            named = (parsing.as_text(flag) for flag in found.get(b"FLAGS", ()))
            flags = frozenset(flag for flag in named if flag and flag.lower() != "\\recent")  # a session's
            return Stored(int(found.get(b"RFC822.SIZE") or 0), flags)

        return self._connection.run(read)

    def source_file(self, ref: MessageRef) -> MessageFile:
        def read(session: ImapSession) -> MessageFile:
            still_names(ref, session.examine(ref.mailbox).uidvalidity)
            kept = MessageFile()  # a new one on each try
            try:
                copy_raw(session, ref, kept, accept=lambda _: None, told=lambda _, __: None)
            except BaseException:
                kept.close()
                raise
            return kept

        return self._connection.run(read)

    def check_exact_move(self, what: str) -> None:
        if not self._connection.run(lambda session: session.profile.moves_exactly):
            raise ExtensionMissing("MOVE or UIDPLUS", what)

    def retire_draft(self, ref: MessageRef, trash: str) -> Moved | None:
        def move(session: ImapSession) -> Moved | None:
            session.select(ref.mailbox, uidvalidity=ref.uidvalidity)
            flags = session.fetch_flags([ref.uid]).get(ref.uid)
            if flags is None:
                return None  # already gone: removed by the user's client meanwhile
            if not is_draft(flags.flags):
                raise DraftNotReplaceable(NotReplaceable.LOST_DRAFT_FLAG)
            copied = session.uid_move([ref.uid], trash)
            if copied is None or ref.uid not in copied.new_uids:
                return Moved(None)
            return Moved((copied.uidvalidity, copied.new_uids[ref.uid]))

        return self._connection.run_write(move)

    def original_fields(
        self, mailboxes: Sequence[str], header_id: str, names: Sequence[str]
    ) -> dict[str, list[str]] | None:
        item = f"BODY.PEEK[HEADER.FIELDS ({' '.join(name.upper() for name in names)})]"

        def read(session: ImapSession) -> dict[str, list[str]] | None:
            for mailbox in mailboxes:
                session.examine(mailbox)
                uids = session.uid_search(_message_id(header_id))
                if uids:
                    response = session.fetch(uids[:1], [item]).get(uids[0]) or {}
                    return mime.parse_header_block(find_item(response, b"BODY[") or b"")
            return None

        return self._connection.run(read)

    def mark_original(self, mailboxes: Sequence[str], header_id: str, flag: str) -> Marked:
        def mark(session: ImapSession) -> Marked:
            for mailbox in mailboxes:
                session.examine(mailbox)
                if not session.uid_search(_message_id(header_id)):
                    continue
                state = session.select(mailbox)  # a write: searched again on the selected mailbox
                if not_permitted(state, [], [flag]):
                    return "not_kept"
                uids = session.uid_search(_message_id(header_id))
                if uids:
                    with session.write_command(uids):
                        session.store_flags(uids, "+", [flag])
                    return "marked"
            return "not_found"

        return self._connection.run_write(mark)
