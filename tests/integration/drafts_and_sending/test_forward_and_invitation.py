"""Forwarding and answering an invitation through the MCP client, sent with imap_send_draft through the real
submission chain (Dovecot submission -> Exim -> LMTP).

imap_save_draft's ``reply_to_invitation`` on invitations in the shapes Google Calendar, Exchange and Apple
Calendar send (tests/support/mail/invitations.py): the organizer gets the answer once, its calendar part read
with the icalendar package carries what RFC 5546 asks of a REPLY, and the user approved it in words; each
refusal saves nothing. ``forward_of`` (inline, and the original attached whole as ``message/rfc822``): the
recipient gets the original's attachments byte-exact (sha256 of each decoded part), never the draft's
private record of what it forwards, and the original is marked ``$Forwarded`` afterwards; the user approved
it seeing the forwarded message's subject and sender."""

from __future__ import annotations

import email
import email.policy
import imaplib
import os
import re
import time
from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from icalendar import Calendar

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.asking.page import approval_page
from mail_imap_mcp.config import Config
from tests.support.clients import chromium
from tests.support.clients.elicitation import answering
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import make_config, open_client
from tests.support.mail.invitations import apple, google, invitation_mail, outlook
from tests.support.servers.dovecot import ACL_CONFIG
from tests.support.servers.submission import SubmissionDovecot
from tests.support.shared.forward_and_invitation import _calendar_of, _digests, _invoice, _reply_of
from tests.support.shared.send import (
    TRACE,
    _decided,
    _delivered,
    _files,
    _received,
    _settings,
    _setup,
    _until,
)

pytestmark = pytest.mark.anyio

SAVE, SEND = "imap_save_draft", "imap_send_draft"


@pytest.fixture(scope="module")
def chain() -> Iterator[SubmissionDovecot]:
    with SubmissionDovecot(extra_config=ACL_CONFIG) as server:
        yield server


def _config(chain: SubmissionDovecot, user: str, **server: Any) -> Config:
    return make_config(
        {"default": _settings(chain, user, chain.submission_port, "starttls", write_enabled=True)}, **server
    )


async def _invitation_id(mcp: EnvelopeClient, subject: str = "Invitation") -> str:
    data = await mcp.ok("imap_search_messages", {"mailbox": "INBOX", "subject": subject})
    (found, *_) = data["messages"]
    return str(found["message_id"])


VENDORS = {
    "google": lambda bob, alice, carol: google(bob, [alice, carol]),
    "outlook": lambda bob, alice, carol: outlook(bob, [carol, alice]),
    "apple": lambda bob, alice, carol: apple(bob, carol, alice, []),
}


