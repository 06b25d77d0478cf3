"""Attachments and Bcc on imap_save_draft (issue 59 items 1, 4, 5), through the SDK's MCP client against the
real submission chain (Dovecot submission -> Exim -> LMTP, tests/support/servers/submission.py): parts of a message
in the account and files of ``attachment_dirs``, by reference, arrive byte-exact (sha256 of each decoded
part); Bcc recipients get the message and no recipient's copy shows them or where an attachment came from;
the user sees each attachment's name, type, size and source in the client's question, on the approval page
in headless Chromium and in ``dry_run``; bad references answer stable codes naming the argument."""

from __future__ import annotations

import email.policy
import hashlib
import os
from email.message import EmailMessage
from email.parser import BytesParser
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import pytest
from mcp import Client

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.asking.page import approval_page
from mail_imap_mcp.mime.building import SOURCE_HEADER
from tests.support.clients import chromium
from tests.support.clients.elicitation import answering
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import make_config, open_client
from tests.support.servers.submission import DOMAIN, SubmissionDovecot
from tests.support.shared.draft_attachments import PDF, PNG, SAVE, _invoice_parts, _seeded
from tests.support.shared.send import (
    TOOL,
    TRACE,
    _decided,
    _delivered,
    _files,
    _page_and_answer,
    _settings,
    _setup,
    _until,
    desktop_server,
)

pytestmark = pytest.mark.anyio

SOURCE = "from the message 'Invoice 2026-11' of Acme Billing"


def _parts(raw: bytes) -> dict[str, tuple[str, str]]:
    """Each attachment of ``raw`` by name: its type and the sha256 of its decoded bytes."""
    message = BytesParser(policy=email.policy.default).parsebytes(raw)
    assert isinstance(message, EmailMessage)
    found = {}
    for part in message.iter_attachments():
        payload = part.get_payload(decode=True)
        assert isinstance(payload, bytes)
        found[str(part.get_filename())] = (part.get_content_type(), hashlib.sha256(payload).hexdigest())
    return found


EXPECTED = {
    "Rechnung März.pdf": ("application/pdf", hashlib.sha256(PDF).hexdigest()),
    "logo.png": ("image/png", hashlib.sha256(PNG).hexdigest()),
}


async def test_a_draft_with_a_pdf_and_an_image_from_a_message_arrives_byte_exact_and_bcc_is_unseen(
    chain: SubmissionDovecot,
) -> None:
    sender, bob, carol = _seeded(chain)
    accepting = answering("accept")
    settings = _settings(chain, sender, chain.submission_port, "starttls", write_enabled=True)
    async for mcp in open_client(make_config({"default": settings}), elicitation_callback=accepting):
        _, parts = await _invoice_parts(mcp)
        arguments: dict[str, Any] = {
            "to": [chain.address(bob)],
            "bcc": [chain.address(carol)],
            "subject": "Invoice for accounting",
            "body_text": "Here it is.",
            "attachments": parts,
        }
        dry = await mcp.ok(SAVE, {**arguments, "dry_run": True})
        assert _files(chain, sender, "Drafts") == []
        saved = await mcp.ok(SAVE, arguments)
        sent = await mcp.ok(TOOL, {"message_id": saved["message_id"]})
    for data in (dry, saved):
        assert [(a["name"], a["content_type"], a["size_bytes"], a["source"]) for a in data["draft"]["attachments"]] == [
            ("Rechnung März.pdf", "application/pdf", len(PDF), SOURCE),
            ("logo.png", "image/png", len(PNG), SOURCE),
        ]  # fmt: skip
        assert data["draft"]["headers"]["Bcc"] == chain.address(carol)
    assert sent["outcome"] == "sent" and sorted(sent["accepted"]) == sorted(map(chain.address, (bob, carol)))
    (question,) = accepting.asked
    lines = question.splitlines()
    assert f"Attachments: Rechnung März.pdf (application/pdf, {len(PDF):,} bytes), {SOURCE}" in lines
    assert f"Attachments: logo.png (image/png, {len(PNG):,} bytes), {SOURCE}" in lines
    assert f"Bcc: {chain.address(carol)}" in lines
    (to_bob,) = await _delivered(chain, bob, 1)
    (to_carol,) = await _delivered(chain, carol, 1)
    for got in (to_bob, to_carol):
        assert _parts(got) == EXPECTED
        as_sent = TRACE.sub(b"", got)  # the delivery's Delivered-To names carol in her own copy
        assert b"Bcc:" not in as_sent and chain.address(carol).encode() not in as_sent
        assert SOURCE_HEADER.encode() not in got and b"Invoice 2026-11" not in got
    (kept,) = _files(chain, sender, "Sent")
    assert (
        _parts(kept.read_bytes()) == EXPECTED
        and b"Bcc: " + chain.address(carol).encode() in kept.read_bytes()
    )


