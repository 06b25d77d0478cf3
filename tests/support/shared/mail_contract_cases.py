"""The cases of the mail backend contract (``tests/support/shared/mail_contract.py``): reading,
writing, watching, runs on a whole search and search pages, each on the backends it names. Dovecot answers
every case; Cyrus and Courier the cases where servers differ (searching, copying, moving, expunging;
MODSEQ where the server keeps it: not Courier).
"""

from __future__ import annotations

import base64
import io
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from mail_imap_mcp import mime, query
from mail_imap_mcp.config import Config
from mail_imap_mcp.mail.bulk import FlagChanges
from mail_imap_mcp.mail.cursors import StreamState
from mail_imap_mcp.mail.directory import MailboxDirectory
from mail_imap_mcp.mail.errors import MailboxMissing, MessageGone, UidValidityChanged
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.mail.mailboxes import MailboxInfo
from mail_imap_mcp.mail.pages import (
    IndexView,
    PageOrder,
    PagePosition,
    PageReads,
    PositionAsk,
    PositionRead,
    StreamAsk,
    Summaries,
)
from mail_imap_mcp.mail.part_errors import NotAnAttachment, PartGone, PartNotFound
from mail_imap_mcp.mail.parts import PartWindow
from mail_imap_mcp.mail.reading import ReadOptions
from mail_imap_mcp.mail.records import OrderedPage
from mail_imap_mcp.mail.replies import Candidate
from mail_imap_mcp.mail.roles import INBOX, TRASH
from mail_imap_mcp.mail.write_errors import DestinationMissing
from tests.support.shared.mail_contract import EVERY_SERVER, MODSEQ_KEEPERS, Mail, case, message


@case()
def an_appended_message_is_counted_and_read_back_as_stored(mail: Mail) -> None:
    before = mail.backend.status(INBOX)
    raw = message("Stored")
    made = mail.backend.append(INBOX, raw, ["\\Seen"])
    after = mail.backend.status(INBOX)
    assert (made.uidvalidity, made.uid) == (before.uidvalidity, before.uidnext)
    assert (after.messages, after.unseen, after.uidnext) == (before.messages + 1, before.unseen, made.uid + 1)
    assert mail.backend.raw(INBOX, made.uid) == raw
    assert mail.backend.header(INBOX, made.uid) == raw[: raw.index(b"\r\n\r\n") + 4]
    assert mail.backend.raw(INBOX, made.uid + 1) is None


@case()
def an_unseen_message_counts_as_unseen(mail: Mail) -> None:
    mail.backend.append(INBOX, message("One"))
    mail.backend.append(INBOX, message("Two"), ["\\Seen"])
    assert mail.backend.status(INBOX).unseen == 1


@case()
def flags_and_keywords_are_added_removed_and_replaced(mail: Mail) -> None:
    uid = mail.backend.append(INBOX, message("Flags"), ["\\Seen"]).uid
    mail.backend.store(INBOX, [uid], "add", ["\\Flagged", "$Work"])
    assert mail.backend.flags(INBOX, [uid])[uid].flags == {"\\Seen", "\\Flagged", "$Work"}
    mail.backend.store(INBOX, [uid], "remove", ["\\Seen", "$Work"])
    assert mail.backend.flags(INBOX, [uid])[uid].flags == {"\\Flagged"}
    mail.backend.store(INBOX, [uid], "replace", ["\\Answered"])
    assert mail.backend.flags(INBOX, [uid])[uid].flags == {"\\Answered"}


@case()
def flags_of_messages_that_do_not_exist_are_left_out(mail: Mail) -> None:
    uid = mail.backend.append(INBOX, message("Here")).uid
    assert set(mail.backend.flags(INBOX, [uid, uid + 5])) == {uid}


@case()
def a_missing_mailbox_is_said_as_missing(mail: Mail) -> None:
    with pytest.raises(MailboxMissing):
        mail.backend.status(mail.missing)
    with pytest.raises(MailboxMissing):
        mail.backend.search(mail.missing, query.AllOf())


@case()
def the_mailboxes_name_their_roles(mail: Mail) -> None:
    roles = {box.name: box.special_use for box in mail.backend.mailboxes()}
    assert roles[INBOX] is None
    assert roles[mail.trash] == TRASH
    assert mail.archive in roles


def _seeded(mail: Mail) -> dict[str, int]:
    """Four messages in INBOX, by name."""
    backend = mail.backend
    return {
        "report": backend.append(INBOX, message("Quarterly report", body="Numbers inside."), ["\\Seen"]).uid,
        "lunch": backend.append(INBOX, message("Lunch", sender="carl@example.net"), ["$Later"]).uid,
        "list": backend.append(INBOX, message("Digest", extra="List-Id: <news.example.org>\r\n")).uid,
        "big": backend.append(INBOX, message("Big", body="x" * 4000), ["\\Flagged"]).uid,
    }