@pytest.mark.parametrize("vendor", list(VENDORS))
async def test_an_accepted_invitation_reaches_the_organizer_once_as_an_imip_reply(
    chain: SubmissionDovecot, vendor: str
) -> None:
    alice, bob, carol = _setup(chain)
    addresses = [chain.address(u) for u in (alice, bob, carol)]
    request = VENDORS[vendor](addresses[1], addresses[0], addresses[2])
    chain.seed(alice, "INBOX", [invitation_mail(addresses[1], addresses[0], request, vendor=vendor)])
    received, accepting = _received(chain), answering("accept")
    async for mcp in open_client(_config(chain, alice),
                                 elicitation_callback=accepting, mode="legacy"):  # fmt: skip
        invitation = await _invitation_id(mcp)
        arguments = {
            "reply_to_invitation": invitation,
            "invitation_answer": "accept",
            "body_text": "See you; A.",
        }
        dry = await mcp.ok(SAVE, {**arguments, "dry_run": True})
        saved = await mcp.ok(SAVE, arguments)
        sent = await mcp.ok(SEND, {"message_id": saved["message_id"]})
    when = {
        "google": "Tue 2 Dec 2025 10:00-11:00 Europe/Berlin (every occurrence)",
        "outlook": "Tue 9 Dec 2025 11:00-12:00 W. Europe Standard Time",
        "apple": "Wed 3 Dec 2025 14:00-15:30 Europe/Berlin",
    }[vendor]
    words = f"Accept 'Quarterly review', {when}, as {addresses[0]}"
    assert (
        dry["draft"]["body_text"] == f"{words}.\n\nSee you; A.\n"
        and dry["draft"]["invitation_reply"] == words
    )
    assert saved["draft"]["headers"]["To"] == f"Bob Organizer <{addresses[1]}>"
    assert saved["draft"]["headers"]["Subject"] == "Accepted: Quarterly review"
    assert (sent["outcome"], sent["accepted"], sent["answered"]) == ("sent", [addresses[1]], True)
    (question,) = accepting.asked
    assert f"Invitation reply: {words}" in question.splitlines()
    (got,) = await _delivered(chain, bob, 1)
    assert _received(chain) == received + 1
    text, calendar = _calendar_of(got)
    assert text.startswith(words) and "See you; A." in text
    assert str(calendar["METHOD"]) == "REPLY"
    original = Calendar.from_ical(request)
    (theirs,) = original.walk("VEVENT")
    (event,) = calendar.walk("VEVENT")
    assert (str(event["UID"]), int(event.get("SEQUENCE", 0))) == (
        str(theirs["UID"]),
        int(theirs.get("SEQUENCE", 0)),
    )
    recurrence = theirs.get("RECURRENCE-ID")
    assert (event.get("RECURRENCE-ID").dt if recurrence else None) == (recurrence.dt if recurrence else None)
    assert str(event["ORGANIZER"]).lower() == f"mailto:{addresses[1]}" and event.get("DTSTAMP") is not None
    attendee = event["ATTENDEE"]  # one: the account's own
    assert str(attendee).lower() == f"mailto:{addresses[0]}" and attendee.params["PARTSTAT"] == "ACCEPTED"
    assert str(event["COMMENT"]) == "See you; A."
    if vendor == "apple":
        assert attendee.params["DELEGATED-FROM"] == f"mailto:{addresses[2]}"
    (inbox,) = _files(chain, alice)
    assert "R" in inbox.name.rpartition(":2,")[2]  # the invitation is marked \Answered


async def _refused(
    chain: SubmissionDovecot, alice: str, arguments: dict[str, Any], code: str
) -> dict[str, Any]:
    async for mcp in open_client(_config(chain, alice)):
        invitation = await _invitation_id(mcp, "Invitation: Quarterly review")
        failure = await mcp.fail(SAVE, {"reply_to_invitation": invitation, **arguments}, code)
    assert _files(chain, alice, "Drafts") == []
    return failure["error"]


async def test_an_account_that_is_no_attendee_is_refused_naming_the_attendees(
    chain: SubmissionDovecot,
) -> None:
    alice, bob, carol = _setup(chain)
    bob_at, carol_at = chain.address(bob), chain.address(carol)
    chain.seed(alice, "INBOX", [invitation_mail(bob_at, carol_at, google(bob_at, [carol_at]))])
    error = await _refused(chain, alice, {"invitation_answer": "accept"}, "invalid_input")
    assert error["details"]["reason"] == "not_an_attendee" and error["details"]["attendees"] == [carol_at]


@pytest.mark.parametrize(
    ("later", "reason"), [("CANCEL", "invitation_cancelled"), ("REQUEST", "invitation_superseded")]
)
async def test_an_invitation_cancelled_or_updated_since_is_refused_naming_the_later_message(
    chain: SubmissionDovecot, later: str, reason: str
) -> None:
    alice, bob, _ = _setup(chain)
    bob_at, alice_at = chain.address(bob), chain.address(alice)
    chain.ensure_folder(alice, "Calendar")
    chain.seed(alice, "Calendar", [invitation_mail(bob_at, alice_at, google(bob_at, [alice_at]))])
    update = google(bob_at, [alice_at], sequence=1, method=later)
    chain.seed(alice, "INBOX", [invitation_mail(bob_at, alice_at, update, subject="Updated", method=later)])
    async for mcp in open_client(_config(chain, alice)):
        data = await mcp.ok("imap_search_messages", {"mailbox": "Calendar"})
        (invitation,) = data["messages"]
        failure = await mcp.fail(
            SAVE, {"reply_to_invitation": invitation["message_id"], "invitation_answer": "accept"}, "conflict"
        )
        later_id = (await mcp.ok("imap_search_messages", {"mailbox": "INBOX"}))["messages"][0]["message_id"]
    assert failure["error"]["details"]["reason"] == reason
    assert failure["error"]["details"]["later_message_id"] == later_id
    assert _files(chain, alice, "Drafts") == []