async def test_a_reply_with_a_file_from_attachment_dirs_arrives_byte_exact(
    chain: SubmissionDovecot, tmp_path: Path
) -> None:
    sender, bob, _ = _setup(chain)
    documents = tmp_path / "Documents"
    documents.mkdir()
    (documents / "report.pdf").write_bytes(PDF)
    question = EmailMessage(policy=email.policy.SMTP)
    question["From"], question["To"], question["Subject"] = (
        chain.address(bob),
        chain.address(sender),
        "Report?",
    )
    question["Message-ID"] = f"<q-{os.urandom(4).hex()}@{DOMAIN}>"
    question.set_content("Could you send the report?\n")
    chain.seed(sender, "INBOX", [question.as_bytes()])
    settings = _settings(chain, sender, chain.submission_port, "starttls", write_enabled=True)
    config = make_config({"default": settings}, attachment_dirs=[str(documents)])
    accepting = answering("accept")
    async for mcp in open_client(config, elicitation_callback=accepting):
        found = await mcp.ok("imap_search_messages", {"mailbox": "INBOX", "subject": "Report?"})
        asked = found["messages"][0]["message_id"]
        saved = await mcp.ok(
            SAVE, {"in_reply_to": asked, "body_text": "Attached.", "attachments": ["report.pdf"]}
        )
        sent = await mcp.ok(TOOL, {"message_id": saved["message_id"]})
    (listed,) = saved["draft"]["attachments"]
    assert (listed["name"], listed["size_bytes"], listed["source"]) == (
        "report.pdf", len(PDF), "the file Documents/report.pdf",
    )  # fmt: skip
    assert "the file Documents/report.pdf" in accepting.asked[0]
    assert sent["outcome"] == "sent"
    (got,) = await _delivered(chain, bob, 1)
    assert _parts(got) == {"report.pdf": ("application/pdf", hashlib.sha256(PDF).hexdigest())}
    assert b"Subject: Re: Report?" in got and b"Documents" not in got


@pytest.mark.skipif(not chromium.installed(), reason="chromium and chromium-driver are not installed")
async def test_the_approval_page_in_chromium_lists_each_attachment_with_its_source(
    chain: SubmissionDovecot,
) -> None:
    sender, bob, _ = _seeded(chain)
    config = make_config(
        {"default": _settings(chain, sender, chain.submission_port, "starttls", write_enabled=True)}
    )
    app = AppContext.from_config(config)
    seen: list[str] = []

    app.approval_page = approval_page(chromium.sending_browser(seen), timeout_s=60)
    async for mcp in open_client(config, app):  # no elicitation: the page asks
        _, parts = await _invoice_parts(mcp)
        saved = await mcp.ok(SAVE, {"to": [chain.address(bob)], "subject": "Invoice", "attachments": parts})
        answer = await _decided(mcp, await mcp.call(TOOL, {"message_id": saved["message_id"]}))
    await _until(lambda: bool(seen))  # the browser writes down the page once its answer came up
    (page,) = seen
    assert "Attachments (2)" in page
    for name, kind, size in (("Rechnung März.pdf", "application/pdf", PDF), ("logo.png", "image/png", PNG)):
        line = next(line for line in page.splitlines() if line.startswith(name))
        assert kind in line and SOURCE in line and f"{len(size):,}".split(",")[0] in line
    assert answer["data"]["outcome"] == "sent" and _parts((await _delivered(chain, bob, 1))[0]) == EXPECTED