SEARCHES: list[tuple[str, query.Query, set[str]]] = [
    ("everything", query.AllOf(), {"report", "lunch", "list", "big"}),
    ("subject", query.Contains("subject", "report"), {"report"}),
    ("subject any case", query.Contains("subject", "QUARTERLY"), {"report"}),
    ("sender", query.Contains("from", "carl@"), {"lunch"}),
    ("body", query.Contains("body", "Numbers"), {"report"}),
    ("text", query.Contains("text", "Digest"), {"list"}),
    ("seen", query.HasFlag("seen"), {"report"}),
    ("unseen", query.HasFlag("seen", present=False), {"lunch", "list", "big"}),
    ("flagged", query.HasFlag("flagged"), {"big"}),
    ("keyword", query.HasKeyword("$Later"), {"lunch"}),
    ("no keyword", query.HasKeyword("$Later", present=False), {"report", "list", "big"}),
    ("header present", query.Header("List-Id"), {"list"}),
    ("header value", query.Header("List-Id", "news.example"), {"list"}),
    ("not", query.Not(query.Contains("subject", "Lunch")), {"report", "list", "big"}),
    ("any of", query.AnyOf((query.Contains("subject", "Lunch"), query.HasFlag("flagged"))), {"lunch", "big"}),
    (
        "all of",
        query.AllOf((query.HasFlag("seen", present=False), query.Not(query.Header("List-Id")))),
        {"lunch", "big"},
    ),
    ("larger", query.SizeBound("larger", 2000), {"big"}),
    ("smaller", query.SizeBound("smaller", 2000), {"report", "lunch", "list"}),
    (
        "since yesterday",
        query.DateBound("since", (datetime.now(UTC) - timedelta(days=1)).date()),
        {"report", "lunch", "list", "big"},
    ),
    ("before yesterday", query.DateBound("before", (datetime.now(UTC) - timedelta(days=1)).date()), set()),
]


@case(*EVERY_SERVER)
def a_search_answers_as_every_server_does(mail: Mail) -> None:
    uids = _seeded(mail)
    for name, wanted, expected in SEARCHES:
        found = mail.backend.search(INBOX, wanted)
        assert found == sorted(uids[key] for key in expected), name


@case(*EVERY_SERVER)
def a_copy_lands_in_the_destination_and_leaves_the_source(mail: Mail) -> None:
    first = mail.backend.append(INBOX, message("First")).uid
    second = mail.backend.append(INBOX, message("Second"), ["$Kept"]).uid
    before = mail.backend.status(mail.archive)
    copied = mail.backend.copy(INBOX, [first, second], mail.archive)
    assert copied.uidvalidity == before.uidvalidity
    assert sorted(copied.uids) == [first, second]
    assert sorted(copied.uids.values()) == [before.uidnext, before.uidnext + 1]
    assert mail.backend.status(INBOX).messages == 2
    assert mail.backend.raw(mail.archive, copied.uids[first]) == message("First")
    assert "$Kept" in mail.backend.flags(mail.archive, [copied.uids[second]])[copied.uids[second]].flags


@case(*EVERY_SERVER)
def a_move_leaves_nothing_behind(mail: Mail) -> None:
    uid = mail.backend.append(INBOX, message("Moving")).uid
    kept = mail.backend.append(INBOX, message("Staying")).uid
    moved = mail.backend.move(INBOX, [uid], mail.trash)
    assert mail.backend.search(INBOX, query.AllOf()) == [kept]
    assert mail.backend.raw(mail.trash, moved.uids[uid]) == message("Moving")


@case(*EVERY_SERVER)
def a_copy_to_a_missing_mailbox_creates_nothing(mail: Mail) -> None:
    uid = mail.backend.append(INBOX, message("Nowhere")).uid
    with pytest.raises(DestinationMissing):
        mail.backend.copy(INBOX, [uid], mail.missing)
    assert mail.missing not in {box.name for box in mail.backend.mailboxes()}


@case(*EVERY_SERVER)
def an_expunge_removes_exactly_the_given_messages(mail: Mail) -> None:
    gone = mail.backend.append(INBOX, message("Gone")).uid
    marked = mail.backend.append(INBOX, message("Marked"), ["\\Deleted"]).uid
    mail.backend.expunge(INBOX, [gone])
    assert mail.backend.search(INBOX, query.AllOf()) == [marked]


@case(*EVERY_SERVER)
def a_uid_is_never_given_twice(mail: Mail) -> None:
    first = mail.backend.append(INBOX, message("First")).uid
    mail.backend.expunge(INBOX, [first])
    assert mail.backend.append(INBOX, message("Second")).uid > first
    assert mail.backend.status(INBOX).uidnext > first + 1


