"""Hostile invitations and file names given to imap_save_draft (issue 78), through the SDK's MCP client on
the real submission chain's Dovecot: each refusal is a named error (never ``internal``) and leaves Drafts
empty; a cancel from someone other than the organizer (even one copying the ORGANIZER) leaves the
invitation answerable; a reply to an invitation that spells the account's address in another case is from
the configured address."""

from __future__ import annotations

import email
import email.policy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mail_imap_mcp.config import Config
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import make_config, open_client
from tests.support.mail.invitations import google, invitation_mail
from tests.support.servers.submission import DOMAIN, SubmissionDovecot
from tests.support.shared.send import _files, _settings, _setup

pytestmark = pytest.mark.anyio

SAVE = "imap_save_draft"


@pytest.fixture(scope="module")
def chain() -> Iterator[SubmissionDovecot]:
    with SubmissionDovecot() as server:
        yield server


def _config(chain: SubmissionDovecot, user: str, **server: Any) -> Config:
    return make_config(
        {"default": _settings(chain, user, chain.submission_port, "starttls", write_enabled=True)}, **server
    )


async def _only_message(mcp: EnvelopeClient, mailbox: str = "INBOX") -> str:
    (found,) = (await mcp.ok("imap_search_messages", {"mailbox": mailbox}))["messages"]
    return str(found["message_id"])


ORGANIZER_LINE = "ORGANIZER;CN=Bob Organizer:mailto:"


@pytest.mark.parametrize(
    ("organizer_line", "named"),
    [
        (f"ORGANIZER;CN=Bob:mailto:bob@{DOMAIN},spy@{DOMAIN}", "organizer"),
        (f"ORGANIZER;CN=Bob:mailto:bob@{DOMAIN}?bcc=spy@{DOMAIN}", "organizer"),
        (f'ORGANIZER;CN="Bob\\r\\nBcc: spy@{DOMAIN}":mailto:bob@{DOMAIN}', "organizer's name"),
        (f"ORGANIZER;CN=Bob\\nspy@{DOMAIN}:mailto:bob@{DOMAIN}", "organizer's name"),
    ],
    ids=["two-addresses", "bcc-query", "crlf-in-quoted-cn", "newline-in-cn"],
)
async def test_a_hostile_organizer_is_a_named_refusal_and_nothing_is_saved(
    chain: SubmissionDovecot, organizer_line: str, named: str
) -> None:
    alice, _, _ = _setup(chain)
    alice_at = chain.address(alice)
    request = google(f"bob@{DOMAIN}", [alice_at])
    hostile = "\r\n".join(
        organizer_line if line.startswith(ORGANIZER_LINE) else line for line in request.split("\r\n")
    )
    assert hostile != request
    chain.seed(alice, "INBOX", [invitation_mail(f"bob@{DOMAIN}", alice_at, hostile)])
    async for mcp in open_client(_config(chain, alice)):
        invitation = await _only_message(mcp)
        failed = await mcp.fail(
            SAVE, {"reply_to_invitation": invitation, "invitation_answer": "accept"}, "invalid_input"
        )
    error = failed["error"]
    assert error["details"]["reason"] == "calendar_malformed", error
    assert named in error["message"] and "spy@" not in error["message"], error
    assert _files(chain, alice, "Drafts") == []


@pytest.mark.parametrize("name", ["report\r\nBcc: spy@mail.test.pdf", "report\n.pdf", "report\r.pdf"])
async def test_a_file_whose_name_holds_a_line_break_is_a_named_refusal_and_nothing_is_saved(
    chain: SubmissionDovecot, tmp_path: Path, name: str
) -> None:
    sender, bob, _ = _setup(chain)
    documents = tmp_path / "Documents"
    documents.mkdir()
    (documents / name).write_bytes(b"%PDF-1.4\n%%EOF\n")
    (documents / "plain.pdf").symlink_to(documents / name)
    config = _config(chain, sender, attachment_dirs=[str(documents)])
    base = {"to": [chain.address(bob)], "subject": "Report"}
    async for mcp in open_client(config):
        failures = [
            await mcp.fail(SAVE, {**base, "attachments": [str(documents / name)]}, "invalid_input"),
            await mcp.fail(SAVE, {**base, "attachments": ["plain.pdf"]}, "invalid_input"),
        ]
    for failed in failures:
        error = failed["error"]
        assert error["details"]["parameter"] == "attachments[0]", error
        assert "control character" in error["message"] and "\n" not in error["message"], error
    assert _files(chain, sender, "Drafts") == []


