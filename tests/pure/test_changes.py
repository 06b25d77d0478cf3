"""The changes token and the plans of imap_get_changes, without a server.

The token: what it names survives encoding, any edit or truncation is refused (``since``), and a sealed
token whose contents are out of range is refused too. The plans run on the scripted IMAP server
(tests/support/fake_imap.py) under the shipped stack: what each sends, in how many round trips, and what
it makes of the answers (a MODSEQ per message, an unsolicited FETCH without UID, ``\\Recent``).
"""

from __future__ import annotations

import random
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mail_imap_mcp.config import Config
from mail_imap_mcp.credentials.logins import credentials_for
from mail_imap_mcp.envelope import ErrorCode, ToolFailure
from mail_imap_mcp.imap import changes_token
from mail_imap_mcp.imap.changes import TOKEN_CHARS, Changes, changes_since, fitted
from mail_imap_mcp.imap.changes_token import ChangesToken, ChangesTokenError, ForeignChangesToken, PageCursor
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.mail import sealing
from mail_imap_mcp.presentation.failures import tool_failure
from tests.support.fake_imap import LOGIN_OK, ScriptedServer, Step, answer, ok
from tests.support.shared.changes import UIDVALIDITY, examine_answer
from tests.support.translate import as_tool_failure

#: What LOGIN answers on a server without CONDSTORE (as Courier or an IMAP4rev1-only Dovecot).
LOGIN_WITHOUT_CONDSTORE = b"{tag} OK [CAPABILITY IMAP4rev1 UIDPLUS] Logged in"


def changes_on_a_fresh_connection(
    token: ChangesToken, login: bytes, exists: int, uidnext: int, *plan: Step
) -> tuple[Changes, list[bytes], int]:
    """``changes_since(token)`` on a new connection to a scripted server whose LOGIN answers ``login`` and
    whose EXAMINE shows ``exists`` and ``uidnext``; the plan's commands as sent (after LOGIN and EXAMINE,
    without their tags) and the round trips of the whole call."""
    server = ScriptedServer()
    server.expect(answer("LOGIN", login), answer("EXAMINE", *examine_answer(exists, uidnext)), *plan)
    account = {"host": "127.0.0.1", "port": 1143, "security": "plain", "username": "ann", "password": "x"}
    config = Config.model_validate({"accounts": {"default": account}}).accounts["default"]
    connection = AccountConnection(
        "default",
        config,
        credentials=credentials_for("default", config),
        open_socket=server.open_socket,
        translate=as_tool_failure,
    )
    changes = connection.run(lambda session: changes_since(session, token, ""))
    return changes, [sent.text.split(b" ", 1)[1] for sent in server.received[2:]], connection.round_trips


TOKEN = ChangesToken(
    "default",
    "Entwürfe: 2026",
    UIDVALIDITY,
    uidnext=9,
    modseq=1234,
    older=3,
    uids=(1, 2, 3, 5, 8),
    flags=((), ("\\Seen",), ("$Label1", "\\Seen"), ("\\Seen",), ()),
)


def test_a_token_keeps_what_it_names() -> None:
    for token in (
        TOKEN,
        ChangesToken("a", "INBOX", 1, 1, 7, 0),
        ChangesToken("a", "INBOX", 1, 1, 0, 0, (), ()),
    ):
        text = token.encode("")
        assert text.startswith("chg2.") and text.isascii()
        assert ChangesToken.decode(text, "") == token
        assert token.encode("") == text  # the same state, the same token


@pytest.mark.parametrize("span", [55, 550, 2000])
def test_a_token_of_scattered_uids_and_flag_sets_keeps_them_within_300_characters(span: int) -> None:
    """Issue 47 item 23: 55 UIDs at random below ``span`` with four flag sets are all tracked (as a UID
    set and a character per message, 47 of them were among 550) and read back exactly."""
    chance = random.Random(span)
    sets = [(), ("\\Seen",), ("\\Flagged", "\\Seen"), ("\\Answered",)]
    uids = tuple(sorted(chance.sample(range(1, span + 1), 55)))
    flags = tuple(chance.choice(sets) for _ in uids)
    token = fitted("", ChangesToken("default", "INBOX", UIDVALIDITY, span + 1, 0, 0, uids, flags))
    assert (token.uids, len(token.encode("")) <= 300) == (uids, True)
    assert ChangesToken.decode(token.encode(""), "") == token