async def test_a_calendar_that_is_no_request_is_refused(chain: SubmissionDovecot) -> None:
    alice, bob, _ = _setup(chain)
    bob_at, alice_at = chain.address(bob), chain.address(alice)
    cancel = google(bob_at, [alice_at], method="CANCEL")
    chain.seed(alice, "INBOX", [invitation_mail(bob_at, alice_at, cancel, method="CANCEL")])
    error = await _refused(chain, alice, {"invitation_answer": "decline"}, "invalid_input")
    assert error["details"]["reason"] == "not_a_request" and "METHOD CANCEL" in error["message"]


async def test_an_organizer_outside_allowed_recipients_is_named_with_the_setting(
    chain: SubmissionDovecot,
) -> None:
    alice, _, _ = _setup(chain)
    alice_at, organizer = chain.address(alice), "boss@elsewhere.example"
    chain.seed(
        alice,
        "INBOX",
        [invitation_mail(organizer, alice_at, outlook(organizer, [alice_at]), vendor="outlook")],
    )
    received = _received(chain)
    async for mcp in open_client(_config(chain, alice),
                                 elicitation_callback=answering("accept"), mode="legacy"):  # fmt: skip
        invitation = await _invitation_id(mcp)
        saved = await mcp.call(SAVE, {"reply_to_invitation": invitation, "invitation_answer": "tentative"})
        refused = await mcp.fail(SEND, {"message_id": saved["data"]["message_id"]}, "permission_denied")
    (warning,) = [w for w in saved["meta"]["warnings"] if organizer in w]
    assert "allowed_recipients" in warning
    assert refused["error"]["details"] == {
        "account_id": "default", "setting": "allowed_recipients", "recipients": [organizer]
    }  # fmt: skip
    assert _received(chain) == received


# -- forward_of ------------------------------------------------------------------------------------


def _flags(chain: SubmissionDovecot, user: str, mailbox: str = "INBOX") -> str:
    imap = imaplib.IMAP4("127.0.0.1", chain.plain_port)
    try:
        imap.login(user, chain.password)
        imap.select(mailbox, readonly=True)
        _, data = imap.fetch("1", "(FLAGS)")
    finally:
        imap.logout()
    return str(data[0])


@pytest.mark.parametrize("forward_as", ["inline", "attachment"])
async def test_a_forward_arrives_with_the_originals_attachments_byte_exact_and_marks_it_forwarded(
    chain: SubmissionDovecot, forward_as: str
) -> None:
    alice, bob, carol = _setup(chain)
    alice_at, bob_at, carol_at = (chain.address(u) for u in (alice, bob, carol))
    original = _invoice(bob_at, alice_at, "Fwd: Invoice 2026-11")  # forwarded once already
    chain.seed(alice, "INBOX", [original])
    expected = _digests(email.message_from_bytes(original, policy=email.policy.default))  # type: ignore[arg-type]
    received, accepting = _received(chain), answering("accept")
    async for mcp in open_client(_config(chain, alice), elicitation_callback=accepting, mode="legacy"):
        (found,) = (await mcp.ok("imap_search_messages", {"mailbox": "INBOX"}))["messages"]
        arguments = {"forward_of": found["message_id"], "forward_as": forward_as, "to": [carol_at],
                     "body_text": "For accounting."}  # fmt: skip
        dry = await mcp.ok(SAVE, {**arguments, "dry_run": True})
        saved = await mcp.ok(SAVE, arguments)
        sent = await mcp.ok(SEND, {"message_id": saved["message_id"]})
    shown = f"'Fwd: Invoice 2026-11' of Acme Billing <{bob_at}>"
    assert dry["draft"]["forwarded"] == saved["draft"]["forwarded"] == shown
    assert dry["draft"]["headers"]["Subject"] == "Fwd: Invoice 2026-11"  # one Fwd:, not two
    assert dry["draft"]["body_text"].startswith("For accounting.\n")
    assert ("---------- Forwarded message ----------" in dry["draft"]["body_text"]) == (
        forward_as == "inline"
    )
    assert (sent["outcome"], sent["accepted"], sent["forwarded"], sent["status"]) == (
        "sent",
        [carol_at],
        True,
        "ok",
    )
    (question,) = accepting.asked
    assert f"Forwards: the message {shown}" in question.splitlines()
    (got,) = await _delivered(chain, carol, 1)
    assert _received(chain) == received + 1
    assert b"X-Mail-Imap-Mcp-Forwarded" not in got  # the draft's private record never reaches recipients
    delivered = email.message_from_bytes(got, policy=email.policy.default)
    original_id = re.search(rb"Message-ID: (<[^>]+>)", original).group(1).decode()  # type: ignore[union-attr]
    assert str(delivered["References"]).split()[-1] == original_id
    assert _digests(delivered) == expected  # type: ignore[arg-type]
    if forward_as == "attachment":
        (inner,) = [p for p in delivered.walk() if p.get_content_type() == "message/rfc822"]
        lf = original.replace(b"\r\n", b"\n")
        assert lf in TRACE.sub(b"", got.replace(b"\r\n", b"\n"))  # the original whole, byte for byte
        assert inner.get_filename() == "Fwd_ Invoice 2026-11.eml"
    else:
        body = delivered.get_body(("plain",))
        assert body is not None and "Please find the invoice attached." in body.get_content()
    assert "$Forwarded" in _flags(chain, alice)


