"""The marks a send leaves on the original (the backend's ``mark_original``, imap/drafts.py) against a scripted server: where the
folder's PERMANENTFLAGS keeps new keywords (``\\*``, as Dovecot and Cyrus say) the forwarded message gets
``$Forwarded``; where it keeps none (Courier's maildirs without keywords, a server that lists only the
system flags) nothing is stored and the answer says so."""

from __future__ import annotations

import pytest

from mail_imap_mcp.content.forwards import FORWARDED_KEYWORD
from mail_imap_mcp.imap.backend import ImapMail
from tests.support.fake_imap import LOGIN_OK, ScriptedServer, answer, ok
from tests.support.shared.fake_imap_plans import connection, examine_answer


def _select(permanent: bytes) -> list[bytes]:
    return [
        *examine_answer(3, 8)[:1],
        b"* OK [PERMANENTFLAGS (%s)] Flags permitted." % permanent,
        *examine_answer(3, 8)[2:-1],
        b"{tag} OK [READ-WRITE] Select completed",
    ]


@pytest.mark.parametrize(
    ("permanent", "marked", "commands"),
    [
        (b"\\Answered \\Flagged \\Deleted \\Seen \\Draft \\*", "marked", ["UID SEARCH", "UID STORE"]),
        (b"\\Answered \\Flagged \\Deleted \\Seen \\Draft $Forwarded", "marked", ["UID SEARCH", "UID STORE"]),
        (b"\\Answered \\Flagged \\Deleted \\Seen \\Draft", "not_kept", []),
    ],
)
def test_forwarded_is_stored_only_where_the_folder_keeps_the_keyword(
    permanent: bytes, marked: str, commands: list[str]
) -> None:
    server = ScriptedServer()
    account = connection(server)
    steps = [
        answer("LOGIN", LOGIN_OK),
        answer("EXAMINE", *examine_answer(3, 8)),
        ok("UID SEARCH", b"* SEARCH 7"),
    ]
    steps.append(answer("SELECT", *_select(permanent)))
    if commands:
        steps += [ok("UID SEARCH", b"* SEARCH 7"), ok("UID STORE", b"* 3 FETCH (UID 7 FLAGS ($Forwarded))")]
    server.expect(*steps)
    try:
        assert ImapMail(account).mark_original(["INBOX"], "<a@example.com>", FORWARDED_KEYWORD) == marked
        assert server.commands() == ["LOGIN", "EXAMINE", "UID SEARCH", "SELECT", *commands]
    finally:
        account.close()
