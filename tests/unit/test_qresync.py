"""QRESYNC on the connection serving tool calls, without a server (tests/support/fake_imap.py).

ENABLE QRESYNC rides with the connection's first command (no round trip of its own) where the server
offers it, and only on connections that ask for it (the pool's, never a watch's); the session's view
reads ``* VANISHED <set>`` exactly like ``* n EXPUNGE`` (the count, and a revalidation that finds the
mailbox changed under a pipelined command), while ``* VANISHED (EARLIER)`` only answers the changes plan,
which names every expunge since the token's modseq from it.
"""

from __future__ import annotations

import pytest

from mail_imap_mcp.config import Config
from mail_imap_mcp.credentials.logins import credentials_for
from mail_imap_mcp.imap import view
from mail_imap_mcp.imap.changes import changes_since
from mail_imap_mcp.imap.changes_token import ChangesToken
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.imap.view import MailboxState
from mail_imap_mcp.state.request_user import ANONYMOUS
from tests.support.fake_imap import LOGIN_OK, ScriptedServer, answer, ok
from tests.support.shared.changes import UIDVALIDITY, examine_answer
from tests.support.translate import as_tool_failure

LOGIN_QRESYNC = LOGIN_OK.replace(b"CONDSTORE", b"CONDSTORE QRESYNC")
ENABLED = ok("ENABLE", b"* ENABLED QRESYNC")


def connection(server: ScriptedServer, *, enable_qresync: bool = True) -> AccountConnection:
    account = {"host": "127.0.0.1", "port": 1143, "security": "plain", "username": "ann", "password": "x"}
    config = Config.model_validate({"accounts": {"default": account}}).accounts["default"]
    return AccountConnection(
        "default",
        config,
        credentials=credentials_for("default", config),
        open_socket=server.open_socket,
        translate=as_tool_failure,
        enable_qresync=enable_qresync,
    )


def test_enable_qresync_rides_with_the_first_command_where_offered() -> None:
    server = ScriptedServer()
    server.expect(answer("LOGIN", LOGIN_QRESYNC), ENABLED, answer("EXAMINE", *examine_answer(2, 3)))
    account = connection(server)
    try:
        enabled = account.run(lambda session: (session.examine("INBOX"), session.qresync)[1])
        assert enabled is True
        assert server.commands() == ["LOGIN", "ENABLE", "EXAMINE"]
        # TCP connect, greeting, LOGIN, then ENABLE and EXAMINE answered together.
        assert account.round_trips == 4
    finally:
        account.close()


def test_enabled_is_known_after_a_pipelined_read_cleared_the_untagged_answers() -> None:
    """A pipelined read (imap/pipeline.py) clears the untagged responses it does not take; the ENABLED
    answer that came with them still counts."""
    server = ScriptedServer()
    server.expect(answer("LOGIN", LOGIN_QRESYNC), ENABLED, answer("EXAMINE", *examine_answer(2, 3)))
    account = connection(server)

    def examine_then_clear(session: ImapSession) -> bool:
        session.examine("INBOX")
        session.client.untagged.clear()
        return session.qresync

    try:
        assert account.run(examine_then_clear) is True
    finally:
        account.close()


def test_imapclients_own_noop_as_the_first_command_reads_the_enable_answer_first() -> None:
    """Regression: imapclient's NOOP reads every line up to its tag as untagged, and took ENABLE's tagged
    OK for a protocol violation (test_faults' NOOP operations on Dovecot)."""
    server = ScriptedServer()
    server.expect(answer("LOGIN", LOGIN_QRESYNC), ENABLED, ok("NOOP", b"* 3 EXISTS"))
    account = connection(server)
    try:
        noop = account.run(lambda session: (session.client.noop(), session.qresync))
        assert noop == ((b"NOOP completed", [(3, b"EXISTS")]), True)
        assert account.round_trips == 4
    finally:
        account.close()


@pytest.mark.parametrize(
    ("login", "enable_qresync"),
    [(LOGIN_OK, True), (LOGIN_QRESYNC, False)],
    ids=["not offered", "a watch's connection"],
)
def test_no_enable_where_not_offered_or_not_asked(login: bytes, enable_qresync: bool) -> None:
    server = ScriptedServer()
    server.expect(answer("LOGIN", login), answer("EXAMINE", *examine_answer(2, 3)))
    account = connection(server, enable_qresync=enable_qresync)
    try:
        assert account.run(lambda session: (session.examine("INBOX"), session.qresync)[1]) is False
        assert server.commands() == ["LOGIN", "EXAMINE"]
        assert account.round_trips == 4
    finally:
        account.close()