async def test_a_folder_that_keeps_no_keywords_is_said_and_the_forward_is_sent(
    chain: SubmissionDovecot,
) -> None:
    """Where the original's folder keeps no keywords (PERMANENTFLAGS without ``\\*``, as on a server without
    keywords), the forward is sent and the answer says that the original was not marked."""
    alice, bob, carol = _setup(chain)
    chain.ensure_folder(alice, "Limited")
    chain.seed(alice, "Limited", [_invoice(chain.address(bob), chain.address(alice))])
    # The owner may look, read and set \Seen there, nothing else: PERMANENTFLAGS (\Seen).
    (chain.folder_path(alice, "Limited") / "dovecot-acl").write_text("owner lrs\n")
    async for mcp in open_client(
        _config(chain, alice), elicitation_callback=answering("accept"), mode="legacy"
    ):
        (found,) = (await mcp.ok("imap_search_messages", {"mailbox": "Limited"}))["messages"]
        saved = await mcp.ok(SAVE, {"forward_of": found["message_id"], "to": [chain.address(carol)]})
        envelope = await mcp.call(SEND, {"message_id": saved["message_id"]})
    assert (
        envelope["success"] and envelope["data"]["outcome"] == "sent" and envelope["data"]["status"] == "ok"
    )
    assert envelope["data"]["forwarded"] is False
    assert any("keeps no keywords" in w for w in envelope["meta"]["warnings"]), envelope["meta"]
    assert len(await _delivered(chain, carol, 1)) == 1
    assert "$Forwarded" not in _flags(chain, alice, "Limited")


@pytest.mark.skipif(not chromium.installed(), reason="chromium and chromium-driver are not installed")
async def test_the_approval_page_in_chromium_shows_the_forwarded_message_and_the_invitation_answer(
    chain: SubmissionDovecot,
) -> None:
    """A client without elicitation: the real approval page (asking/page_server/) in headless Chromium shows the
    forwarded message's subject and sender, and the invitation's answer in words; "Send" sends each once."""
    alice, bob, carol = _setup(chain)
    alice_at, bob_at, carol_at = (chain.address(u) for u in (alice, bob, carol))
    chain.seed(
        alice,
        "INBOX",
        [_invoice(bob_at, alice_at), invitation_mail(bob_at, alice_at, google(bob_at, [alice_at]))],
    )
    config = _config(chain, alice)
    app = AppContext.from_config(config)
    seen: list[str] = []

    app.approval_page = approval_page(chromium.sending_browser(seen), timeout_s=60)
    async for mcp in open_client(config, app):  # no elicitation: the page asks
        invoice = await _invitation_id(mcp, "Invoice")
        forward = await mcp.ok(SAVE, {"forward_of": invoice, "to": [carol_at]})
        sent = [await _decided(mcp, await mcp.call(SEND, {"message_id": forward["message_id"]}))]
        invitation = await _invitation_id(mcp, "Invitation")
        reply = await mcp.ok(SAVE, {"reply_to_invitation": invitation, "invitation_answer": "tentative"})
        sent.append(await _decided(mcp, await mcp.call(SEND, {"message_id": reply["message_id"]})))
    await _until(lambda: len(seen) == 2)  # the browser writes down each page once its answer came up
    assert [answer["data"]["outcome"] for answer in sent] == ["sent", "sent"]
    forwarded, answered = (page.splitlines() for page in seen)
    shown = f"the message 'Invoice 2026-11' of Acme Billing <{bob_at}>"
    assert any(line.startswith("Forwards") and line.endswith(shown) for line in forwarded), forwarded
    words = f"Tentatively accept 'Quarterly review', Tue 2 Dec 2025 10:00-11:00 Europe/Berlin (every occurrence), as {alice_at}"
    assert any(line.startswith("Invitation reply") and line.endswith(words) for line in answered), answered
    assert len(await _delivered(chain, carol, 1)) == 1 and len(await _delivered(chain, bob, 1)) == 1