@case(*MODSEQ_KEEPERS)
def a_flag_change_raises_the_modseq_of_that_message_alone(mail: Mail) -> None:
    changed = mail.backend.append(INBOX, message("Changed")).uid
    quiet = mail.backend.append(INBOX, message("Quiet")).uid
    start = mail.backend.status(INBOX).highestmodseq
    assert start is not None
    before = mail.backend.flags(INBOX, [changed, quiet])
    mail.backend.store(INBOX, [changed], "add", ["\\Seen"])
    after = mail.backend.flags(INBOX, [changed, quiet])
    assert after[quiet].modseq == before[quiet].modseq
    assert (after[changed].modseq or 0) > start
    since = mail.backend.changed_since(INBOX, start)
    assert set(since.flags) == {changed} and "\\Seen" in since.flags[changed].flags
    assert since.highestmodseq >= (after[changed].modseq or 0)
    assert mail.backend.changed_since(INBOX, since.highestmodseq).flags == {}


@case(*EVERY_SERVER)
def a_mailbox_made_again_has_another_uidvalidity_and_none_of_its_messages(mail: Mail) -> None:
    mail.backend.append(mail.archive, message("Before"))
    before = mail.backend.status(mail.archive)
    mail.recreate(mail.archive)
    after = mail.backend.status(mail.archive)
    assert after.uidvalidity != before.uidvalidity
    assert (after.messages, mail.backend.search(mail.archive, query.AllOf())) == (0, [])


WITH_ATTACHMENT = (
    b"From: Ann <ann@example.org>\r\nTo: Bob <bob@example.org>, carl@example.net\r\nCc: dora@example.org\r\n"
    b"Subject: The plan\r\nDate: Tue, 03 Mar 2026 10:00:00 +0100\r\nMessage-ID: <plan@example.org>\r\n"
    b"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b1\r\n\r\n"
    b"--b1\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nHere is the plan for Monday, see the sheet.\r\n"
    b"--b1\r\nContent-Type: application/pdf; name=plan.pdf\r\nContent-Disposition: attachment; filename=plan.pdf\r\n"
    b"Content-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n--b1--\r\n"
)
PLAIN = (
    b"From: <eve@example.org>\r\nTo: <bob@example.org>\r\nSubject: =?utf-8?q?Gr=C3=BC=C3=9Fe?=\r\n"
    b"Date: Wed, 04 Mar 2026 08:30:00 +0000\r\nMessage-ID: <hello@example.org>\r\n"
    b"Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n"
    b"Sch=C3=B6ne Gr=C3=BC=C3=9Fe aus dem S=C3=BCden.\r\n"
)


@case(*EVERY_SERVER)
def a_summary_says_what_every_server_says_of_a_message(mail: Mail) -> None:
    plan = mail.backend.append(INBOX, WITH_ATTACHMENT, ["\\Seen", "$Work"]).uid
    hello = mail.backend.append(INBOX, PLAIN).uid
    first, second = mail.backend.summaries(INBOX, [hello, plan, plan + 7], 200)
    assert (first.uid, second.uid) == (hello, plan)
    assert (second.subject, second.from_, second.header_message_id) == (
        "The plan",
        "Ann <ann@example.org>",
        "<plan@example.org>",
    )
    assert (second.date, second.has_attachments, second.attachment_names) == (
        "2026-03-03T09:00:00Z",
        True,
        ("plan.pdf",),
    )
    assert second.snippet == "Here is the plan for Monday, see the sheet."
    # \Recent is the first session's to see a message (Dovecot, Cyrus): no flag a backend keeps.
    assert set(second.flags) - {"\\Recent"} == {"\\Seen", "$Work"} and second.size_bytes == len(
        WITH_ATTACHMENT
    )
    assert (first.subject, first.snippet, first.has_attachments) == (
        "Grüße",
        "Schöne Grüße aus dem Süden.",
        False,
    )
    assert first.message_id.endswith(f":{INBOX}:{mail.backend.status(INBOX).uidvalidity}:{hello}")
    assert mail.backend.summaries(INBOX, [hello], 0)[0].snippet is None


#: An attachment long enough for a window inside it, base64 in 76-character lines as mailers send it.
SHEET = bytes(range(256)) * 8
ENCODED_SHEET = base64.encodebytes(SHEET).replace(b"\n", b"\r\n")
WITH_SHEET = WITH_ATTACHMENT.replace(
    b"Content-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n",
    b"Content-Transfer-Encoding: base64\r\n\r\n" + ENCODED_SHEET,
)


def stored_sheet(mail: Mail, mailbox: str = INBOX) -> MessageRef:
    made = mail.backend.append(mailbox, WITH_SHEET)
    return MessageRef("default", mailbox, made.uidvalidity, made.uid)


@case(*EVERY_SERVER)
def an_attachment_reads_back_decoded_after_what_the_sink_held(mail: Mail) -> None:
    ref = stored_sheet(mail)
    sink = io.BytesIO(b"kept")
    sink.seek(4)
    read = mail.backend.part(ref, "2", sink, PartWindow(len(SHEET) * 2))
    assert sink.getvalue() == b"kept" + SHEET
    assert (read.written, read.decoded_end, read.complete) == (len(SHEET), len(SHEET), True)
    assert (read.part.section, read.part.filename, read.part.content_type) == (
        "2",
        "plan.pdf",
        "application/pdf",
    )
    assert mail.backend.flags(INBOX, [ref.uid])[ref.uid].flags - {"\\Recent"} == set()  # never marked seen