def test_a_version_1_token_is_still_read() -> None:
    payload = ["default", "INBOX", 1, 5, 0, 0, "1:3", ["", "\\Seen"], "010"]
    token = ChangesToken.decode(changes_token._seal("chg1.", payload, ""), "")
    assert (token.uids, token.flags) == ((1, 2, 3), ((), ("\\Seen",), ()))


def test_an_edited_truncated_or_foreign_token_is_refused_naming_since() -> None:
    text = TOKEN.encode("")
    middle = len(text) // 2
    edits = [
        text[:middle] + ("A" if text[middle] != "A" else "B") + text[middle + 1 :],
        text[:-3],
        text + "A",
        "chg9." + text[5:],
        "",
        "imap:default:INBOX:1:2",
        PageCursor("0" * 16, 5, text).encode(""),
    ]
    for edited in edits:
        with pytest.raises(ChangesTokenError) as refused:
            ChangesToken.decode(edited, "")
        assert refused.value.parameter == "since"


@pytest.mark.parametrize(
    "payload",
    [
        ["default", "INBOX", 1, 5, 0, 0, "1:7", None, ""],  # a tracked UID at or above UIDNEXT
        ["default", "INBOX", -1, 5, 0, 0, "", None, ""],  # a negative number
        ["default", "INBOX", 2**32, 5, 0, 0, "", None, ""],  # a UIDVALIDITY beyond 32 bits
        ["default", "INBOX", 1, True, 0, 0, "", None, ""],  # a boolean for a number
        ["default", "INBOX", 1, 5, 0, 0, "1:x", None, ""],  # not a UID set
        ["default", "INBOX", 1, 5, 0, 0, "1:3", [""], "00"],  # fewer flag marks than UIDs
        ["default", "INBOX", 1, 5, 0, 0, "1:3", [""], "001"],  # a mark outside the palette
        ["default", "INBOX", 1, 5, 0, 0, "1:3"],  # a field missing
        # Issue 33 L2: a UIDNEXT the server answers BAD to, and a count of untracked messages that would
        # be reported as 99,959 expunged messages that never existed.
        ["default", "INBOX", 1, 2**32, 0, 0, "", None, ""],
        ["default", "INBOX", 1, 5, 0, 99_959, "", None, ""],
        ["default", "INBOX", 1, 5, 0, 2, "1:3", None, ""],
    ],
)
def test_a_sealed_token_with_contents_out_of_range_is_refused(payload: list[object]) -> None:
    # The same contents in range decode (the seal is made the way the server makes it).
    assert ChangesToken.decode(
        changes_token._seal("chg1.", ["default", "INBOX", 1, 5, 0, 0, "1:3", [""], "000"], ""), ""
    )
    with pytest.raises(ChangesTokenError):
        ChangesToken.decode(changes_token._seal("chg1.", payload, ""), "")


def test_with_condstore_one_round_trip_asks_changedsince_and_which_tracked_messages_remain() -> None:
    token = ChangesToken("default", "INBOX", UIDVALIDITY, uidnext=5, modseq=100, older=0, uids=(1, 2, 3, 4))
    changes, texts, round_trips = changes_on_a_fresh_connection(
        token,
        LOGIN_OK,
        5,
        7,
        ok(
            "UID FETCH",
            b"* 3 FETCH (UID 4 FLAGS (\\Seen \\Recent) MODSEQ (105))",
            b"* 2 FETCH (FLAGS (\\Seen))",  # a change another session made, unsolicited: no UID
            b"* 4 FETCH (UID 5 FLAGS () MODSEQ (110))",
            b"* 5 FETCH (UID 6 FLAGS (\\Flagged) MODSEQ (111))",
        ),
        ok("UID SEARCH", b"* SEARCH 1 2 4 5 6"),
    )
    assert texts == [
        b"UID FETCH 1:* (UID FLAGS MODSEQ) (CHANGEDSINCE 100)\r\n",
        b"UID SEARCH UID 1:4,5:*\r\n",
    ]
    # TCP connect, greeting, LOGIN, EXAMINE, then FETCH and SEARCH together.
    assert round_trips == 5
    assert changes.new == [6, 5]
    assert changes.changed == {4: ("\\Seen",)}
    assert changes.expunged == [3]
    assert (changes.deleted_untracked, changes.flags_untracked) == (0, 0)
    assert changes.token == ChangesToken("default", "INBOX", UIDVALIDITY, 7, 111, 0, (1, 2, 4, 5, 6))


