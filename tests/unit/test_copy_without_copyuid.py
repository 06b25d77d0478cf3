"""A copy or move whose OK names no new UIDs (``imap/backend.py`` ``_transfer``), against a scripted server.

RFC 4315 lets a server with UIDPLUS leave COPYUID out (a destination with UIDNOTSTICKY, or a server that
simply omits it for some copies): the messages were copied or moved all the same. Which of the UIDs were
there says what was done: a copy leaves its source as it was (looked at after the COPY), a move takes it
away (looked at before the MOVE). Those that were there are answered copied with their new UID unknown
(``Copied.unnamed``), never "nothing copied", and nothing is sent twice. Where none was there (Dovecot's
OK without COPYUID for UIDs that do not exist) nothing was copied, and STATUS says whether the
destination exists.
"""

from __future__ import annotations

import pytest

from mail_imap_mcp.envelope import ErrorCode, ToolFailure
from mail_imap_mcp.imap.backend import ImapMail
from mail_imap_mcp.mail.write_records import Copied
from tests.support.fake_imap import LOGIN_OK, ScriptedServer, Step, answer, ok
from tests.support.shared.fake_imap_plans import connection, examine_answer

#: The destination's UIDVALIDITY (the source's is fake_imap_plans.UIDVALIDITY).
ARCHIVE_UIDVALIDITY = 1800000000
#: LOGIN's answer on a server with MOVE and without UIDPLUS.
LOGIN_OK_NO_UIDPLUS = b"{tag} OK [CAPABILITY IMAP4rev1 MOVE NAMESPACE] Logged in"
#: The source's messages before the command: 3 of them, UIDs 4, 5 and 6.
SELECTED = [*examine_answer(3, 7)[:-1], b"{tag} OK [READ-WRITE] Select completed"]
#: What the UIDs 4 and 6 found there answer.
FOUND = b"* SEARCH 4 6"


def archive_status() -> Step:
    return ok("STATUS", b"* STATUS Archive (UIDVALIDITY %d)" % ARCHIVE_UIDVALIDITY)


def nothing_there(move: bool) -> list[Step]:
    """A copy or move of UIDs none of which is there, up to its STATUS: Dovecot answers a plain OK (no
    COPYUID, nothing copied), even where the destination is missing; the UID SEARCH finds none."""
    search = ok("UID SEARCH", b"* SEARCH")
    sent = [search, ok("UID MOVE")] if move else [ok("UID COPY"), search]
    return [answer("LOGIN", LOGIN_OK), answer("SELECT", *SELECTED), *sent]


def run(server: ScriptedServer, *, move: bool, uids: list[int]) -> Copied:
    account = connection(server)
    try:
        mail = ImapMail(account)
        done = mail.move("INBOX", uids, "Archive") if move else mail.copy("INBOX", uids, "Archive")
        assert not server.script  # every answer scripted was asked for
        return done
    finally:
        account.close()


@pytest.mark.parametrize("login", [LOGIN_OK, LOGIN_OK_NO_UIDPLUS], ids=["uidplus", "no-uidplus"])
def test_a_copy_answered_without_copyuid_says_the_messages_there_copied_with_no_new_uid(login: bytes) -> None:
    server = ScriptedServer()
    server.expect(
        answer("LOGIN", login),
        answer("SELECT", *SELECTED),
        ok("UID COPY"),  # a plain OK: no [COPYUID]
        ok("UID SEARCH", FOUND),  # the source as it was: 4 and 6 there, 9 not
        archive_status(),
    )
    copied = run(server, move=False, uids=[4, 6, 9])
    assert copied == Copied(ARCHIVE_UIDVALIDITY, {}, unnamed=(4, 6))
    assert server.commands() == ["LOGIN", "SELECT", "UID COPY", "UID SEARCH", "STATUS", "LOGOUT"]


@pytest.mark.parametrize("login", [LOGIN_OK, LOGIN_OK_NO_UIDPLUS], ids=["uidplus", "no-uidplus"])
def test_a_move_answered_without_copyuid_says_the_messages_that_left_moved_with_no_new_uid(
    login: bytes,
) -> None:
    server = ScriptedServer()
    server.expect(
        answer("LOGIN", login),
        answer("SELECT", *SELECTED),
        ok("UID SEARCH", FOUND),  # before the MOVE: 4 and 6 there, 9 not
        ok("UID MOVE", b"* 3 EXPUNGE", b"* 1 EXPUNGE"),  # a plain OK: no [COPYUID]
        archive_status(),
    )
    moved = run(server, move=True, uids=[4, 6, 9])
    assert moved == Copied(ARCHIVE_UIDVALIDITY, {}, unnamed=(4, 6))
    assert server.commands() == ["LOGIN", "SELECT", "UID SEARCH", "UID MOVE", "STATUS", "LOGOUT"]


@pytest.mark.parametrize("move", [False, True], ids=["copy", "move"])
def test_a_copy_or_move_of_uids_not_there_answered_without_copyuid_copied_nothing(move: bool) -> None:
    server = ScriptedServer()
    server.expect(*nothing_there(move), archive_status())
    assert run(server, move=move, uids=[8, 9]) == Copied(ARCHIVE_UIDVALIDITY, {})


@pytest.mark.parametrize("move", [False, True], ids=["copy", "move"])
def test_a_copy_or_move_of_uids_not_there_to_a_missing_mailbox_is_refused_as_missing(move: bool) -> None:
    server = ScriptedServer()
    server.expect(
        *nothing_there(move), answer("STATUS", b"{tag} NO [NONEXISTENT] Mailbox doesn't exist: Archive")
    )
    with pytest.raises(ToolFailure) as refused:  # DestinationMissing, as the tools say it
        run(server, move=move, uids=[8, 9])
    assert refused.value.code is ErrorCode.NOT_FOUND
    assert "'Archive' (destination_mailbox) does not exist" in refused.value.message


@pytest.mark.parametrize("move", [False, True], ids=["copy", "move"])
def test_a_copyuid_answer_names_each_new_uid_and_nothing_more_is_asked_after(move: bool) -> None:
    server = ScriptedServer()
    steps = [answer("LOGIN", LOGIN_OK), answer("SELECT", *SELECTED)]
    if move:
        steps.append(ok("UID SEARCH", FOUND))
    code = b"* OK [COPYUID %d 4,6 11:12] Moved UIDs." % ARCHIVE_UIDVALIDITY
    steps.append(
        ok("UID MOVE", code, b"* 3 EXPUNGE", b"* 1 EXPUNGE")
        if move
        else answer("UID COPY", b"{tag} OK [COPYUID %d 4,6 11:12] Copy completed" % ARCHIVE_UIDVALIDITY)
    )
    server.expect(*steps)
    assert run(server, move=move, uids=[4, 6, 9]) == Copied(ARCHIVE_UIDVALIDITY, {4: 11, 6: 12})
