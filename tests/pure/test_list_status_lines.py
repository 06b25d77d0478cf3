"""LIST and STATUS lines of the usual shape are read without imapclient's parser (a search of every
folder reads one of each per folder): the folders and counts must be those imapclient's parser gives,
and any other line must send the whole answer back to that parser."""

from __future__ import annotations

from typing import Any

import pytest
from imapclient import IMAPClient
from imapclient.imap_utf7 import decode as decode_utf7

from mail_imap_mcp.imap import mailboxes, parsing

USUAL_LIST = [
    b'(\\HasNoChildren) "/" INBOX',
    b'(\\HasNoChildren \\Sent) "/" "Sent Items"',
    b'() "." "INBOX.Archive"',
    b'(\\Noselect \\HasChildren) NIL "Shared"',
    b'(\\HasNoChildren) "/" "Caf&AOk-"',
    b'(\\HasNoChildren \\Subscribed) "/" Folder001',
    b'(\\HasNoChildren) "/" "2024 taxes"',
    b'(\\HasNoChildren) "/" ""',
]
ODD_LIST: list[Any] = [
    b'(\\HasNoChildren) "/" "say \\"hi\\""',  # escapes
    b'(\\HasNoChildren) "/" NIL',  # imapclient reads NIL as None
    b'(\\HasNoChildren) "/" 2024',  # ... and digits as an int
    b'(\\HasNoChildren) "/" "007"',
    b'(\\HasNoChildren) "\\\\" "Back"',  # an escaped delimiter
    (b'(\\HasNoChildren) "/" {5}', b"Odd 1"),  # a literal
    b'(\\HasNoChildren) "/" Weird(',
]
USUAL_STATUS = [
    b'"Folder001" (MESSAGES 30 UIDNEXT 31)',
    b"INBOX (MESSAGES 0 UIDNEXT 1)",
    b'"Caf&AOk-" (MESSAGES 5 UNSEEN 2 UIDVALIDITY 99 UIDNEXT 12)',
    b'"No counts" ()',
    b'"Only next" (UIDNEXT 4)',
]
ODD_STATUS: list[Any] = [
    b'"say \\"hi\\"" (MESSAGES 1 UIDNEXT 2)',
    b"2024 (MESSAGES 1 UIDNEXT 2)",
    b'"007" (MESSAGES 1 UIDNEXT 2)',
    b"NIL (MESSAGES 1 UIDNEXT 2)",
    b'"Box" (MESSAGES NIL)',
    (b"{3}", b"Odd"),
]


def _imapclient_folders(lines: list[Any]) -> list[Any]:
    client = IMAPClient.__new__(IMAPClient)
    client.folder_encode = True
    return list(client._proc_folder_list(lines))


def test_usual_list_lines_read_as_imapclient_reads_them() -> None:
    usual = parsing.list_lines(USUAL_LIST)
    assert usual is not None
    assert [(f, d, decode_utf7(n)) for f, d, n in usual] == _imapclient_folders(USUAL_LIST)


@pytest.mark.parametrize("odd", ODD_LIST, ids=repr)
def test_any_odd_list_line_leaves_every_line_to_imapclient(odd: Any) -> None:
    assert parsing.list_lines([*USUAL_LIST, odd]) is None


def test_usual_status_lines_give_imapclients_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    assert parsing.status_lines(USUAL_STATUS) is not None
    fast = mailboxes.status_answers(USUAL_STATUS)
    monkeypatch.setattr(parsing, "status_lines", lambda lines: None)
    assert fast == mailboxes.status_answers(USUAL_STATUS)
    assert fast["Café"] == mailboxes.MailboxCounts(5, 2, 99, 12)
    assert "No counts" not in fast and "Only next" not in fast


@pytest.mark.parametrize("odd", ODD_STATUS, ids=repr)
def test_any_odd_status_line_leaves_every_line_to_imapclient(odd: Any) -> None:
    assert parsing.status_lines([*USUAL_STATUS, odd]) is None