@case(*EVERY_SERVER)
def a_window_of_an_attachment_is_its_decoded_bytes_there_and_not_complete(mail: Mail) -> None:
    ref = stored_sheet(mail)
    sink = io.BytesIO()
    read = mail.backend.part(ref, "2", sink, PartWindow(100, skip_bytes=1000))
    assert sink.getvalue() == SHEET[1000:1100]
    assert (read.written, read.decoded_end, read.complete) == (100, 1100, False)


@case(*EVERY_SERVER)
def accept_sees_the_part_and_its_first_bytes_and_may_narrow_the_window(mail: Mail) -> None:
    ref = stored_sheet(mail)
    seen: list[tuple[str, bytes]] = []

    def accept(part: mime.Part, head: bytes) -> int:
        seen.append((part.section, head[:16]))
        return 10

    sink = io.BytesIO()
    read = mail.backend.part(ref, "2", sink, PartWindow(len(SHEET), accept=accept))
    assert seen == [("2", SHEET[:16])]
    assert (sink.getvalue(), read.complete) == (SHEET[:10], False)


@case(*EVERY_SERVER)
def the_body_text_and_a_part_the_message_lacks_are_no_attachments_to_read(mail: Mail) -> None:
    ref = stored_sheet(mail)
    with pytest.raises(NotAnAttachment) as body:
        mail.backend.part(ref, "1", io.BytesIO(), PartWindow(100))
    with pytest.raises(PartNotFound) as lacking:
        mail.backend.part(ref, "7", io.BytesIO(), PartWindow(100))
    assert body.value.ref == lacking.value.ref == ref


@case(*EVERY_SERVER)
def an_attachment_of_a_message_gone_or_a_mailbox_made_again_is_not_read(mail: Mail) -> None:
    ref, kept = stored_sheet(mail, mail.archive), stored_sheet(mail, mail.archive)
    mail.backend.expunge(mail.archive, [ref.uid])
    with pytest.raises(PartGone) as gone:
        mail.backend.part(ref, "2", io.BytesIO(), PartWindow(100))
    assert gone.value.ref == ref
    mail.recreate(mail.archive)
    with pytest.raises(UidValidityChanged) as changed:
        mail.backend.part(kept, "2", io.BytesIO(), PartWindow(100))
    assert (changed.value.expected, changed.value.mailbox) == (kept.uidvalidity, mail.archive)


def reply(to: str, *names: str, date: str = "Tue, 03 Mar 2026 12:00:00 +0000") -> bytes:
    head = f"From: <me@example.org>\r\nTo: <{to}>\r\nSubject: Re\r\nDate: {date}\r\n"
    if names:
        head += f"In-Reply-To: {names[0]}\r\nReferences: {' '.join(names)}\r\n"
    return (head + "\r\nThanks.\r\n").encode()


ASKED = datetime(2026, 3, 3, 10, 0, tzinfo=UTC)


@case(*EVERY_SERVER)
def a_sent_message_answers_what_it_names_and_is_addressed_to(mail: Mail) -> None:
    mail.backend.append(mail.archive, reply("ann@example.org", "<q1@example.org>"))
    mail.backend.append(mail.archive, reply("cid@example.org", "<q0@example.org>", "<q3@example.org>"))
    mail.backend.append(
        mail.archive, reply("bob@example.org", "<q2@example.org>", date="Mon, 02 Mar 2026 09:00:00 +0000")
    )
    candidates = [
        Candidate("named and addressed", "<q1@example.org>", "Ann@example.org", ASKED),
        Candidate("named in References", "<q3@example.org>", "cid@example.org", ASKED),
        Candidate("addressed to another", "<q1@example.org>", "eve@example.org", ASKED),
        Candidate("older than the question", "<q2@example.org>", "bob@example.org", ASKED),
        Candidate("named nowhere", "<q9@example.org>", "ann@example.org", ASKED),
    ]
    seen: list[set[str]] = []

    def sent(boxes: list[MailboxInfo]) -> str:
        seen.append({box.name for box in boxes})
        return mail.archive

    assert mail.backend.answered(sent, candidates) == {"named and addressed", "named in References"}
    assert mail.archive in seen[0] and INBOX in seen[0]


@case()
def without_a_sent_mailbox_nothing_is_said_answered_and_without_ids_nothing_is_searched(
    mail: Mail,
) -> None:
    mail.backend.append(mail.archive, reply("ann@example.org", "<q1@example.org>"))
    asked = [Candidate("k", "<q1@example.org>", "ann@example.org", ASKED)]
    assert mail.backend.answered(lambda boxes: None, asked) is None
    assert mail.backend.answered(lambda boxes: mail.archive, []) == set()
    assert mail.backend.answered(lambda boxes: mail.archive, asked) == {"k"}


