"""The claim of a draft on the IMAP server before it is sent (services/send_claim.py), on real servers: two
claims made from one MODSEQ, the second stored after the first, leave one winner on Dovecot and Cyrus
(``UNCHANGEDSINCE`` answered ``[MODIFIED]``); Courier, without CONDSTORE, holds no claim and keeps the draft
as it was (the machine's record is the guard there: tests/integration/drafts_and_sending/test_send_once.py)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest

from mail_imap_mcp.credentials.logins import credentials_for
from mail_imap_mcp.imap.backend import ImapMail
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.imap.session_writes import FlagState
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.services.send_claim import CLAIM_KEYWORD, Claim, carries_claim, claim_draft, release_draft
from tests.support.accounts import account_settings
from tests.support.clients.in_process import make_config
from tests.support.servers.imapserver import ImapServer

DRAFT = (
    b"From: <a@example.org>\r\nTo: <b@example.org>\r\nSubject: Claimed\r\n"
    b"Message-ID: <claimed@example.org>\r\n\r\nOnce.\r\n"
)


@pytest.fixture(params=["dovecot", "cyrus", "courier"])
def server(request: pytest.FixtureRequest) -> ImapServer:
    return request.getfixturevalue(request.param)  # type: ignore[no-any-return]


def _draft(server: ImapServer) -> tuple[str, MessageRef]:
    user, drafts = server.new_user(), server.mailbox_name("Drafts")
    server.seed(user, drafts, [DRAFT], flags="\\Draft")
    with server.connect(user, tls=False, starttls=False) as client:
        uidvalidity = int(client.select_folder(drafts, readonly=True)[b"UIDVALIDITY"])
        (uid,) = client.search("ALL")
    return user, MessageRef("default", drafts, uidvalidity, uid)


def _flags(server: ImapServer, user: str, ref: MessageRef) -> list[str]:
    with server.connect(user, tls=False, starttls=False) as client:
        client.select_folder(ref.mailbox, readonly=True)
        return [flag.decode() for flag in client.get_flags([ref.uid])[ref.uid]]


@pytest.fixture
def connections(server: ImapServer) -> Iterator[tuple[str, MessageRef, ImapMail, ImapMail]]:
    """A draft and two connections to its account (two servers on two machines)."""
    user, ref = _draft(server)
    account = make_config({"default": account_settings(server, user)}).accounts["default"]
    first, second = (
        AccountConnection("default", account, credentials=credentials_for("default", account))
        for _ in range(2)
    )
    yield user, ref, ImapMail(first), ImapMail(second)
    first.close()
    second.close()


def test_of_two_claims_read_from_one_modseq_only_the_one_stored_first_wins(
    server: ImapServer,
    connections: tuple[str, MessageRef, ImapMail, ImapMail],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The second server claims the draft between the first one's read of its MODSEQ and its STORE: the
    first is answered ``[MODIFIED]`` and stands back (a plain STORE would have let both send)."""
    user, ref, first, second = connections
    read = ImapSession.fetch_flags
    others: list[Claim] = []
    started: list[bool] = []

    def then_the_other_claims(
        session: ImapSession, uids: Sequence[int], *, modseq: bool = False
    ) -> dict[int, FlagState]:
        found = read(session, uids, modseq=modseq)
        if modseq and not started:
            started.append(True)  # once: the other claim's own read passes straight through
            others.append(claim_draft(second, ref))
        return found

    monkeypatch.setattr(ImapSession, "fetch_flags", then_the_other_claims)
    claimed = claim_draft(first, ref)
    if server.kind == "courier":
        assert (claimed, others) == (Claim.UNSUPPORTED, [])
        assert not carries_claim(_flags(server, user, ref))
        return
    assert (claimed, others) == (Claim.TAKEN, [Claim.CLAIMED])
    assert carries_claim(_flags(server, user, ref))
    monkeypatch.undo()
    assert claim_draft(first, ref) is Claim.TAKEN  # it carries the claim: read, not stored again


def test_a_claim_is_taken_back_when_nothing_was_sent(
    server: ImapServer, connections: tuple[str, MessageRef, ImapMail, ImapMail]
) -> None:
    user, ref, first, second = connections
    if claim_draft(first, ref) is Claim.UNSUPPORTED:
        assert server.kind == "courier"
        return
    assert CLAIM_KEYWORD.lower() in [flag.lower() for flag in _flags(server, user, ref)]
    release_draft(first, ref)
    assert not carries_claim(_flags(server, user, ref))
    assert claim_draft(second, ref) is Claim.CLAIMED