def _fetched(chain: SubmissionDovecot, user: str, mailbox: str, section: str) -> bytes:
    """``BODY.PEEK[<section>]`` of the one message of ``mailbox``, as the server keeps it."""
    imap = imaplib.IMAP4("127.0.0.1", chain.plain_port)
    try:
        imap.login(user, chain.password)
        imap.select(mailbox, readonly=True)
        _, data = imap.fetch("1", f"(BODY.PEEK[{section}])")
    finally:
        imap.logout()
    item = data[0]
    assert isinstance(item, tuple)
    return bytes(item[1])


async def test_a_large_original_forwarded_whole_is_read_in_chunks_with_progress_and_kept_byte_exact(
    chain: SubmissionDovecot,
) -> None:
    """forward_as 'attachment' of a message over a few MB: its reading reports progress, in order, to its
    end, and the draft's message/rfc822 part is the original byte for byte."""
    alice, bob, carol = _setup(chain)
    big = EmailMessage(policy=email.policy.SMTP)
    big["From"], big["To"], big["Subject"] = chain.address(bob), chain.address(alice), "Big invoice"
    big["Message-ID"] = f"<big-{time.monotonic_ns()}@acme.example>"
    big.set_content("The scans.\n")
    big.add_attachment(
        os.urandom(5 * 1024 * 1024), maintype="application", subtype="pdf", filename="scan.pdf"
    )
    chain.seed(alice, "INBOX", [big.as_bytes()])
    original = _fetched(chain, alice, "INBOX", "")
    told: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, said: str | None) -> None:
        told.append((done, total, said))

    async for mcp in open_client(_config(chain, alice)):
        (found,) = (await mcp.ok("imap_search_messages", {"mailbox": "INBOX"}))["messages"]
        arguments = {
            "forward_of": found["message_id"],
            "forward_as": "attachment",
            "to": [chain.address(carol)],
        }
        result = await mcp.client.call_tool(SAVE, arguments, progress_callback=progress)
    envelope = result.structured_content or {}
    assert envelope["success"], envelope
    (attached,) = envelope["data"]["draft"]["attachments"]
    assert (attached["content_type"], attached["size_bytes"]) == ("message/rfc822", len(original))
    assert len(told) >= 3 and [done for done, _, _ in told] == sorted(done for done, _, _ in told)
    assert told[-1][:2] == (len(original), len(original))
    assert all(said == "reading the forwarded message" for _, _, said in told), told
    assert _fetched(chain, alice, "Drafts", "2") == original  # the original whole, byte for byte


def _names(saved: dict[str, Any]) -> list[str]:
    return [attachment["name"] for attachment in saved["draft"]["attachments"]]