READ = ReadOptions(10_000, "text", True, False, 100_000)  # body chars, format, headers, all, part bytes


@case(*EVERY_SERVER)
def a_message_reads_as_every_server_reads_it(mail: Mail) -> None:
    made = mail.backend.append(INBOX, WITH_ATTACHMENT, ["\\Seen"])
    ref = MessageRef("default", INBOX, made.uidvalidity, made.uid)
    record, warnings = mail.backend.message(ref, READ)
    assert (record.summary.subject, record.summary.snippet, record.summary.uid) == (
        "The plan",
        None,
        made.uid,
    )
    assert (record.text or "").strip() == "Here is the plan for Monday, see the sheet."
    assert [(a.section, a.filename) for a in record.attachments] == [("2", "plan.pdf")]
    assert record.headers["Subject"] == "The plan" and "Content-Type" not in record.headers
    assert (record.sender_headers["from"], record.fetch_truncated, warnings) == (
        ["Ann <ann@example.org>"],
        False,
        [],
    )
    plain, _ = mail.backend.message(ref, ReadOptions(**{**READ.__dict__, "include_headers": False}))
    assert plain.headers == {}


@case()
def a_message_gone_or_of_a_mailbox_made_again_is_not_read(mail: Mail) -> None:
    gone, kept = mail.backend.append(mail.archive, PLAIN), mail.backend.append(mail.archive, PLAIN)
    mail.backend.expunge(mail.archive, [gone.uid])
    with pytest.raises(MessageGone):
        mail.backend.message(MessageRef("default", mail.archive, gone.uidvalidity, gone.uid), READ)
    mail.recreate(mail.archive)
    with pytest.raises(UidValidityChanged):
        mail.backend.message(MessageRef("default", mail.archive, kept.uidvalidity, kept.uid), READ)


def _ref(mail: Mail, uid: int) -> MessageRef:
    return MessageRef("default", INBOX, mail.backend.status(INBOX).uidvalidity, uid)


@case(*MODSEQ_KEEPERS)
def a_keyword_marked_once_is_held_until_unmarked(mail: Mail) -> None:
    ref = _ref(mail, mail.backend.append(INBOX, message("Once"), ["\\Draft"]).uid)
    assert mail.backend.mark_once(ref, "Claimed") == "set"
    assert mail.backend.mark_once(ref, "claimed") == "held"  # keywords compare without case
    assert {f.lower() for f in mail.backend.flags(INBOX, [ref.uid])[ref.uid].flags} == {"\\draft", "claimed"}
    mail.backend.unmark(ref, "Claimed")
    assert mail.backend.flags(INBOX, [ref.uid])[ref.uid].flags == {"\\Draft"}
    assert mail.backend.mark_once(ref, "Claimed") == "set"


@case(*MODSEQ_KEEPERS)
def a_keyword_is_marked_once_only_on_the_view_it_was_read_in(mail: Mail) -> None:
    uid = mail.backend.append(INBOX, message("Gone")).uid
    with pytest.raises(MessageGone):
        mail.backend.mark_once(_ref(mail, uid + 1), "Claimed")
    stale = MessageRef("default", INBOX, _ref(mail, uid).uidvalidity + 1, uid)
    for write in (mail.backend.mark_once, mail.backend.unmark):
        with pytest.raises(UidValidityChanged):
            write(stale, "Claimed")
    assert mail.backend.flags(INBOX, [uid])[uid].flags == frozenset()


@case("memory-as-courier", "courier")
def without_modseqs_no_keyword_is_marked_once(mail: Mail) -> None:
    ref = _ref(mail, mail.backend.append(INBOX, message("Unsupported")).uid)
    assert mail.backend.mark_once(ref, "Claimed") == "unsupported"
    assert mail.backend.flags(INBOX, [ref.uid])[ref.uid].flags == frozenset()


@case(*EVERY_SERVER)
def the_append_limit_is_the_one_advertised(mail: Mail) -> None:
    assert mail.backend.append_limit() == mail.advertised_append_limit


@case(*EVERY_SERVER)
def an_exact_expunge_is_offered_and_no_mailbox_is_more_than_a_mailbox(mail: Mail) -> None:
    mail.backend.check_expunge()  # UIDPLUS on every server of the matrix
    assert [mail.backend.landing(name) for name in (INBOX, mail.trash, mail.archive, mail.missing)] == [
        None
    ] * 4


@case(*EVERY_SERVER)
def a_source_reads_back_byte_for_byte_after_its_size_was_accepted(mail: Mail) -> None:
    ref = stored_sheet(mail)
    sizes: list[int] = []
    told: list[tuple[int, int]] = []
    sink = io.BytesIO(b"kept")
    sink.seek(4)
    written = mail.backend.source(ref, sink, sizes.append, lambda done, total: told.append((done, total)))
    assert (written, sink.getvalue()) == (len(WITH_SHEET), b"kept" + WITH_SHEET)
    assert sizes == [len(WITH_SHEET)] and told[-1] == (len(WITH_SHEET), len(WITH_SHEET))


