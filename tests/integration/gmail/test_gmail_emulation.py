"""The Gmail emulation (tests/support/servers/gmail_server.py) against Google's "IMAP Extensions" page of the Gmail
developer documentation: what a real client (imapclient) sees over TLS is what the page's transcripts
show (X-GM-EXT-1, special-use folders, X-GM-MSGID, X-GM-THRID, X-GM-LABELS, X-GM-RAW) and what Gmail
does with labels as folders (one message in several folders, an expunge in a label folder removing only
the label, Trash removing every label)."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import signal
import ssl
import subprocess
import sys
from pathlib import Path

import imapclient
import pytest

from tests.support.mail import mailgen
from tests.support.patience import patient
from tests.support.servers.gmail import ALL_MAIL, TRASH, Gmail, attached
from tests.support.servers.gmail import message as gmail_message


def message(name: str, days: int, **headers: str) -> bytes:
    return gmail_message(name, days, domain="emulation.example", **headers)


@pytest.fixture
def user(gmail: Gmail) -> str:
    return gmail.new_user("e")


def test_capabilities_id_and_special_use_folders_as_the_documentation_shows(gmail: Gmail, user: str) -> None:
    with gmail.connect(user) as client:
        capabilities = set(client.capabilities())
        assert {
            b"IMAP4REV1",
            b"X-GM-EXT-1",
            b"UIDPLUS",
            b"MOVE",
            b"SPECIAL-USE",
            b"IDLE",
            b"ID",
        } <= capabilities
        assert not capabilities & {b"SORT", b"THREAD=REFERENCES"}  # Gmail sorts and threads nothing
        assert b"GImap" in client.id_({"name": "tests"})[0]
        folders = {name: set(flags) for flags, _, name in client.list_folders()}
    assert folders["[Gmail]"] >= {b"\\Noselect"}
    roles = {name: flags - {b"\\HasNoChildren", b"\\HasChildren"} for name, flags in folders.items()}
    assert roles == {
        "INBOX": set(),
        "[Gmail]": {b"\\Noselect"},
        ALL_MAIL: {b"\\All"},
        "[Gmail]/Drafts": {b"\\Drafts"},
        "[Gmail]/Important": {b"\\Important"},
        "[Gmail]/Sent Mail": {b"\\Sent"},
        "[Gmail]/Spam": {b"\\Junk"},
        "[Gmail]/Starred": {b"\\Flagged"},
        TRASH: {b"\\Trash"},
    }


def test_one_message_in_several_folders_with_one_msgid_and_its_own_uid_in_each(
    gmail: Gmail, user: str
) -> None:
    gmail.seed(
        user,
        "INBOX",
        [message("root", 0), message("reply", 1, **{"In-Reply-To": "<root@emulation.example>"})],
    )
    gmail.seed(user, ALL_MAIL, [message("archived", 2)])
    gmail.label(user, "INBOX", [[], ["Work", "\\Important"]])
    with gmail.connect(user) as client:
        client.select_folder("INBOX")
        inbox = client.fetch(client.search("ALL"), ["X-GM-MSGID", "X-GM-THRID", "X-GM-LABELS"])
        client.select_folder("Work")
        work = client.fetch(client.search("ALL"), ["X-GM-MSGID", "X-GM-LABELS"])
        client.select_folder(ALL_MAIL)
        every = client.fetch(client.search("ALL"), ["X-GM-MSGID"])
        by_msgid = client.search(["X-GM-MSGID", inbox[2][b"X-GM-MSGID"]])
        by_thread = client.search(["X-GM-THRID", inbox[1][b"X-GM-THRID"]])
        by_label = client.search(["X-GM-LABELS", "Work"])
    root, reply = inbox[1], inbox[2]
    assert root[b"X-GM-MSGID"] > 2**32  # 64-bit ids
    assert reply[b"X-GM-THRID"] == root[b"X-GM-THRID"] == root[b"X-GM-MSGID"]
    assert set(reply[b"X-GM-LABELS"]) == {b"\\Inbox", b"\\Important", b"Work"}
    assert list(work) == [1] and work[1][b"X-GM-MSGID"] == reply[b"X-GM-MSGID"]
    assert len(every) == 3  # All Mail: both INBOX messages and the archived one
    assert by_msgid == [2] and by_thread == [1, 2] and by_label == [2]


def test_gmail_search_operators(gmail: Gmail, user: str) -> None:
    now = dt.datetime.now(dt.UTC)
    attached = mailgen.large_attachment_message(2000, subject="Invoice").replace(
        b"From: ", b"From: Billing <billing@shop.example>\r\nX-Old-From: ", 1
    )
    gmail.seed(
        user, "INBOX", [message("old", 0), attached], internaldates=[now - dt.timedelta(days=400), now]
    )
    gmail.label(user, "INBOX", [["Receipts"], []])
    with gmail.connect(user) as client:
        client.select_folder(ALL_MAIL)

        def raw(query: str) -> list[int]:
            return sorted(client.search(["X-GM-RAW", query]))

        assert raw("has:attachment") == [2]
        assert raw("label:receipts") == [1]
        assert raw("older_than:1y") == [1] and raw("newer_than:30d") == [2]
        assert raw("from:billing") == [2] and raw("-from:billing") == [1]
        assert raw("in:inbox subject:old") == [1]
        assert raw('"This is old"') == [1]
        assert raw("{label:receipts has:attachment}") == [1, 2]
        with pytest.raises(imapclient.exceptions.IMAPClientError):
            client.search(["X-GM-RAW", "nosuchoperator:x"])


def flat(structure: object) -> list[bytes]:
    """Every string of a parsed BODYSTRUCTURE."""
    if isinstance(structure, bytes):
        return [structure]
    if isinstance(structure, tuple | list):
        return [item for part in structure for item in flat(part)]
    return []


def test_regression_file_names_and_negated_groups_as_gmail_documents_them(gmail: Gmail, user: str) -> None:
    """The emulation alone, against Gmail's help page "Search operators you can use with Gmail": an RFC
    2231 file name is written in BODYSTRUCTURE as the message writes it (it was a Python tuple's repr);
    ``filename:`` matches the name's words (``pdf``, ``homework.txt``; not ``home``: it matched any
    substring); ``-(a OR b)`` removes the messages with either (the ``-`` was read as a word and the
    group kept)."""
    gmail.seed(
        user,
        "INBOX",
        [
            attached("overview", 0, "filename*=utf-8''%C3%BCbersicht.pdf"),
            attached("homework", 1, 'filename="homework.TXT"'),
            message("budget meeting", 2),
            message("budget review", 3),
            message("budget plan", 4),
        ],
    )
    with gmail.connect(user) as client:
        client.select_folder("INBOX", readonly=True)

        def raw(query: str) -> list[int]:
            return sorted(client.search(["X-GM-RAW", query], charset="UTF-8"))

        structure = client.fetch([1], ["BODYSTRUCTURE"])[1][b"BODYSTRUCTURE"]
        strings = flat(structure)
        assert b"FILENAME*" in strings and b"utf-8''%C3%BCbersicht.pdf" in strings
        assert not any(s.startswith(b"(") for s in strings), strings
        assert raw("filename:übersicht") == raw("filename:pdf") == [1]
        assert raw("filename:homework.txt") == raw("filename:txt") == [2]
        assert raw("filename:home") == raw("filename:bersicht") == []
        assert raw("budget -(meeting OR review)") == raw("budget -{meeting review}") == [5]
        assert raw("budget -meeting") == [4, 5]


def test_expunge_in_a_label_folder_removes_the_label_and_trash_removes_every_label(
    gmail: Gmail, user: str
) -> None:
    gmail.seed(user, "INBOX", [message("kept", 0), message("binned", 1)])
    gmail.label(user, "INBOX", [["Work"], ["Work"]])
    with gmail.connect(user) as client:
        client.select_folder("Work")
        client.add_flags([1], [b"\\Deleted"])
        client.expunge()
        client.select_folder("INBOX")
        labels = client.fetch([1, 2], ["X-GM-LABELS"])
        client.move([2], TRASH)
        counts = {
            name: client.folder_status(name, [b"MESSAGES"])[b"MESSAGES"]
            for name in ("INBOX", "Work", ALL_MAIL, TRASH)
        }
        client.select_folder(TRASH)
        trashed = client.fetch([1], ["X-GM-LABELS"])
    assert set(labels[1][b"X-GM-LABELS"]) == {b"\\Inbox"}  # still in INBOX, no longer in Work
    assert set(labels[2][b"X-GM-LABELS"]) == {b"\\Inbox", b"Work"}
    assert counts == {"INBOX": 1, "Work": 0, ALL_MAIL: 1, TRASH: 1}
    assert trashed[1][b"X-GM-LABELS"] == ()


def test_store_labels_answers_the_new_labels_and_makes_a_folder(gmail: Gmail, user: str) -> None:
    gmail.seed(user, "INBOX", [message("one", 0)])
    with gmail.connect(user) as client:
        client.select_folder("INBOX")
        client.add_gmail_labels([1], ["Muy Importante", "\\Starred"])
        assert set(client.get_gmail_labels([1])[1]) == {"\\Inbox", "Muy Importante", "\\Starred"}
        assert b"\\Flagged" in client.get_flags([1])[1]  # \Starred is the \Flagged flag
        assert client.folder_exists("Muy Importante")
        client.remove_gmail_labels([1], ["\\Inbox"])  # archived: gone from INBOX, still in All Mail
        client.noop()
        assert client.search("ALL") == []
        assert client.folder_status(ALL_MAIL, [b"MESSAGES"])[b"MESSAGES"] == 1


def test_xoauth2_and_the_connection_limit(gmail: Gmail, user: str) -> None:
    client = imapclient.IMAPClient(gmail.host, port=gmail.tls_port, ssl_context=gmail.client_ssl_context())
    client.oauth2_login(user, gmail.password)
    assert client.select_folder("INBOX")[b"EXISTS"] == 0
    client.logout()
    bad = imapclient.IMAPClient(gmail.host, port=gmail.tls_port, ssl_context=gmail.client_ssl_context())
    with pytest.raises(imapclient.exceptions.LoginError):
        bad.oauth2_login(user, "not-the-token")
    bad.shutdown()
    with contextlib.ExitStack() as stack:
        for _ in range(15):
            stack.enter_context(gmail.connect(user, tls=False, starttls=False))
        with pytest.raises(imapclient.exceptions.LoginError, match="Too many simultaneous connections"):
            gmail.connect(user, tls=False, starttls=False)


def test_scripts_gmail_emulator_prints_where_it_listens_and_serves_a_seeded_account(tmp_path: Path) -> None:
    """scripts/gmail-emulator (its Python part: the wrapper only prepares the virtualenv) for anyone: one
    JSON line, then it serves until it is told to stop, and cleans up."""
    script = Path(__file__).resolve().parents[3] / "scripts" / "gmail_emulator.py"
    process = subprocess.Popen(
        [sys.executable, str(script), "--seed", "--user", "demo"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        line = json.loads(process.stdout.readline())
        assert line["user"] == "demo" and "[accounts.gmail]" in line["config"]
        assert 'password_env = "GMAIL_EMULATOR_PASSWORD"' in line["config"]
        context = ssl.create_default_context(cafile=line["ca_file"])
        with imapclient.IMAPClient(line["host"], port=line["port"], ssl_context=context) as client:
            client.login(line["user"], line["password"])
            assert b"X-GM-EXT-1" in client.capabilities()
            client.select_folder(ALL_MAIL, readonly=True)
            assert len(client.search("ALL")) == 4
            assert client.folder_status("INBOX", [b"MESSAGES"])[b"MESSAGES"] == 2
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=patient(10)) == 0
    root = Path(line["ca_file"]).parents[1]
    assert not root.exists()  # the instance's directory is gone