def test_a_refused_enable_leaves_qresync_off_and_the_connection_in_step() -> None:
    server = ScriptedServer()
    server.expect(
        answer("LOGIN", LOGIN_QRESYNC),
        answer("ENABLE", b"{tag} BAD Unknown extension"),
        answer("EXAMINE", *examine_answer(2, 3)),
        ok("NOOP"),
    )
    account = connection(server)
    try:
        assert account.run(lambda session: (session.examine("INBOX"), session.qresync)[1]) is False
        assert account.run(lambda session: session.client.noop()[0]) == b"NOOP completed"
    finally:
        account.close()


@pytest.mark.parametrize("removal", [b"* 1 EXPUNGE", b"* VANISHED 1"], ids=["EXPUNGE", "VANISHED"])
def test_a_removal_during_a_revalidation_makes_the_selection_stale(removal: bytes) -> None:
    """The second call's SEARCH is pipelined behind NOOP + STATUS; NOOP brings a removal, so the SEARCH
    may have run on the old view: it is sent again, unpipelined, on the updated view (one message)."""
    server = ScriptedServer()
    server.expect(
        answer("LOGIN", LOGIN_QRESYNC),
        ENABLED,
        answer("EXAMINE", *examine_answer(2, 3)),
        ok("NOOP", removal),
        ok("STATUS", b"* STATUS INBOX (UIDVALIDITY %d UIDNEXT 3)" % UIDVALIDITY),
        ok("UID SEARCH", b"* SEARCH 1 2"),
        ok("UID SEARCH", b"* SEARCH 2"),
    )
    account = connection(server)
    try:
        account.run(lambda session: session.examine("INBOX"))
        server.commands()

        def search(session: object) -> tuple[list[int], int]:
            state = session.examine("INBOX")  # type: ignore[attr-defined]
            found = session.uid_search([b"ALL"])  # type: ignore[attr-defined]
            return found, session.refresh_counts(state).exists  # type: ignore[attr-defined]

        assert account.run(search) == ([2], 1)
        assert server.commands() == ["NOOP", "STATUS", "UID SEARCH", "UID SEARCH"]
        assert not server.script
    finally:
        account.close()


def test_the_view_counts_vanished_like_expunge_and_leaves_earlier_alone() -> None:
    state = MailboxState("INBOX", UIDVALIDITY, 20, exists=10)
    untagged = {"VANISHED": [b"3:5,9", b"(EARLIER) 1:2"], "EXPUNGE": [b"2"]}
    assert view.removals_queued(untagged)
    assert view.apply_updates(untagged, state).exists == 5
    assert untagged == {"VANISHED": [b"(EARLIER) 1:2"]}
    assert not view.removals_queued(untagged)
    assert view.take_vanished_earlier(untagged) == [b"1:2"]
    assert untagged == {}


def test_uids_below_never_expands_what_lies_above() -> None:
    assert view.uids_below(b"7,1:3,4294967295,2:4294967295", 6) == [1, 2, 3, 4, 5]
    assert view.uids_below(b"1:x", 6) == []


def test_with_qresync_changes_name_every_expunge_below_the_tokens_uidnext() -> None:
    """A token without a digest: VANISHED (EARLIER) names the expunges (UIDs 1 and 3; 12 was added and
    removed after the token, never seen), FETCH the flag changes, SEARCH the new mail; the new token's
    modseq is HIGHESTMODSEQ as STATUS said it before the FETCH (an expunge raises it, with no MODSEQ of
    its own to read). One round trip after EXAMINE, none for ENABLE."""
    token = ChangesToken("default", "INBOX", UIDVALIDITY, uidnext=10, modseq=100, older=9)
    server = ScriptedServer()
    server.expect(
        answer("LOGIN", LOGIN_QRESYNC),
        ENABLED,
        answer("EXAMINE", *examine_answer(8, 14)),
        ok("STATUS", b"* STATUS INBOX (HIGHESTMODSEQ 130)"),
        ok(
            "UID FETCH",
            b"* VANISHED (EARLIER) 1,3,12",
            b"* 1 FETCH (UID 2 FLAGS (\\Seen) MODSEQ (120))",
            b"* 7 FETCH (UID 13 FLAGS () MODSEQ (125))",
        ),
        ok("UID SEARCH", b"* SEARCH 13"),
    )
    account = connection(server)
    try:
        changes = account.run(lambda session: changes_since(session, token, ANONYMOUS))
        sent = [s.text.split(b" ", 1)[1] for s in server.received[3:]]
        assert sent == [
            b'STATUS "INBOX" (HIGHESTMODSEQ)\r\n',
            b"UID FETCH 1:9 (UID FLAGS MODSEQ) (CHANGEDSINCE 100 VANISHED)\r\n",
            b"UID SEARCH UID 10:*\r\n",
        ]
        assert account.round_trips == 5
        assert (changes.new, changes.changed, changes.expunged) == ([13], {2: ("\\Seen",)}, [1, 3])
        assert changes.deleted_untracked == 0
        assert changes.token == ChangesToken("default", "INBOX", UIDVALIDITY, 14, 130, 8)
    finally:
        account.close()