@case(*EVERY_SERVER)
def a_source_refused_by_its_size_or_gone_writes_nothing(mail: Mail) -> None:
    ref, gone = stored_sheet(mail), stored_sheet(mail)
    mail.backend.expunge(INBOX, [gone.uid])

    def refuse(size: int) -> None:
        raise ValueError(size)

    sink = io.BytesIO()
    with pytest.raises(ValueError):
        mail.backend.source(ref, sink, refuse, lambda done, total: None)
    with pytest.raises(MessageGone) as missing:
        mail.backend.source(gone, sink, lambda size: None, lambda done, total: None)
    assert (sink.getvalue(), missing.value.ref) == (b"", gone)


@case(*EVERY_SERVER)
def header_fields_are_those_named_and_none_of_a_message_gone(mail: Mail) -> None:
    made = mail.backend.append(INBOX, message("Fields", sender="kim@example.org"))
    ref = MessageRef("default", INBOX, made.uidvalidity, made.uid)
    fields = mail.backend.header_fields(ref, ("From", "Subject"))
    assert fields == {"from": ["kim@example.org"], "subject": ["Fields"]}
    mail.backend.expunge(INBOX, [made.uid])
    assert mail.backend.header_fields(ref, ("From", "Subject")) is None
    kept = mail.backend.append(mail.archive, message("Kept"))
    mail.recreate(mail.archive)
    with pytest.raises(UidValidityChanged):
        mail.backend.header_fields(
            MessageRef("default", mail.archive, kept.uidvalidity, kept.uid), ("Subject",)
        )


@case(*EVERY_SERVER)
def headers_are_read_of_the_messages_there_a_few_at_a_time(mail: Mail) -> None:
    extra = "List-Unsubscribe: <mailto:leave@example.org>\r\n"
    uids = [mail.backend.append(INBOX, message(f"Head {n}", extra=extra)).uid for n in range(3)]
    mail.backend.expunge(INBOX, uids[1:2])
    uidvalidity = mail.backend.status(INBOX).uidvalidity
    read = mail.backend.headers(INBOX, uidvalidity, uids, 1)
    assert sorted(read) == [uids[0], uids[2]]
    assert read[uids[2]]["subject"] == ["Head 2"]
    assert read[uids[2]]["list-unsubscribe"] == ["<mailto:leave@example.org>"]
    with pytest.raises(UidValidityChanged) as changed:
        mail.backend.headers(INBOX, uidvalidity + 1, uids, 2)
    assert (changed.value.expected, changed.value.mailbox) == (uidvalidity + 1, INBOX)


# -- runs on a whole search (mail/bulk.py) ---------------------------------------------------------------

OFFERS = query.Contains("subject", "offer")


def _offers(mail: Mail, count: int) -> list[int]:
    """``count`` matches of :data:`OFFERS` (each of its own size: a move's chunk settled after a lost answer
    tells them apart by size and arrival where the server moved them), and one message that is none."""
    uids = [mail.backend.append(INBOX, message(f"Offer {n}", body="x" * (10 + n))).uid for n in range(count)]
    mail.backend.append(INBOX, message("Note"))
    return uids


@case(*EVERY_SERVER)
def a_run_moves_its_fixed_set_and_names_each_new_uid(mail: Mail) -> None:
    uids = _offers(mail, 3)
    found = mail.backend.fixed(INBOX, OFFERS)
    assert (found.mailbox, found.uidvalidity, found.uids) == (
        INBOX,
        mail.backend.status(INBOX).uidvalidity,
        tuple(uids),
    )
    late = mail.backend.append(INBOX, message("Offer late")).uid
    assert mail.backend.targets(found, OFFERS) == (uids, {late})
    action = mail.backend.moving(found, mail.archive)
    action.prepare(uids)
    moved = action.send(uids)
    assert moved is not None and moved.uidvalidity == mail.backend.status(mail.archive).uidvalidity
    assert [mail.backend.raw(mail.archive, moved.uids[uid]) for uid in uids] == [
        message(f"Offer {n}", body="x" * (10 + n)) for n in range(3)
    ]
    assert len(mail.backend.search(INBOX, query.AllOf())) == 2  # the note and the late offer
    assert mail.backend.arrived(found, OFFERS) == {late}


