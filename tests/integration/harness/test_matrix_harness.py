"""Proof that the Cyrus and Courier test servers (tests/support/servers/cyrus.py, courier.py) work.

Each server of the matrix, through its session fixture (Cyrus in both namespaces, Courier): a fresh user,
messages seeded into INBOX and a subfolder, then LIST, EXAMINE, SEARCH and FETCH over verified implicit
TLS and over STARTTLS; a changed UIDVALIDITY after ``recreate_mailbox``; and this project's MCP server
listing and searching against it in process.
"""

from __future__ import annotations

import datetime as dt
import email
import pwd
import ssl
from pathlib import Path

import imapclient
import pytest

from tests.support.accounts import account_settings
from tests.support.clients.in_process import make_config, open_client
from tests.support.mail import mailgen
from tests.support.patience import eventually
from tests.support.servers import imapserver
from tests.support.servers.courier import Courier
from tests.support.servers.cyrus import Cyrus
from tests.support.servers.imapserver import AppendSeeding, free_ports
from tests.support.servers.matrix import SESSION_PASSWORD

MATRIX = ["cyrus", "cyrus_altns", "courier"]
DATES = [dt.datetime(2024, 3, day, 9, 30, tzinfo=dt.UTC) for day in (1, 2, 3)]
INBOX_FLAGS = ["\\Seen", "", "\\Flagged $Important"]


@pytest.fixture(params=MATRIX)
def server(request: pytest.FixtureRequest) -> AppendSeeding:
    server: AppendSeeding = request.getfixturevalue(request.param)
    return server


def _message(i: int) -> bytes:
    return mailgen.plain_message(
        subject=f"Matrix message {i}",
        body=f"Body number {i}.",
        date=DATES[i % 3],
        message_id=f"<matrix-{i}@example.org>",
    )


def _seeded_user(server: AppendSeeding) -> tuple[str, str]:
    """A new user with 3 messages in INBOX and 3 in ``Projects/Alpha`` (the server's name for it)."""
    user = server.new_user()
    sub = server.mailbox_name("Projects", "Alpha")
    server.seed(user, "INBOX", [_message(i) for i in range(3)], flags=INBOX_FLAGS, internaldates=DATES)
    server.seed(user, sub, [_message(10 + i) for i in range(3)])
    return user, sub


def _message_ids(client: imapclient.IMAPClient, uids: list[int]) -> list[str]:
    fetched = client.fetch(uids, ["BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)]"])
    ids = []
    for uid in uids:
        # Courier echoes the section as HEADER.FIELDS ("MESSAGE-ID"), the others without quotes.
        (raw,) = (value for key, value in fetched[uid].items() if key.startswith(b"BODY[HEADER.FIELDS"))
        ids.append(str(email.message_from_bytes(raw)["Message-ID"]))
    return ids


@pytest.mark.parametrize("transport", ["tls", "starttls"])
def test_seed_list_examine_search_fetch(server: AppendSeeding, transport: str) -> None:
    user, sub = _seeded_user(server)
    with server.connect(user, tls=transport == "tls") as client:
        sock = client._imap.sock
        assert isinstance(sock, ssl.SSLSocket)
        assert sock.getpeercert()  # verified against server.ca_file, hostname checked

        listed = client.list_folders()
        assert {delimiter for _, delimiter, _ in listed} == {server.separator.encode()}
        names = {name for _, _, name in listed}
        assert {"INBOX", sub} <= names

        inbox = client.select_folder("INBOX", readonly=True)  # EXAMINE
        assert inbox[b"EXISTS"] == 3
        assert inbox[b"READ-ONLY"]
        assert int(inbox[b"UIDVALIDITY"]) > 0
        uids = client.search("ALL")
        assert len(uids) == 3
        assert client.search(["SEEN"]) == uids[:1]
        assert client.search(["FLAGGED"]) == uids[2:]
        assert client.search(["KEYWORD", "$Important"]) == uids[2:]
        assert client.search(["SUBJECT", "message 1"]) == uids[1:2]
        assert client.search(["SINCE", dt.date(2024, 3, 2)]) == uids[1:]  # INTERNALDATE
        assert _message_ids(client, uids) == [f"<matrix-{i}@example.org>" for i in range(3)]

        client.normalise_times = False
        fetched = client.fetch(uids, ["FLAGS", "INTERNALDATE", "ENVELOPE", "RFC822.SIZE"])
        assert [fetched[uid][b"INTERNALDATE"] for uid in uids] == DATES
        assert [fetched[uid][b"ENVELOPE"].subject for uid in uids] == [
            f"Matrix message {i}".encode() for i in range(3)
        ]
        flags = [{flag.lower() for flag in fetched[uid][b"FLAGS"]} - {b"\\recent"} for uid in uids]
        assert flags == [{b"\\seen"}, set(), {b"\\flagged", b"$important"}]
        assert all(fetched[uid][b"RFC822.SIZE"] > 100 for uid in uids)

        assert client.select_folder(sub, readonly=True)[b"EXISTS"] == 3
        assert _message_ids(client, client.search("ALL")) == [
            f"<matrix-{10 + i}@example.org>" for i in range(3)
        ]


