"""The drafts family of the mail backend (``mail/drafts.py``) under contract: the same cases on the
in-memory backend (tests/support/mail/memory_drafts.py), in the pure tier (``tests/pure/test_drafts_contract.py``),
and on real servers through ``imap/drafts.py`` (``tests/integration/backends/test_drafts_contract.py``).
Where servers differ: Courier refuses an APPEND to the mailbox the connection has EXAMINEd (the backend
steps out first), Cyrus and Courier name their folders below ``INBOX.``, and a server without UIDPLUS and
MOVE (a Dovecot told not to offer them, and its memory twin) says nowhere where a draft landed and moves
no message alone. Every case that writes counts each mailbox's messages before and after, by Message-ID.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from mail_imap_mcp import mime, query
from mail_imap_mcp.mail.backend import MailBackend
from mail_imap_mcp.mail.draft_errors import DraftNotReplaceable, NotReplaceable
from mail_imap_mcp.mail.drafts import DRAFT_FLAGS, Located
from mail_imap_mcp.mail.errors import MessageGone, UidValidityChanged
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.mail.roles import DRAFTS, INBOX, TRASH
from mail_imap_mcp.mail.write_errors import AppendRefused, ExtensionMissing
from tests.support.mail.mail_state import MessageIdListing
from tests.support.mail.memory_mail import MemoryMail
from tests.support.shared.mail_contract import Cases
from tests.support.shared.write_drafts import added

EXACT = ("memory", "dovecot", "cyrus", "courier")
WITHOUT_UIDPLUS = ("memory-without-uidplus", "dovecot_without_uidplus")


@dataclass
class Drafts:
    """A backend under contract, its Drafts and Trash folders, and every mailbox's Message-IDs now."""

    backend: MailBackend
    drafts: str
    trash: str
    listing: Callable[[], MessageIdListing]
    #: Whether it says where a draft landed and moves a message alone (IMAP: UIDPLUS).
    exact: bool

    def ref(self, mailbox: str, uid: int) -> MessageRef:
        return MessageRef("default", mailbox, self.backend.status(mailbox).uidvalidity, uid)

    def saved(self, subject: str) -> tuple[MessageRef, bytes]:
        """A draft saved in Drafts, found by its Message-ID."""
        raw = draft(subject)
        self.backend.save_draft(self.drafts, raw)
        (uid,) = self.backend.with_message_id(self.drafts, header_id(subject)).uids
        return self.ref(self.drafts, uid), raw


def draft(subject: str) -> bytes:
    head = f"From: <me@example.org>\r\nTo: <ann@example.org>\r\nSubject: {subject}\r\n"
    return f"{head}Message-ID: {header_id(subject)}\r\n\r\nDraft text.\r\n".encode()


def header_id(subject: str) -> str:
    return f"<{subject.replace(' ', '.')}@drafts.example.org>"


def _memory_listing(memory: MemoryMail) -> MessageIdListing:
    listing: MessageIdListing = {}
    for box in memory.mailboxes():
        heads = (memory.header(box.name, uid) or b"" for uid in memory.search(box.name, query.AllOf()))
        listing[box.name] = sorted(mime.parse_header_block(head)["message-id"][0] for head in heads)
    return listing


def memory_drafts(name: str) -> Drafts:
    """The in-memory backend as the drafts contract runs it: ``memory``, or ``memory-without-uidplus``."""
    memory = MemoryMail({"Drafts": DRAFTS, "Trash": TRASH}, exact_expunge=name == "memory")
    return Drafts(memory, "Drafts", "Trash", lambda: _memory_listing(memory), name == "memory")


#: The drafts contract's cases.
CASES: Cases[Drafts] = Cases(EXACT)
case = CASES.case


@case(*EXACT, *WITHOUT_UIDPLUS)
def a_draft_is_saved_once_flagged_and_found_by_its_message_id(mail: Drafts) -> None:
    before = mail.listing()
    landed = mail.backend.save_draft(mail.drafts, draft("Saved once"))
    assert added(before, mail.listing()) == {mail.drafts: [header_id("Saved once")]}
    located = mail.backend.with_message_id(mail.drafts, header_id("Saved once"))
    (uid,) = located.uids
    assert located.uidvalidity == mail.backend.status(mail.drafts).uidvalidity
    assert landed == ((located.uidvalidity, uid) if mail.exact else None)
    assert mail.backend.flags(mail.drafts, [uid])[uid].flags == set(DRAFT_FLAGS)
    assert mail.backend.raw(mail.drafts, uid) == draft("Saved once")
    assert mail.backend.with_message_id(mail.drafts, header_id("Never saved")) == Located(
        located.uidvalidity, []
    )


@case(*EXACT)
def a_draft_is_saved_in_the_drafts_folder_the_connection_is_reading(mail: Drafts) -> None:
    mail.backend.save_draft(mail.drafts, draft("First"))
    mail.backend.with_message_id(mail.drafts, header_id("First"))  # Drafts EXAMINEd: Courier refuses APPEND
    before = mail.listing()
    assert mail.backend.save_draft(mail.drafts, draft("Second")) is not None
    assert added(before, mail.listing()) == {mail.drafts: [header_id("Second")]}