@case(*EVERY_SERVER)
def a_chunk_whose_answer_was_lost_is_settled_moving_the_rest_once_and_naming_all(mail: Mail) -> None:
    uids = _offers(mail, 4)
    found = mail.backend.fixed(INBOX, OFFERS)
    action = mail.backend.moving(found, mail.archive)
    action.prepare(uids)
    mail.backend.move(INBOX, uids[:2], mail.archive)  # sent, its answer lost: half the chunk had moved
    settled = action.settle(uids)
    assert settled is not None and sorted(settled.uids) == uids
    assert [mail.backend.raw(mail.archive, settled.uids[uid]) for uid in uids] == [
        message(f"Offer {n}", body="x" * (10 + n)) for n in range(4)
    ]
    assert len(mail.backend.search(mail.archive, query.AllOf())) == 4  # none copied twice
    assert mail.backend.targets(found, None) == ([], set())


@case(*EVERY_SERVER)
def a_chunk_says_what_the_link_cost_it(mail: Mail) -> None:
    """What sizes the next chunk by the server's work alone (issue 89 item 12): a chunk's waits for the
    server are counted, and the round trip they stand for is never negative."""
    uids = _offers(mail, 2)
    found = mail.backend.fixed(INBOX, OFFERS)
    action = mail.backend.moving(found, mail.archive)
    action.prepare(uids)
    before = action.link()
    action.send(uids)
    after = action.link()
    assert after.round_trips > before.round_trips and after.round_trip_s >= 0.0


@case()
def a_flag_run_notes_only_the_messages_each_flag_changed_on(mail: Mail) -> None:
    uids = _offers(mail, 3)
    mail.backend.store(INBOX, [uids[0]], "add", ["\\Flagged"])
    found = mail.backend.fixed(INBOX, OFFERS)
    changes = FlagChanges({"\\Flagged": set()})
    action = mail.backend.flagging(found, "add", ("\\Flagged",), changes)
    action.prepare(uids)
    assert action.send(uids) is None
    assert action.settle(uids) is None  # stored again: nothing changes twice
    assert changes.flags == {"\\Flagged": set(uids[1:])}
    assert all("\\Flagged" in f.flags for f in mail.backend.flags(INBOX, uids).values())


@case()
def a_set_whose_mailbox_was_made_again_is_refused_naming_it(mail: Mail) -> None:
    uids = _offers(mail, 2)
    mail.backend.move(INBOX, uids, mail.archive)
    moved = mail.backend.fixed(mail.archive, OFFERS)
    mail.recreate(mail.archive)
    with pytest.raises(UidValidityChanged) as changed:
        mail.backend.targets(moved, None)
    assert (changed.value.mailbox, changed.value.expected) == (mail.archive, moved.uidvalidity)
    assert mail.backend.arrived(moved, OFFERS) == set()


@case(*EVERY_SERVER)
def a_delete_by_search_goes_to_the_trash_and_a_move_to_an_existing_mailbox(mail: Mail) -> None:
    settings = {"host": "imap.example.org", "username": "me", "password": "pw", "trash_mailbox": mail.trash}
    account = Config.model_validate({"accounts": {"default": settings}}).accounts["default"]
    assert mail.backend.deletes_to(account) == mail.trash
    assert mail.backend.selectable(mail.archive) == mail.archive
    assert mail.backend.selectable(mail.missing) is None


# -- search pages (mail/pages.py): a page's reads run together -------------------------------------------


def dated(subject: str, day: int) -> bytes:
    """A message written on day ``day`` of March 2026 (its Date header)."""
    return message(subject, extra=f"Date: {format_datetime(datetime(2026, 3, day, 12, tzinfo=UTC))}\r\n")


def stream_walk(mail: Mail, sort: PageOrder, limit: int) -> list[list[int]]:
    """INBOX's pages in ``sort`` order, ``limit`` a page, each read in a run of its own."""

    def one_page(stream: StreamState, total: int | None) -> OrderedPage:
        ask = StreamAsk(query.AllOf(), "imap", sort, limit, stream=stream, strict=True, total=total)
        return mail.backend.pages(lambda reads: reads.ordered_page(ask))

    pages: list[list[int]] = []
    stream: StreamState | None = StreamState(INBOX)
    total: int | None = None
    while stream is not None:
        page = one_page(stream, total)
        pages.append([uid for _, _, uid in page.picks])
        total, stream = page.total, page.next_stream
    return pages


@case(*EVERY_SERVER)
def a_mailbox_pages_newest_first_each_message_once(mail: Mail) -> None:
    uids = [mail.backend.append(INBOX, dated(f"Stream {n}", 10 - n)).uid for n in range(5)]
    assert stream_walk(mail, "arrival", 2) == [uids[4:2:-1], uids[2:0:-1], uids[:1]]
    assert stream_walk(mail, "date", 2) == [uids[:2], uids[2:4], uids[4:]]  # written newest first


@case(*EVERY_SERVER)
def a_missing_mailbox_fails_a_page_of_it_alone_or_is_its_failure(mail: Mail) -> None:
    def read(reads: PageReads, strict: bool) -> OrderedPage:
        missing = StreamState(mail.missing)
        return reads.ordered_page(
            StreamAsk(query.AllOf(), "imap", "arrival", 5, stream=missing, strict=strict, total=None)
        )

    with pytest.raises(MailboxMissing):
        mail.backend.pages(lambda reads: read(reads, True))
    page = mail.backend.pages(lambda reads: read(reads, False))
    ((name, failure),) = page.failed
    assert (name, page.picks, page.next_stream) == (mail.missing, [], None)
    assert isinstance(failure, MailboxMissing)