async def test_a_revised_forward_keeps_the_replaced_drafts_attachments_unless_attachments_is_given(
    chain: SubmissionDovecot, tmp_path: Path
) -> None:
    """forward_of with replace_message_id: what the forward carries is read afresh and never kept twice
    (in either form), the replaced draft's other attachments are kept, and attachments given replaces
    them; the last draft carries the invoice's PDF and image byte-exact."""
    alice, bob, carol = _setup(chain)
    invoice = _invoice(chain.address(bob), chain.address(alice))
    chain.seed(alice, "INBOX", [invoice])
    notes = tmp_path / "notes.txt"
    notes.write_text("Cost centre 4711.\n")
    config = _config(chain, alice, attachment_dirs=[str(tmp_path)])
    async for mcp in open_client(config, elicitation_callback=answering("accept")):
        (found,) = (await mcp.ok("imap_search_messages", {"mailbox": "INBOX"}))["messages"]
        forward = {"forward_of": found["message_id"], "to": [chain.address(carol)]}
        first = await mcp.ok(SAVE, {**forward, "attachments": [str(notes)]})
        kept = await mcp.ok(SAVE, {**forward, "body_text": "v2", "replace_message_id": first["message_id"]})
        whole = await mcp.ok(
            SAVE, {**forward, "forward_as": "attachment", "replace_message_id": kept["message_id"]}
        )
        given = await mcp.ok(SAVE, {**forward, "replace_message_id": whole["message_id"], "attachments": []})
    assert _names(first) == _names(kept) == ["invoice.pdf", "logo.png", "notes.txt"]
    assert kept["draft"]["attachments"][2]["source"] == "kept from the draft it replaces"
    assert _names(whole) == ["Invoice 2026-11.eml", "notes.txt"]
    assert _names(given) == ["invoice.pdf", "logo.png"]
    (draft,) = _files(chain, alice, "Drafts")
    parsed = email.message_from_bytes(draft.read_bytes(), policy=email.policy.default)
    assert _digests(parsed) == _digests(email.message_from_bytes(invoice, policy=email.policy.default))
    assert len(_files(chain, alice, "Trash")) == 3


@pytest.mark.parametrize("forward_as", ["inline", "attachment"])
async def test_a_forwarded_part_refused_names_forward_of_with_its_cause(
    chain: SubmissionDovecot, forward_as: str
) -> None:
    """A part the forward carries (inline: a 100 KB PDF; attachment: the message whole) over
    max_attachment_bytes: limit_exceeded naming forward_of, the argument the user wrote, and the setting."""
    alice, bob, carol = _setup(chain)
    scan = EmailMessage(policy=email.policy.SMTP)
    scan["From"], scan["To"], scan["Subject"] = chain.address(bob), chain.address(alice), "Scan"
    scan.set_content("The scan.\n")
    scan.add_attachment(os.urandom(100_000), maintype="application", subtype="pdf", filename="scan.pdf")
    chain.seed(alice, "INBOX", [scan.as_bytes()])
    async for mcp in open_client(_config(chain, alice, max_attachment_bytes=65_536)):
        (found,) = (await mcp.ok("imap_search_messages", {"mailbox": "INBOX"}))["messages"]
        arguments = {
            "forward_of": found["message_id"],
            "forward_as": forward_as,
            "to": [chain.address(carol)],
        }
        failed = await mcp.fail(SAVE, arguments, "limit_exceeded")
    error = failed["error"]
    assert error["details"]["parameter"] == "forward_of", error
    assert error["details"]["setting"] == "max_attachment_bytes", error
    assert error["message"].startswith("forward_of: ") and "max_attachment_bytes" in error["message"], error
    assert error["details"]["part_id"] == ("2" if forward_as == "inline" else ""), error
    assert _files(chain, alice, "Drafts") == []