@case(*EXACT, "dovecot_without_uidplus")
def a_draft_for_a_missing_folder_is_refused_naming_the_setting(mail: Drafts) -> None:
    before = mail.listing()
    missing = mail.drafts + "Nowhere"
    with pytest.raises(AppendRefused) as refused:
        mail.backend.save_draft(missing, draft("Lost"))
    assert (refused.value.parameter, refused.value.mailbox, refused.value.account_id) == (
        "drafts_mailbox",
        missing,
        "default",
    )
    assert mail.listing() == before


@case(*EXACT)
def a_replaced_draft_alone_moves_to_trash_and_is_said_where(mail: Drafts) -> None:
    old, raw = mail.saved("Old draft")
    mail.saved("Other draft")
    mail.backend.check_exact_move("move exactly the replaced draft to Trash")
    before = mail.listing()
    moved = mail.backend.retire_draft(old, mail.trash)
    expected = {**before, mail.drafts: [header_id("Other draft")], mail.trash: [header_id("Old draft")]}
    assert mail.listing() == expected
    trash_uidvalidity = mail.backend.status(mail.trash).uidvalidity
    assert moved is not None and moved.landed is not None and moved.landed[0] == trash_uidvalidity
    assert mail.backend.raw(mail.trash, moved.landed[1]) == raw  # as it was, byte for byte


@case(*EXACT)
def a_draft_that_lost_its_flag_or_is_gone_or_elsewhere_now_stays(mail: Drafts) -> None:
    flagless, _ = mail.saved("Flag lost")
    gone, _ = mail.saved("Gone")
    mail.backend.store(mail.drafts, [flagless.uid], "remove", ["\\Draft"])
    mail.backend.expunge(mail.drafts, [gone.uid])
    before = mail.listing()
    with pytest.raises(DraftNotReplaceable) as refused:
        mail.backend.retire_draft(flagless, mail.trash)
    assert refused.value.reason is NotReplaceable.LOST_DRAFT_FLAG
    assert mail.backend.retire_draft(gone, mail.trash) is None
    with pytest.raises(UidValidityChanged):
        mail.backend.retire_draft(
            MessageRef("default", mail.drafts, flagless.uidvalidity + 1, flagless.uid), mail.trash
        )
    assert mail.listing() == before


@case(*WITHOUT_UIDPLUS)
def without_uidplus_and_move_no_draft_is_moved(mail: Drafts) -> None:
    kept, _ = mail.saved("Kept")
    before = mail.listing()
    with pytest.raises(ExtensionMissing) as missing:
        mail.backend.check_exact_move("move exactly the replaced draft to Trash")
    assert (missing.value.capability, missing.value.what) == (
        "MOVE or UIDPLUS",
        "move exactly the replaced draft to Trash",
    )
    with pytest.raises(ExtensionMissing):
        mail.backend.retire_draft(kept, mail.trash)
    assert mail.listing() == before


@case(*EXACT, *WITHOUT_UIDPLUS)
def a_draft_is_read_for_sending_its_size_flags_and_bytes(mail: Drafts) -> None:
    ref, raw = mail.saved("To send")
    stored = mail.backend.stored(ref)
    assert (stored.size, stored.flags) == (len(raw), frozenset(DRAFT_FLAGS))
    kept = mail.backend.source_file(ref)
    try:
        assert (kept.size, kept.read_at(0, kept.size)) == (len(raw), raw)
    finally:
        kept.close()
    stale = MessageRef("default", mail.drafts, ref.uidvalidity + 1, ref.uid)
    gone = MessageRef("default", mail.drafts, ref.uidvalidity, ref.uid + 1)
    for read in (mail.backend.stored, mail.backend.source_file):
        with pytest.raises(UidValidityChanged):
            read(stale)
        with pytest.raises(MessageGone) as missing:
            read(gone)
        assert missing.value.ref == gone


@case(*EXACT)
def the_original_is_found_and_marked_in_the_first_folder_holding_it(mail: Drafts) -> None:
    answered = draft("Answered").replace(b"From: <me@example.org>", b"From: Kim <kim@example.org>")
    mail.backend.append(INBOX, answered)
    other = mail.backend.append(INBOX, draft("Left alone")).uid
    where = [mail.trash, INBOX]
    fields = mail.backend.original_fields(where, header_id("Answered"), ("From", "Subject"))
    assert fields == {"from": ["Kim <kim@example.org>"], "subject": ["Answered"]}
    assert mail.backend.original_fields(where, header_id("Nowhere"), ("Subject",)) is None
    before = mail.listing()
    assert mail.backend.mark_original(where, header_id("Answered"), "\\Answered") == "marked"
    assert mail.backend.mark_original(where, header_id("Nowhere"), "\\Answered") == "not_found"
    assert mail.listing() == before
    (uid,) = mail.backend.with_message_id(INBOX, header_id("Answered")).uids
    flags = mail.backend.flags(INBOX, [uid, other])
    assert (flags[uid].flags, flags[other].flags) == ({"\\Answered"}, frozenset())