async def test_bad_references_answer_stable_codes_naming_the_argument(
    chain: SubmissionDovecot, tmp_path: Path
) -> None:
    sender, bob, _ = _seeded(chain)
    outside = tmp_path / "secret.txt"
    outside.write_text("secret")
    documents = tmp_path / "Documents"
    documents.mkdir()
    settings = _settings(chain, sender, chain.submission_port, "starttls", write_enabled=True)
    async for mcp in open_client(make_config({"default": settings}, attachment_dirs=[str(documents)])):
        invoice, _ = await _invoice_parts(mcp)
        base = {"to": [chain.address(bob)], "subject": "x"}
        gone = invoice.rsplit(":", 1)[0] + ":999999"
        _, account, mailbox, validity, uid = invoice.split(":")
        no_part_uri = f"imap://{account}/mailbox/{mailbox}/message/{validity}/{uid}/attachment/7"
        answers = {
            "no message": await mcp.fail(
                SAVE, {**base, "attachments": [f"{invoice}#2", f"{gone}#2"]}, "not_found"
            ),
            "no part": await mcp.fail(SAVE, {**base, "attachments": [f"{invoice}#9"]}, "not_found"),
            "body": await mcp.fail(SAVE, {**base, "attachments": [f"{invoice}#1"]}, "invalid_input"),
            "no part_id": await mcp.fail(SAVE, {**base, "attachments": [invoice]}, "invalid_input"),
            "not a uri": await mcp.fail(SAVE, {**base, "attachments": ["imap://x"]}, "invalid_input"),
            "uri": await mcp.fail(SAVE, {**base, "attachments": [no_part_uri]}, "not_found"),
            "outside": await mcp.fail(SAVE, {**base, "attachments": [str(outside)]}, "permission_denied"),
            "dotdot": await mcp.fail(SAVE, {**base, "attachments": ["../secret.txt"]}, "permission_denied"),
        }
    assert answers.pop("no message")["error"]["details"]["parameter"] == "attachments[1]"
    for what, failed in answers.items():
        assert failed["error"]["details"]["parameter"] == "attachments[0]", (what, failed)
        assert (
            failed["error"]["message"].startswith("attachments[0]")
            or "'attachments[0]'" in failed["error"]["message"]
        ), failed
    for failed in (answers["outside"], answers["dotdot"]):
        assert failed["error"]["details"]["setting"] == "attachment_dirs", failed
        assert "secret" not in failed["error"]["message"], failed
    assert _files(chain, sender, "Drafts") == []


async def test_a_draft_larger_than_the_submission_servers_size_is_refused_before_it_is_saved() -> None:
    with SubmissionDovecot(max_mail_size=100_000) as small:
        sender, bob, _ = _seeded(small)
        settings = _settings(small, sender, small.submission_port, "starttls", write_enabled=True)
        async for mcp in open_client(make_config({"default": settings})):
            _, parts = await _invoice_parts(mcp)
            failed = await mcp.fail(
                SAVE, {"to": [small.address(bob)], "attachments": parts}, "limit_exceeded"
            )
        assert failed["error"]["details"]["parameter"] == "attachments"
        assert "SIZE" in failed["error"]["message"] and "100,000" in failed["error"]["message"]
        assert _files(small, sender, "Drafts") == []


async def test_a_revision_keeps_its_attachments_unless_asked_otherwise(chain: SubmissionDovecot) -> None:
    sender, bob, _ = _seeded(chain)
    settings = _settings(chain, sender, chain.submission_port, "starttls", write_enabled=True)
    async for mcp in open_client(
        make_config({"default": settings}), elicitation_callback=answering("accept")
    ):
        _, parts = await _invoice_parts(mcp)
        first = await mcp.ok(SAVE, {"to": [chain.address(bob)], "subject": "v1", "attachments": parts})
        kept = await mcp.ok(
            SAVE, {"to": [chain.address(bob)], "subject": "v2", "replace_message_id": first["message_id"]}
        )
        fewer = await mcp.ok(
            SAVE, {"to": [chain.address(bob)], "subject": "v3", "replace_message_id": kept["message_id"], "attachments": parts[1:]}
        )  # fmt: skip
        none = await mcp.ok(
            SAVE, {"to": [chain.address(bob)], "subject": "v4", "replace_message_id": fewer["message_id"], "attachments": []}
        )  # fmt: skip
    assert [a["name"] for a in kept["draft"]["attachments"]] == ["Rechnung März.pdf", "logo.png"]
    assert [a["name"] for a in fewer["draft"]["attachments"]] == ["logo.png"]
    assert none["draft"]["attachments"] == []
    (draft,) = _files(chain, sender, "Drafts")
    assert _parts(draft.read_bytes()) == {}
    trashed = sorted(len(_parts(p.read_bytes())) for p in _files(chain, sender, "Trash"))
    assert trashed == [1, 2, 2]


async def test_a_bcc_outside_allowed_recipients_is_refused_at_sending_naming_it(
    chain: SubmissionDovecot,
) -> None:
    sender, bob, _ = _setup(chain)
    settings = _settings(chain, sender, chain.submission_port, "starttls", write_enabled=True)
    async for mcp in open_client(
        make_config({"default": settings}), elicitation_callback=answering("accept")
    ):
        saved = await mcp.ok(
            SAVE, {"to": [chain.address(bob)], "bcc": ["eve@elsewhere.example"], "body_text": "x"}
        )
        refused = await mcp.fail(TOOL, {"message_id": saved["message_id"]}, "permission_denied")
    assert refused["error"]["details"]["recipients"] == ["eve@elsewhere.example"]
    assert await _delivered(chain, bob, 0) == []


