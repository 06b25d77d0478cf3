"""The check behind ``INBOX_ONLY`` (tests/support/run/inbox_only.py): which IMAP commands name a folder other
than INBOX, and what a marked test is told when it named one or sent nothing."""

from __future__ import annotations

import pytest

from tests.support.run.inbox_only import Seen, folders_named, verdict


@pytest.mark.parametrize(
    ("command", "arguments", "named"),
    [
        ("SELECT", ('"INBOX"',), set()),
        ("EXAMINE", (b'"inbox"',), set()),
        ("SELECT", ('"Archive"',), {"Archive"}),
        ("STATUS", ('"INBOX.Trash"', "(MESSAGES)"), {"INBOX.Trash"}),
        ("APPEND", ('"Entw&APw-rfe"', "(\\Seen)", '"1-Jan-2026 00:00:00 +0000"', b"body"), {"Entw&APw-rfe"}),
        ("UID", ("MOVE", "1:3", '"Junk/Spam"'), {"Junk/Spam"}),
        ("UID", ("COPY", "4", '"INBOX"'), set()),
        ("UID", ("FETCH", "1", "(FLAGS)"), set()),
        ("RENAME", ('"Old"', '"New"'), {"Old", "New"}),
        ("LIST", ('""', '"*"'), set()),
        ("LIST", ('""', '"Archive/2024"'), {"Archive/2024"}),
        ("SEARCH", ("ALL",), set()),
        ("NOOP", (), set()),
    ],
)
def test_the_folders_a_command_names_other_than_inbox(
    command: str, arguments: tuple[object, ...], named: set[str]
) -> None:
    assert folders_named(command, arguments) == named


def test_a_marked_test_that_named_a_folder_or_sent_nothing_is_told_why() -> None:
    assert verdict(Seen(commands=12)) is None
    named = verdict(Seen(commands=3, folders={"INBOX.Archive"}))
    assert named is not None and "INBOX.Archive" in named and "cyrus_altns" in named
    silent = verdict(Seen())
    assert silent is not None and "no IMAP command" in silent