@case(*EVERY_SERVER)
def several_mailboxes_merge_from_one_position_to_the_end(mail: Mail) -> None:
    inbox = [mail.backend.append(INBOX, dated(f"In {day}", day)).uid for day in (1, 3, 5)]
    archive = [mail.backend.append(mail.archive, dated(f"Archived {day}", day)).uid for day in (2, 4, 6)]
    searched = ((0, INBOX), (1, mail.archive), (2, mail.missing))

    def read(position: PagePosition | None) -> tuple[PositionRead, list[bool]]:
        def run(reads: PageReads) -> tuple[PositionRead, list[bool]]:
            found = reads.position_read(
                PositionAsk(query.AllOf(), "imap", "date", 4, mailboxes=searched, position=position)
            )
            failures = [reads.mailbox_failure(p.failure) is not None for p in found.parts if p.failure]
            return found, failures

        return mail.backend.pages(run)

    first, failures = read(None)
    statuses = [mail.backend.status(name).uidvalidity for name in (INBOX, mail.archive)]
    parts = sorted(first.parts, key=lambda part: part.index)
    assert [(p.mailbox, p.uidvalidity, p.matches) for p in parts[:2]] == [
        (INBOX, statuses[0], 3),
        (mail.archive, statuses[1], 3),
    ]
    assert isinstance(parts[2].failure, MailboxMissing) and failures == [True]
    assert [(index, uid) for index, uid, _ in first.picks] == [
        (1, archive[2]),
        (0, inbox[2]),
        (1, archive[1]),
        (0, inbox[1]),
    ]
    assert first.picks[-1][2] == int(datetime(2026, 3, 3, 12, tzinfo=UTC).timestamp())
    assert first.next_position == PagePosition(first.picks[-1][2], 0, inbox[1])
    last, _ = read(first.next_position)
    assert [(index, uid) for index, uid, _ in last.picks] == [(1, archive[0]), (0, inbox[0])]
    assert (last.next_position, last.tied) == (None, 1)  # the position's own message, passed


@case(*EVERY_SERVER)
def summaries_of_several_mailboxes_are_each_mailboxs_or_its_failure(mail: Mail) -> None:
    kept, gone = (mail.backend.append(INBOX, message(f"Summary {n}")).uid for n in range(2))
    mail.backend.expunge(INBOX, [gone])
    moved = mail.backend.append(mail.archive, message("Archived")).uid
    inbox, archive = (mail.backend.status(name).uidvalidity for name in (INBOX, mail.archive))
    wanted = [(INBOX, inbox, [kept, gone]), (mail.archive, archive + 1, [moved]), (mail.missing, 1, [1])]

    def read(reads: PageReads) -> list[tuple[Summaries | Exception, bool]]:
        found = reads.summaries_each(wanted, tag="", snippet_chars=20, window=4096)
        return [
            (each, isinstance(each, Exception) and reads.mailbox_failure(each) is not None) for each in found
        ]

    (batch, _), (changed, changed_alone), (missing, missing_alone) = mail.backend.pages(read)
    assert not isinstance(batch, Exception)
    assert [(m.uid, m.subject, m.snippet) for m in batch.messages] == [(kept, "Summary 0", "Hello.")]
    assert [issue.code for issue in batch.issues] == ["not_found"]
    assert isinstance(changed, UidValidityChanged) and changed_alone
    assert isinstance(missing, MailboxMissing) and missing_alone


@case(*EVERY_SERVER)
def the_listing_counts_where_it_can_and_every_mailbox_leaves_trash_out(mail: Mail) -> None:
    mail.backend.append(INBOX, message("Counted"))

    def read(reads: PageReads) -> tuple[list[MailboxInfo], list[str], IndexView]:
        listing = reads.listing()
        return listing, reads.every_mailbox(MailboxDirectory(listing)), reads.index_view(INBOX, pytest.fail)

    listing, everything, view = mail.backend.pages(read)
    counts = {box.name: box.counts.messages if box.counts else None for box in listing}
    assert counts[INBOX] in (None, 1) and counts[mail.archive] in (None, 0)
    assert {INBOX, mail.archive} <= set(everything) and mail.trash not in everything
    assert view == IndexView(INBOX)


@case()
def a_listing_with_counts_says_them(mail: Mail) -> None:
    mail.backend.append(INBOX, message("Counted"))
    listing = mail.backend.pages(lambda reads: reads.listing())
    counts = {box.name: box.counts.messages if box.counts else None for box in listing}
    assert (counts[INBOX], counts[mail.archive]) == (1, 0)