def test_new_user_is_empty(server: AppendSeeding) -> None:
    user = server.new_user()
    with server.connect(user) as client:
        assert client.select_folder("INBOX", readonly=True)[b"EXISTS"] == 0
        listed = client.list_folders()
    roles = {name: {flag.lower() for flag in flags} for flags, _, name in listed}
    if server.kind == "cyrus":  # special-use folders are created at the first login
        for folder in ("Drafts", "Sent", "Trash", "Junk"):
            assert f"\\{folder}".lower().encode() in roles[server.mailbox_name(folder)]
    else:
        assert set(roles) == {"INBOX"}


def test_namespace_matches_mailbox_name(server: AppendSeeding) -> None:
    with server.connect(server.default_user) as client:
        personal = client.namespace().personal[0]
    assert (personal[0], personal[1]) == (server.personal_prefix, server.separator)


def test_recreate_mailbox_changes_uidvalidity(server: AppendSeeding) -> None:
    user, sub = _seeded_user(server)
    old, new = server.recreate_mailbox(user, sub)
    assert old != new
    with server.connect(user) as client:
        info = client.select_folder(sub, readonly=True)
    assert (int(info[b"UIDVALIDITY"]), info[b"EXISTS"]) == (new, 0)


def test_seeding_many_messages_is_quick(server: AppendSeeding) -> None:
    user = server.new_user()
    server.seed(user, "INBOX", mailgen.corpus(200), flags=lambda i: "\\Seen" if i % 2 else "")
    with server.connect(user, tls=False) as client:  # how fast is scripts/bench's, not a test's
        assert client.select_folder("INBOX", readonly=True)[b"EXISTS"] == 200
        assert len(client.search(["UNSEEN"])) == 100


@pytest.mark.anyio
async def test_mcp_server_lists_and_searches(server: AppendSeeding) -> None:
    user, sub = _seeded_user(server)
    config = make_config({"default": account_settings(server, user)})
    async for mcp in open_client(config):
        data = await mcp.ok("imap_list_mailboxes", {"include_counts": True})
        mailboxes = {mailbox["name"]: mailbox for mailbox in data["mailboxes"]}
        assert data["mailboxes"][0]["name"] == "INBOX"
        assert (mailboxes["INBOX"]["messages"], mailboxes["INBOX"]["unseen"]) == (3, 2)
        assert mailboxes[sub]["messages"] == 3

        data = await mcp.ok("imap_search_messages", {"limit": 10})
        assert (data["total"], len(data["messages"])) == (3, 3)
        assert [message["subject"] for message in data["messages"]] == [
            f"Matrix message {i}" for i in (2, 1, 0)
        ]
        # A phrase matches as written; the query's words each match, anywhere (the query language).
        data = await mcp.ok("imap_search_messages", {"mailbox": sub, "query": '"message 11"'})
        assert (data["total"], len(data["messages"])) == (1, 1)
        assert data["messages"][0]["message_id"].startswith(f"imap:default:{sub}:")
        data = await mcp.ok("imap_search_messages", {"mailbox": sub, "query": "subject:11 matrix"})
        assert [message["subject"] for message in data["messages"]] == ["Matrix message 11"]
        # No mailbox named: a query searches every mailbox, a search without one INBOX.
        data = await mcp.ok("imap_search_messages", {"query": '"Matrix message"'})
        assert (data["total"], data["mailbox"]) == (6, "*")


@pytest.mark.parametrize("kind", ["cyrus", "cyrus_altns"])
def test_cyrus_administrator_deletes_a_users_mailbox(kind: str, request: pytest.FixtureRequest) -> None:
    """What tests use to delete a mailbox the user may not delete (one with a special use)."""
    server = request.getfixturevalue(kind)
    user = server.new_user("admindel")
    name = server.mailbox_name("Archive")
    server.seed(user, name, [mailgen.plain_message("x", "y")])
    server.delete_as_admin(user, name)
    with server.connect(user) as client:
        assert name not in [folder[2] for folder in client.list_folders()]