def test_without_condstore_the_digest_tells_flag_changes_and_expunges() -> None:
    # UIDs 1 and 2 untracked, 3 and 4 tracked; since then 2 and 4 expunged, 3 flagged, 6 delivered.
    flags = ((), ("\\Seen",))
    token = ChangesToken(
        "default", "INBOX", UIDVALIDITY, uidnext=5, modseq=0, older=2, uids=(3, 4), flags=flags
    )
    changes, texts, round_trips = changes_on_a_fresh_connection(
        token,
        LOGIN_WITHOUT_CONDSTORE,
        3,
        7,
        ok("UID FETCH", b"* 2 FETCH (UID 3 FLAGS (\\Flagged))"),
        ok(
            "FETCH",
            b"* 1 FETCH (UID 1 FLAGS ())",
            b"* 2 FETCH (UID 3 FLAGS (\\Flagged))",
            b"* 3 FETCH (UID 6 FLAGS (\\Recent))",
        ),
        ok("UID SEARCH", b"* SEARCH 6"),
    )
    assert texts == [
        b"UID FETCH 3:4 (UID FLAGS)\r\n",
        b"FETCH 1:* (UID FLAGS)\r\n",
        b"UID SEARCH UID 5:*\r\n",
    ]
    assert round_trips == 5
    assert (changes.new, changes.changed, changes.expunged) == ([6], {3: ("\\Flagged",)}, [4])
    # Two untracked messages before, one now (UID 1): one of them went, which the digest cannot name.
    assert (changes.deleted_untracked, changes.flags_untracked) == (1, 2)
    # The newest messages (all three here) refill the digest: UID 1 is tracked from now on.
    expected = ChangesToken("default", "INBOX", UIDVALIDITY, 7, 0, 0, (1, 3, 6), ((), ("\\Flagged",), ()))
    assert changes.token == expected


def test_a_refused_command_of_the_pipeline_leaves_the_connection_in_step() -> None:
    """The mailbox vanished under the call: FETCH is refused, the SEARCH sent with it still answered. The
    call fails as a vanished mailbox, and the next command on the same connection reads its own answer."""
    token = ChangesToken("default", "INBOX", UIDVALIDITY, uidnext=5, modseq=100, older=0, uids=(1, 2))
    server = ScriptedServer()
    server.expect(
        answer("LOGIN", LOGIN_OK),
        answer("EXAMINE", *examine_answer(2, 5)),
        answer("UID FETCH", b"{tag} NO [NONEXISTENT] Mailbox does not exist"),
        ok("UID SEARCH", b"* SEARCH 1 2"),
        ok("NOOP"),
    )
    account = {"host": "127.0.0.1", "port": 1143, "security": "plain", "username": "ann", "password": "x"}
    config = Config.model_validate({"accounts": {"default": account}}).accounts["default"]
    connection = AccountConnection(
        "default",
        config,
        credentials=credentials_for("default", config),
        open_socket=server.open_socket,
        translate=as_tool_failure,
    )
    with pytest.raises(ToolFailure) as failed:
        connection.run(lambda session: changes_since(session, token, ""))
    assert failed.value.code is ErrorCode.CONFLICT and "was deleted or replaced" in failed.value.message
    assert connection.run(lambda session: session.client.noop()[0]) == b"NOOP completed"
    assert server.connections == 1


def test_regression_l2_a_token_sealed_with_another_key_is_refused(tmp_path: Path) -> None:
    # Issue 33 L2: the seal's key was a constant in the source, so anyone could forge a token.
    text = TOKEN.encode("")
    assert sealing.load_key(tmp_path / "other")
    try:
        with pytest.raises(ChangesTokenError, match="another key"):
            ChangesToken.decode(text, "")
        again = TOKEN.encode("")
        assert again != text and ChangesToken.decode(again, "") == TOKEN
    finally:
        sealing.load_key(sealing.default_state_dir())