async def test_reading_a_large_attachment_reports_progress(chain: SubmissionDovecot) -> None:
    """An attachment over a few MB (6 MiB here) reports how far it was read, in order, to its end."""
    sender, bob, _ = _setup(chain)
    big = os.urandom(6 * 1024 * 1024)
    message = EmailMessage(policy=email.policy.SMTP)
    message["From"], message["To"], message["Subject"] = f"a@{DOMAIN}", chain.address(sender), "Big"
    message.set_content("big\n")
    message.add_attachment(big, maintype="application", subtype="octet-stream", filename="big.bin")
    chain.seed(sender, "INBOX", [message.as_bytes()])
    settings = _settings(chain, sender, chain.submission_port, "starttls", write_enabled=True)
    told: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, said: str | None) -> None:
        told.append((done, total, said))

    async for mcp in open_client(make_config({"default": settings})):
        found = await mcp.ok("imap_search_messages", {"mailbox": "INBOX", "subject": "Big"})
        big_id = found["messages"][0]["message_id"]
        result = await mcp.client.call_tool(
            SAVE, {"to": [chain.address(bob)], "attachments": [f"{big_id}#2"]}, progress_callback=progress
        )
    envelope = result.structured_content or {}
    assert envelope["success"], envelope
    assert envelope["data"]["draft"]["attachments"][0]["size_bytes"] == len(big)
    assert len(told) >= 3 and [done for done, _, _ in told] == sorted(done for done, _, _ in told)
    assert told[-1][0] == len(big) and all(said and "attachment 1 of 1" in said for _, _, said in told)


async def test_a_draft_larger_than_the_imap_servers_appendlimit_is_refused_before_it_is_saved() -> None:
    with SubmissionDovecot(capabilities="+APPENDLIMIT=120000") as limited:
        sender, bob, _ = _seeded(limited)
        settings = _settings(limited, sender, limited.submission_port, "starttls", write_enabled=True)
        async for mcp in open_client(make_config({"default": settings})):
            _, (pdf, png) = await _invoice_parts(mcp)
            failed = await mcp.fail(
                SAVE, {"to": [limited.address(bob)], "attachments": [pdf]}, "limit_exceeded"
            )
            fits = await mcp.ok(SAVE, {"to": [limited.address(bob)], "attachments": [png]})
        assert failed["error"]["details"] == {"parameter": "attachments", "size_bytes": ANY, "limit": 120_000}
        assert "APPENDLIMIT" in failed["error"]["message"]
        assert fits["saved"] and len(_files(limited, sender, "Drafts")) == 1


@pytest.mark.skipif(not chromium.installed(), reason="chromium and chromium-driver are not installed")
async def test_claude_desktops_path_shows_each_attachment_on_the_page_and_sends_them_byte_exact(
    chain: SubmissionDovecot, tmp_path: Path
) -> None:
    """The draft saved by one client; the send through the server as Claude Desktop runs it (stdio, no
    elicitation: the browser page, pressed "Send" in headless Chromium), which lists each attachment with
    its source; the recipient gets both byte-exact."""
    sender, bob, _ = _seeded(chain)
    settings = _settings(chain, sender, chain.submission_port, "starttls", write_enabled=True)
    async for mcp in open_client(make_config({"default": settings})):
        _, parts = await _invoice_parts(mcp)
        saved = await mcp.ok(SAVE, {"to": [chain.address(bob)], "subject": "Invoice", "attachments": parts})
    done = tmp_path / "page.txt"
    async with Client(desktop_server(chain, sender, tmp_path, "send", done)) as client:
        mcp = EnvelopeClient(client)
        answer = await _decided(mcp, await mcp.call(TOOL, {"message_id": saved["message_id"]}))
    page, answered = await _page_and_answer(done)
    assert answered.startswith("Approved") and answer["data"]["outcome"] == "sent", answer
    for name in ("Rechnung März.pdf", "logo.png"):
        (line,) = [line for line in page.splitlines() if line.startswith(name)]
        assert SOURCE in line, line
    (got,) = await _delivered(chain, bob, 1)
    assert _parts(got) == EXPECTED and SOURCE_HEADER.encode() not in got