def test_mailboxes_made_by_separate_cyrus_processes_get_ids_of_their_own() -> None:
    """Regression (issue 33 item 13): Cyrus names a mailbox with rand(), and its imapd processes drew
    from one sequence, so mailboxes made by separate processes got one id (here about 20 of 80 without
    the fix). Mailboxes with one id share files and annotations: a mailbox seeded with two messages was
    found empty (UIDNEXT 1), a plain mailbox was refused DELETE with "SPECIAL-USE flag conflict", in
    about one Cyrus test a full run (then hidden by retries)."""
    with Cyrus(password=SESSION_PASSWORD) as server:
        for _ in range(5):
            server.new_users_together(3)  # each makes INBOX and four special-use mailboxes
        ids = list(server.mailbox_ids().values())
        users = 1 + 5 * 3  # with the default user
        assert len(ids) == users * (1 + len(server.special_folders)), len(ids)
        assert len(set(ids)) == len(ids), sorted(ids)


def test_cyrus_handed_a_port_another_server_answers_starts_on_other_ports(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Regression: pytest workers starting Cyrus at the same moment could be handed the same free port.
    Cyrus's master keeps running without a port it cannot listen on, the other instance answered there,
    and a test seeded one server (plain port) and read the other (TLS): a mailbox seeded with messages
    was empty, one Cyrus test a full run. Here the first ports handed out are another Cyrus's."""
    with Cyrus(password=SESSION_PASSWORD) as other:
        handed: list[list[int]] = []

        def other_ports_first(*hosts: str) -> list[int]:
            ports = free_ports(*hosts)
            if not handed:
                ports[0] = other.plain_port
            handed.append(ports)
            return ports

        monkeypatch.setattr(imapserver, "free_ports", other_ports_first)
        with Cyrus(password=SESSION_PASSWORD) as cyrus:
            assert len(handed) == 2 and cyrus.plain_port not in (other.plain_port, other.tls_port)
            user = cyrus.new_user("ports")
            cyrus.seed(user, "INBOX", [_message(1), _message(2)])  # over the plain port
            with cyrus.connect(user, tls=True) as client:
                assert client.select_folder("INBOX", readonly=True)[b"EXISTS"] == 2


def test_courier_says_which_locks_and_waits_hold_a_users_folders(courier: Courier) -> None:
    """The report a test gives when a Courier client stalled (test_index_concurrent): a lock file in the
    user's Maildir with its age and content, the instance's imapd processes, the process that serves
    the stalled client's connection, and the end of the server's log."""
    user = courier.new_user()
    with courier.connect(user, tls=False, starttls=False) as client:
        client.select_folder("INBOX")
        lock = courier.root / "mail" / user / "Maildir" / "tmp" / "courier.lock"
        lock.write_bytes(b"held by a test")
        report = courier.lock_report(user, client.socket().getsockname()[1])
    assert f"mail/{user}/Maildir/tmp/courier.lock: " in report and "b'held by a test'" in report, report
    assert "imapd processes: ['" in report and "/bin/imapd" in report, report
    serving = report.split("; the server's end of port ", 1)[1].split("; courier.log ends: ")[0]
    assert serving.count("/bin/imapd") == 1, report  # that connection's imapd, and no other process
    assert "courier.log ends: '" in report, report


def test_regression_each_courier_waits_on_a_gamin_server_of_its_own(courier: Courier) -> None:
    # imapd waits on FAM (gamin) for a folder's lock to go. gamin finds its server by an abstract socket
    # named by user and GAM_CLIENT_ID; without the id, every worker's Courier shared one server, living
    # in whichever instance started it ("ERR:FAMMonitorFile: Broken pipe" in another once it stopped),
    # and a Courier SELECT went unanswered in loaded full runs.
    user = courier.new_user()
    with courier.connect(user, tls=False, starttls=False) as client:
        client.select_folder("INBOX")
        client.append("INBOX", mailgen.plain_message("watched", "x\r\n"))
        client.select_folder("INBOX")

        own = f"@/tmp/fam-{pwd.getpwuid(courier.mail_uid).pw_name}-{courier.root.name}"

        def listening() -> bool:
            names = (row.split()[-1] for row in Path("/proc/net/unix").read_text().splitlines()[1:])
            return own in {name.rstrip("@") for name in names}

        eventually(listening, what=f"a gamin server listening on {own}")