def test_the_sealing_key_is_made_once_private_and_kept(tmp_path: Path) -> None:
    state = tmp_path / "state"
    assert sealing.load_key(state)
    key_file = state / sealing.KEY_FILE
    first = key_file.read_text()
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600 and len(bytes.fromhex(first.strip())) == 32
    assert sealing.load_key(state) and key_file.read_text() == first
    blocked = tmp_path / "file"
    blocked.write_text("")
    assert not sealing.load_key(blocked)  # not a directory: this process keeps a key of its own
    sealing.load_key(sealing.default_state_dir())


@settings(max_examples=200, deadline=None)
@given(
    spread=st.integers(1, 40),
    count=st.integers(0, 300),
    flag_sets=st.integers(0, 8),
    seed=st.randoms(use_true_random=True),
    mailbox=st.sampled_from(["INBOX", "Archive/2024/Projects", "Entwürfe/Überfällige Rechnungen"]),
)
def test_a_token_stays_within_300_characters_whatever_its_uids_and_flags(
    spread: int, count: int, flag_sets: int, seed: random.Random, mailbox: str
) -> None:
    """Issue 33 item 11: UIDs scattered by expunges (up to one in 40 left) and many distinct flag sets
    (without CONDSTORE) keep fewer of the newest messages in the digest, never a longer token; the
    messages left out are counted as older, and the token reads back as made."""
    uids = sorted(seed.sample(range(1, count * spread + 2), count))
    sets = [tuple(f"$k{n}" for n in range(i)) for i in range(flag_sets)]
    flags = tuple(seed.choice(sets) for _ in uids) if sets else None
    uidnext = (uids[-1] if uids else 0) + 1
    older = min(40, uidnext - 1 - count)  # messages below the digest: as many as its gaps can hold
    made = ChangesToken("default", mailbox, 7, uidnext, 0, older, tuple(uids), flags)
    token = fitted("", made)
    assert len(token.encode("")) <= TOKEN_CHARS
    kept = len(token.uids)
    assert token.uids == made.uids[len(made.uids) - kept :] and token.older == made.older + count - kept
    assert token.flags == (made.flags[count - kept :] if made.flags is not None else None)
    assert ChangesToken.decode(token.encode(""), "") == token
    if len(made.encode("")) <= TOKEN_CHARS:
        assert token == made


def test_the_newest_300_of_2000_scattered_messages_are_tracked_as_far_as_300_characters_go() -> None:
    """The case that made 919 and 1,140 characters: 300 UIDs scattered over 2,000, with four flag sets
    (no CONDSTORE) or none (CONDSTORE). Fewer are tracked now, the newest, within 300 characters."""
    chance = random.Random(33)
    uids = tuple(sorted(chance.sample(range(1, 2001), 300)))
    sets = [(), ("\\Seen",), ("\\Seen", "\\Flagged"), ("\\Answered", "\\Seen")]
    for flags in (None, tuple(chance.choice(sets) for _ in uids)):
        token = fitted("", ChangesToken("default", "INBOX", 7, 2001, 0, 0, uids, flags))
        assert len(token.encode("")) <= TOKEN_CHARS and 20 <= len(token.uids) < 300
        print(
            f"flags={'yes' if flags else 'no'}: {len(token.uids)} tracked, {len(token.encode(''))} characters"
        )


def test_another_users_changes_token_or_page_cursor_is_foreign_and_a_garbled_one_is_not() -> None:
    alices = TOKEN.encode("alice@corp.example")
    assert ChangesToken.decode(alices, "alice@corp.example") == TOKEN
    with pytest.raises(ForeignChangesToken) as foreign:
        ChangesToken.decode(alices, "bob@corp.example")
    said = tool_failure(foreign.value, None)
    assert said is not None and said.code == ErrorCode.NOT_FOUND and "alice" not in said.message
    page = PageCursor("0" * 16, 5, alices).encode("alice@corp.example")
    with pytest.raises(ForeignChangesToken):
        PageCursor.decode(page, "bob@corp.example")
    bobs = TOKEN.encode("bob@corp.example")
    garbled = bobs[:-3] + ("A" if bobs[-3] != "A" else "B") + bobs[-2:]
    with pytest.raises(ChangesTokenError) as refused:
        ChangesToken.decode(garbled, "bob@corp.example")
    assert not isinstance(refused.value, ForeignChangesToken)
    said = tool_failure(refused.value, None)
    assert said is not None and said.code == ErrorCode.INVALID_INPUT