async def test_an_agent_forwards_an_invoice_and_accepts_an_invitation_through_a_client_that_asks(
    chain: SubmissionDovecot,
) -> None:
    """Issue 59's "done when", the client with elicitation: one agent's session forwards the invoice with its
    PDF and image to accounting and accepts the invitation; the user is asked each time, in words; each
    recipient gets its message once, the attachments byte-exact (sha256)."""
    alice, bob, carol = _setup(chain)
    alice_at, bob_at, carol_at = (chain.address(u) for u in (alice, bob, carol))
    invoice = _invoice(bob_at, alice_at)
    chain.seed(alice, "INBOX", [invoice, invitation_mail(bob_at, alice_at, google(bob_at, [alice_at]))])
    received, accepting = _received(chain), answering("accept")
    async for mcp in open_client(_config(chain, alice), elicitation_callback=accepting, mode="legacy"):
        forward = await mcp.ok(SAVE, {"forward_of": await _invitation_id(mcp, "Invoice"), "to": [carol_at]})
        sent = [await mcp.ok(SEND, {"message_id": forward["message_id"]})]
        arguments = {
            "reply_to_invitation": await _invitation_id(mcp, "Invitation"),
            "invitation_answer": "accept",
        }
        reply = await mcp.ok(SAVE, arguments)
        sent.append(await mcp.ok(SEND, {"message_id": reply["message_id"]}))
    assert [(s["outcome"], s["accepted"]) for s in sent] == [("sent", [carol_at]), ("sent", [bob_at])]
    forwarded, answered = accepting.asked
    assert f"Forwards: the message 'Invoice 2026-11' of Acme Billing <{bob_at}>" in forwarded.splitlines()
    assert "invoice.pdf" in forwarded and "Invitation reply: Accept 'Quarterly review'" in answered
    (got,) = await _delivered(chain, carol, 1)
    (answer,) = await _delivered(chain, bob, 1)
    assert _received(chain) == received + 2
    delivered = email.message_from_bytes(got, policy=email.policy.default)
    assert _digests(delivered) == _digests(email.message_from_bytes(invoice, policy=email.policy.default))
    attendee = _reply_of(answer)
    assert str(attendee).lower() == f"mailto:{alice_at}" and attendee.params["PARTSTAT"] == "ACCEPTED"


async def test_a_revised_invitation_reply_carries_only_its_new_answer(chain: SubmissionDovecot) -> None:
    """reply_to_invitation with replace_message_id (accepted, then declined): the replaced draft's REPLY is
    not kept as an attachment beside the new one; the draft holds one calendar part, the new PARTSTAT."""
    alice, bob, _ = _setup(chain)
    alice_at, bob_at = chain.address(alice), chain.address(bob)
    chain.seed(alice, "INBOX", [invitation_mail(bob_at, alice_at, google(bob_at, [alice_at]))])
    async for mcp in open_client(_config(chain, alice), elicitation_callback=answering("accept")):
        answer = {"reply_to_invitation": await _invitation_id(mcp)}
        first = await mcp.ok(SAVE, {**answer, "invitation_answer": "accept"})
        revised = await mcp.ok(
            SAVE, {**answer, "invitation_answer": "decline", "replace_message_id": first["message_id"]}
        )
    assert revised["draft"]["attachments"] == []
    (draft,) = _files(chain, alice, "Drafts")
    raw = draft.read_bytes()
    assert raw.count(b"Content-Type: text/calendar") == 1
    assert _reply_of(raw).params["PARTSTAT"] == "DECLINED"


async def test_a_forward_the_imap_servers_appendlimit_cannot_take_is_refused_naming_forward_of() -> None:
    """The invoice's PDF and image (inline), or the invoice whole (attachment), take the draft past the
    IMAP server's APPENDLIMIT: limit_exceeded naming forward_of and the server's limit, said once that
    nothing was saved, and nothing is. (Both ways of forwarding on one server: it costs a second to start.)"""
    with SubmissionDovecot(capabilities="+APPENDLIMIT=70000") as limited:
        alice, bob, carol = _setup(limited)
        limited.seed(alice, "INBOX", [_invoice(limited.address(bob), limited.address(alice))])
        async for mcp in open_client(_config(limited, alice)):
            (found,) = (await mcp.ok("imap_search_messages", {"mailbox": "INBOX"}))["messages"]
            for forward_as in ("inline", "attachment"):
                arguments = {
                    "forward_of": found["message_id"],
                    "forward_as": forward_as,
                    "to": [limited.address(carol)],
                }
                error = (await mcp.fail(SAVE, arguments, "limit_exceeded"))["error"]
                said, details = error["message"], error["details"]
                assert (details["parameter"], details["limit"]) == ("forward_of", 70_000), error
                assert said.startswith("forward_of: ") and "APPENDLIMIT" in said, error
                assert said.lower().count("nothing was saved") == 1, error
                assert _files(limited, alice, "Drafts") == [], forward_as