async def test_a_cancel_from_someone_not_the_organizer_leaves_the_invitation_answerable(
    chain: SubmissionDovecot,
) -> None:
    alice, bob, mallory = _setup(chain)
    alice_at, bob_at, mallory_at = (chain.address(u) for u in (alice, bob, mallory))
    chain.ensure_folder(alice, "Calendar")
    chain.seed(alice, "Calendar", [invitation_mail(bob_at, alice_at, google(bob_at, [alice_at]))])
    forged = google(mallory_at, [alice_at], sequence=1, method="CANCEL")
    chain.seed(
        alice, "INBOX", [invitation_mail(mallory_at, alice_at, forged, subject="Cancelled", method="CANCEL")]
    )
    async for mcp in open_client(_config(chain, alice)):
        invitation = await _only_message(mcp, "Calendar")
        saved = await mcp.ok(SAVE, {"reply_to_invitation": invitation, "invitation_answer": "accept"})
    assert saved["draft"]["headers"]["To"] == f"Bob Organizer <{bob_at}>"
    assert len(_files(chain, alice, "Drafts")) == 1


@pytest.mark.parametrize(
    ("sender", "counts"), [("", False), ("Sender: {bob}\r\n", True)], ids=["from mallory", "sent by bob"]
)
async def test_a_cancel_copying_the_organizer_counts_only_from_the_organizer(
    chain: SubmissionDovecot, sender: str, counts: bool
) -> None:
    """Issue 89 item 5 (S8-4 partly): a CANCEL whose ORGANIZER copies the invitation's, mailed by someone
    else, left the genuine invitation unanswerable; only a message from the organizer (From or Sender)
    cancels it."""
    alice, bob, mallory = _setup(chain)
    alice_at, bob_at, mallory_at = (chain.address(u) for u in (alice, bob, mallory))
    chain.ensure_folder(alice, "Calendar")
    chain.seed(alice, "Calendar", [invitation_mail(bob_at, alice_at, google(bob_at, [alice_at]))])
    copied = invitation_mail(
        mallory_at, alice_at, google(bob_at, [alice_at], method="CANCEL"), method="CANCEL"
    )
    chain.seed(
        alice,
        "INBOX",
        [copied.replace(b"MIME-Version", sender.format(bob=bob_at).encode() + b"MIME-Version")],
    )
    async for mcp in open_client(_config(chain, alice)):
        invitation = await _only_message(mcp, "Calendar")
        args = {"reply_to_invitation": invitation, "invitation_answer": "accept"}
        if counts:
            refused = await mcp.fail(SAVE, args, "conflict")
            assert refused["error"]["details"]["reason"] == "invitation_cancelled", refused
        else:
            saved = await mcp.ok(SAVE, args)
            assert saved["draft"]["headers"]["To"] == f"Bob Organizer <{bob_at}>"
    assert len(_files(chain, alice, "Drafts")) == (0 if counts else 1)


async def test_a_reply_to_an_invitation_spelling_the_address_in_capitals_is_from_the_configured_one(
    chain: SubmissionDovecot,
) -> None:
    alice, bob, _ = _setup(chain)
    alice_at, bob_at = chain.address(alice), chain.address(bob)
    shouted = alice_at.upper()
    chain.seed(alice, "INBOX", [invitation_mail(bob_at, shouted, google(bob_at, [shouted]))])
    async for mcp in open_client(_config(chain, alice)):
        invitation = await _only_message(mcp)
        saved = await mcp.ok(SAVE, {"reply_to_invitation": invitation, "invitation_answer": "accept"})
    assert saved["draft"]["headers"]["From"] == alice_at
    (draft,) = _files(chain, alice, "Drafts")
    message = email.message_from_bytes(draft.read_bytes(), policy=email.policy.default)
    assert message["From"] == alice_at
    assert str(message["Message-ID"]).rstrip(">").endswith(f"@{DOMAIN}")
