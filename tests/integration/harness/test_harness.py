"""Proof that the real-IMAP test harness (tests/support) works against a live Dovecot."""

from __future__ import annotations

import contextlib
import datetime as dt
import email
import imaplib
import os
import socket
import ssl
from collections.abc import Iterator
from email import policy
from email.message import EmailMessage
from typing import Any

import imapclient
import pytest
from imapclient.exceptions import LoginError

from tests.support.mail import mailgen
from tests.support.patience import eventually, patient
from tests.support.servers import imapserver, submission
from tests.support.servers.dovecot import Dovecot, ensure_dovecot, maildir_folder_name

_DEAD_CONNECTION = (imaplib.IMAP4.abort, imaplib.IMAP4.error, OSError, ssl.SSLError)


@pytest.fixture(scope="module")
def server() -> Iterator[Dovecot]:
    with Dovecot(strict_listener=True) as instance:
        yield instance


def _message_ids(client: imapclient.IMAPClient, uids: list[int]) -> list[str]:
    fetched = client.fetch(uids, ["BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)]"])
    out = []
    for uid in uids:
        raw = fetched[uid][b"BODY[HEADER.FIELDS (MESSAGE-ID)]"]
        out.append(email.message_from_bytes(raw)["Message-ID"])
    return out


# ---------------------------------------------------------------------------- server lifecycle / auth


def test_ensure_dovecot_finds_binary() -> None:
    path = ensure_dovecot()
    assert os.access(path, os.X_OK)


def test_tls_login_verified_against_ca(server: Dovecot) -> None:
    assert server.ca_file.read_bytes().startswith(b"-----BEGIN CERTIFICATE-----")
    with server.connect() as client:
        assert b"IMAP4REV1" in client.capabilities()
        sock = client._imap.sock
        assert isinstance(sock, ssl.SSLSocket)
        assert sock.getpeercert() is not None  # verified chain (CERT_REQUIRED + hostname check)
    # Without our CA the certificate is rejected.
    with pytest.raises(ssl.SSLCertVerificationError):
        imapclient.IMAPClient(server.host, port=server.tls_port, ssl_context=ssl.create_default_context())


def test_starttls_login_on_plain_port(server: Dovecot) -> None:
    client = imapclient.IMAPClient(server.host, port=server.plain_port, ssl=False, timeout=patient(10))
    try:
        assert b"STARTTLS" in client.capabilities()
        client.starttls(server.client_ssl_context())
        assert isinstance(client._imap.sock, ssl.SSLSocket)
        client.login(server.default_user, server.password)
        assert client.select_folder("INBOX")[b"EXISTS"] >= 0
    finally:
        client.logout()
    # The convenience path does the same.
    with server.connect(tls=False) as client:
        assert isinstance(client._imap.sock, ssl.SSLSocket)


def test_plaintext_login_allowed_on_loopback_port(server: Dovecot) -> None:
    with server.connect(tls=False, starttls=False) as client:
        assert not isinstance(client._imap.sock, ssl.SSLSocket)


def test_strict_listener_requires_starttls(server: Dovecot) -> None:
    client = imapclient.IMAPClient(
        server.strict_host, port=server.strict_port, ssl=False, timeout=patient(10)
    )
    try:
        assert b"LOGINDISABLED" in client.capabilities()
        with pytest.raises(LoginError):
            client.login(server.default_user, server.password)
    finally:
        client.shutdown()
    client = imapclient.IMAPClient(
        server.strict_host, port=server.strict_port, ssl=False, timeout=patient(10)
    )
    client.starttls(server.client_ssl_context())
    client.login(server.default_user, server.password)
    client.logout()


def test_unknown_user_and_wrong_password_fail(server: Dovecot) -> None:
    with pytest.raises(LoginError, match="AUTHENTICATIONFAILED"):
        server.connect("someone-else")
    with pytest.raises(ValueError, match="matches none"):
        server.new_user(prefix="bob")
    assert server.new_user() != server.new_user()


# ---------------------------------------------------------------------------- seeding


def test_seed_count_order_flags_and_internaldate(server: Dovecot) -> None:
    user = server.new_user()
    n = 40
    flag_specs = [
        ("\\Seen",),
        "\\Seen \\Flagged",
        (),
        ("\\Answered", "\\Seen", "$Forwarded"),
        ("\\Draft", "Work"),
    ]
    server.seed(user, "INBOX", mailgen.corpus(n, seed=3), flags=lambda i: flag_specs[i % 5])
    with server.connect(user) as client:
        info = client.select_folder("INBOX", readonly=True)
        assert info[b"EXISTS"] == n
        uids = client.search(["ALL"])
        assert uids == list(range(1, n + 1))
        # UIDs follow the seeding order.
        assert _message_ids(client, uids) == [mailgen.message_id(i, 3) for i in range(n)]
        fetched = client.fetch(uids[:5], ["FLAGS", "INTERNALDATE"])
        got = [set(fetched[uid][b"FLAGS"]) - {b"\\Recent"} for uid in uids[:5]]
        assert got == [
            {b"\\Seen"},
            {b"\\Seen", b"\\Flagged"},
            set(),
            {b"\\Answered", b"\\Seen", b"$Forwarded"},
            {b"\\Draft", b"Work"},
        ]
        # INTERNALDATE defaults to the Date header.
        facts = mailgen.describe(0, seed=3, n=n)
        internal = fetched[1][b"INTERNALDATE"]  # naive, server local time
        assert internal.astimezone(dt.UTC) == facts.date.astimezone(dt.UTC)
        assert len(client.search(["UNSEEN"])) == n - 3 * (n // 5)


def test_a_settled_folder_has_each_seeded_file_in_dovecots_uid_list_as_a_delivery_would(
    server: Dovecot,
) -> None:
    """Seeded files are mail Dovecot has not seen until a session opens their folder (a STATUS beside
    that first SELECT may count none of them); :meth:`Dovecot.settle` opens it, and each file has its
    UID in ``dovecot-uidlist`` before the test's own sessions start."""
    user = server.new_user()
    server.seed(user, "INBOX", [mailgen.plain_message(f"note {i}", "x") for i in range(4)])
    uid_list = server.folder_path(user, "INBOX") / "dovecot-uidlist"
    assert not uid_list.exists()
    server.settle(user, "INBOX")
    # A header line, then "<uid> <flags> :<file name>" per message.
    assert [line.split()[0] for line in uid_list.read_text().splitlines()[1:]] == ["1", "2", "3", "4"]


def test_seed_explicit_internaldates_and_append_later(server: Dovecot) -> None:
    user = server.new_user()
    when = [dt.datetime(2020, 2, 29, 12, 0, tzinfo=dt.UTC) + dt.timedelta(days=i) for i in range(3)]
    messages = [mailgen.plain_message(f"msg {i}", f"body {i}\n", message_id=f"<m{i}@x>") for i in range(3)]
    server.seed(user, "INBOX", messages, internaldates=when)
    with server.connect(user) as client:
        client.select_folder("INBOX")
        dates = client.fetch([1, 2, 3], ["INTERNALDATE"])
        assert [dates[u][b"INTERNALDATE"].astimezone(dt.UTC) for u in (1, 2, 3)] == when
        # Seeding into an already indexed folder is picked up too (new UIDs after the old ones).
        server.seed(user, "INBOX", [mailgen.plain_message("late", "late\n", message_id="<late@x>")])
        client.noop()
        client.unselect_folder()
        client.select_folder("INBOX")
        assert client.search(["ALL"]) == [1, 2, 3, 4]
        assert _message_ids(client, [4]) == ["<late@x>"]


def test_non_ascii_and_hierarchical_folders(server: Dovecot) -> None:
    user = server.new_user()
    server.seed(user, "Entwürfe", mailgen.corpus(3))
    server.seed(user, "Archiv/2024", mailgen.corpus(2))
    server.seed(user, "Проекты/Q1.2", mailgen.corpus(1))
    assert (server.maildir(user) / ".Entw&APw-rfe" / "maildirfolder").exists()
    assert maildir_folder_name("Проекты/Q1.2") == ".&BB8EQAQ+BDUEOgRCBEs-.Q1\\2e2"
    with server.connect(user) as client:
        folders = {name: flags for flags, _, name in client.list_folders()}
        assert {"INBOX", "Entwürfe", "Archiv", "Archiv/2024", "Проекты/Q1.2"} <= set(folders)
        assert client.list_folders()[0][1] == b"/"
        assert client.select_folder("Entwürfe")[b"EXISTS"] == 3
        assert client.select_folder("Archiv/2024")[b"EXISTS"] == 2
        assert client.select_folder("Проекты/Q1.2")[b"EXISTS"] == 1


def test_folder_names_with_colon_and_specials(server: Dovecot) -> None:
    user = server.new_user()
    names = ["Projects: 2024", "a:b/c:d", "R&D", "~tilde", "back\\slash"]
    for i, name in enumerate(names, start=1):
        server.seed(user, name, mailgen.corpus(i))
    with server.connect(user) as client:
        listed = {name for _, _, name in client.list_folders()}
        assert set(names) <= listed
        for i, name in enumerate(names, start=1):
            assert client.select_folder(name)[b"EXISTS"] == i, name
        client.create_folder("Kunden: Müller")
        assert client.folder_exists("Kunden: Müller")
    assert (server.maildir(user) / maildir_folder_name("Kunden: Müller")).is_dir()


# ---------------------------------------------------------------------------- server-side control


def test_set_uidvalidity(server: Dovecot) -> None:
    user = server.new_user()
    server.seed(user, "INBOX", mailgen.corpus(3))
    server.seed(user, "Entwürfe", mailgen.corpus(1))
    with server.connect(user) as client:
        before = client.select_folder("INBOX", readonly=True)[b"UIDVALIDITY"]
        client.unselect_folder()
        other_before = client.folder_status("Entwürfe", ["UIDVALIDITY"])[b"UIDVALIDITY"]
    server.set_uidvalidity(user, "INBOX", before + 1000)
    server.set_uidvalidity(user, "Entwürfe", other_before + 7)
    with server.connect(user) as client:
        after = client.select_folder("INBOX", readonly=True)
        assert after[b"UIDVALIDITY"] == before + 1000
        assert after[b"EXISTS"] == 3
        assert client.folder_status("Entwürfe", ["UIDVALIDITY"])[b"UIDVALIDITY"] == other_before + 7


def test_kick_disconnects_client(server: Dovecot) -> None:
    user = server.new_user()
    client = server.connect(user)
    bystander = server.connect(server.new_user())
    client.select_folder("INBOX")
    server.kick(user)

    def still_connected() -> bool:
        client.noop()
        return False

    with pytest.raises(_DEAD_CONNECTION):  # the BYE may arrive a moment later
        eventually(still_connected, within=5)
    bystander.noop()  # other users are unaffected
    bystander.logout()


def test_restart_keeps_data_ports_and_password() -> None:
    instance = Dovecot()
    try:
        instance.start()
        user = instance.new_user()
        instance.seed(user, "INBOX", mailgen.corpus(5))
        ports, password, root = (instance.plain_port, instance.tls_port), instance.password, instance.root
        client = instance.connect(user)
        uidvalidity = client.select_folder("INBOX")[b"UIDVALIDITY"]
        client.add_flags([1], [b"\\Flagged"])
        instance.restart()
        with pytest.raises(_DEAD_CONNECTION):
            client.noop()
        assert (instance.plain_port, instance.tls_port) == ports
        assert instance.password == password
        with instance.connect(user, tls=False) as again:
            info = again.select_folder("INBOX")
            assert info[b"EXISTS"] == 5
            assert info[b"UIDVALIDITY"] == uidvalidity
            assert b"\\Flagged" in again.get_flags([1])[1]
    finally:
        instance.stop()
    assert not root.exists()
    assert not instance.running
    instance.stop()  # idempotent


def test_free_ports_are_different_and_below_the_ephemeral_range() -> None:
    ports = imapserver.free_ports("127.0.0.1", "127.0.0.1", "127.0.0.1")
    assert len(set(ports)) == 3
    listen_ports = imapserver.listen_ports()
    if imapserver.EPHEMERAL_RANGE_FILE.exists():  # Linux: a connection never takes one of these
        assert listen_ports is not None and all(port in listen_ports for port in ports)
        low = int(imapserver.EPHEMERAL_RANGE_FILE.read_text().split()[0])
        assert all(port < low for port in ports)


@contextlib.contextmanager
def first_pick_taken(
    monkeypatch: pytest.MonkeyPatch, module: Any, index: int
) -> Iterator[tuple[list[list[int]], int]]:
    """``module``'s ``free_ports`` as another process finds it: the ``index``-th port of its first pick
    is held by a socket of this test (as if taken between the pick and the server's bind). Yields every
    pick so far and the held port."""
    picked: list[list[int]] = []
    pick = module.free_ports
    with socket.create_server(("127.0.0.1", 0)) as squatter:
        taken = squatter.getsockname()[1]

        def taken_first(*hosts: str) -> list[int]:
            ports = pick(*hosts)
            if not picked:
                ports[index] = taken
            picked.append(ports)
            return ports

        monkeypatch.setattr(module, "free_ports", taken_first)
        yield picked, taken


def test_regression_free_ports_never_hands_out_a_port_twice_in_a_process() -> None:
    """A CI run: a Submission chain picked Exim's port, let it go, then picked its Dovecot's ports, one of
    them the same; Exim found it taken. 300 picks from the 12,768 ports below the range repeat one about
    97% of the time when each pick forgets the ones before."""
    ports = [port for _ in range(300) for port in imapserver.free_ports("127.0.0.1")]
    assert len(set(ports)) == len(ports)


def test_regression_a_submission_chain_whose_exim_port_was_taken_starts_on_other_ports(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Exim does not exit when its port is taken: it retries the bind every 30 s for 5 minutes, and the
    chain was not ready within its wait (two tests of a CI run failed at setup)."""
    # The chain's first pick: submission, submissions, LMTP, then Exim's.
    with (
        first_pick_taken(monkeypatch, submission, index=3) as (picked, taken),
        submission.SubmissionDovecot() as chain,
    ):
        assert len(picked) == 2
        assert chain.mta_port == picked[1][3] != taken
        with socket.create_connection(("127.0.0.1", chain.mta_port), timeout=patient(5)) as mta:
            assert mta.recv(100).startswith(b"220 ")


def test_regression_a_server_whose_port_was_taken_before_it_listened_starts_on_other_ports(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A CI run: another process took a worker's Dovecot port between the pick and Dovecot's own bind;
    Dovecot exited ("Address already in use") and the 99 tests that needed it failed."""
    with first_pick_taken(monkeypatch, imapserver, index=0) as (picked, _taken), Dovecot() as instance:
        assert len(picked) == 2
        assert (instance.plain_port, instance.tls_port) == tuple(picked[1])
        with instance.connect() as client:
            assert client.select_folder("INBOX")[b"EXISTS"] == 0


# ---------------------------------------------------------------------------- mail generator


def _parse(raw: bytes) -> EmailMessage:
    msg = email.message_from_bytes(raw, policy=policy.default)
    assert isinstance(msg, EmailMessage)
    return msg


@pytest.mark.slow
def test_corpus_is_deterministic_varied_and_well_formed() -> None:
    n = 300
    first = list(mailgen.corpus(n, seed=7))
    assert first == list(mailgen.corpus(n, seed=7))
    assert first != list(mailgen.corpus(n, seed=8))
    assert mailgen.make_message(12) == mailgen.make_message(12)
    senders: set[str] = set()
    subjects: set[str] = set()
    lines: set[str] = set()
    types: set[str] = set()
    filenames: set[str] = set()
    previous_date: dt.datetime | None = None
    for i, raw in enumerate(first):
        assert b"\r\n\r\n" in raw
        assert raw.isascii() or b"\x00" not in raw
        msg = _parse(raw)
        assert not msg.defects, (i, msg.defects)
        senders.add(str(msg["From"]))
        subjects.add(str(msg["Subject"]))
        date = msg["Date"].datetime
        assert mailgen.DATE_START <= date < mailgen.DATE_END + dt.timedelta(days=1)
        if previous_date is not None:
            assert date > previous_date - dt.timedelta(days=2)
        previous_date = date
        body = msg.get_body(("plain", "html"))
        assert body is not None
        text = body.get_content()
        line = next(ln for ln in text.splitlines() if "ref " in ln)
        assert f"ref {i:06d}" in line
        lines.add(line)
        types.update(part.get_content_type() for part in msg.walk())
        filenames.update(att.get_filename() or "" for att in msg.iter_attachments())
    assert len(subjects) == n and len(lines) == n
    assert len(senders) >= 15
    assert {"Jürgen Müller <juergen.mueller@example.de>", "李雷 <li.lei@example.cn>"} <= senders
    assert any(not s.isascii() for s in subjects)
    assert {"text/plain", "text/html", "multipart/alternative", "multipart/mixed", "application/pdf"} <= types
    assert any(not name.isascii() for name in filenames)
    facts = mailgen.describe(5, seed=7, n=n)
    assert _parse(first[5])["Subject"] == facts.subject


def test_special_builders() -> None:
    msg = _parse(mailgen.non_ascii_message(subject="Entwürfe für Zoë", from_name="李雷"))
    assert msg["Subject"] == "Entwürfe für Zoë"
    assert msg["From"].addresses[0].display_name == "李雷"
    assert b"=?utf-8?" in mailgen.non_ascii_message()
    html_msg = _parse(mailgen.html_only_message())
    assert html_msg.get_content_type() == "text/html"
    plain = _parse(mailgen.plain_message("Hello", "World\n", from_="a@example.com", to="b@example.com"))
    assert plain.get_content().strip() == "World"
    big = mailgen.large_attachment_message(3 * 1024 * 1024)
    attachment = next(_parse(big).iter_attachments())
    assert len(attachment.get_content()) == 3 * 1024 * 1024
    assert len(big) > 4 * 1024 * 1024
    for kind in mailgen.MALFORMED_KINDS:
        broken = _parse(mailgen.malformed_message(kind))
        for part in broken.walk():  # a tolerant walker must not crash
            if not part.is_multipart():
                part.get_payload(decode=True)
    with pytest.raises(ValueError, match="unknown malformed kind"):
        mailgen.malformed_message("nope")


def test_seeded_malformed_and_large_messages_are_served(server: Dovecot) -> None:
    user = server.new_user()
    messages = [mailgen.malformed_message(kind) for kind in mailgen.MALFORMED_KINDS]
    messages.append(mailgen.large_attachment_message(2 * 1024 * 1024))
    server.seed(user, "INBOX", messages)
    with server.connect(user) as client:
        assert client.select_folder("INBOX")[b"EXISTS"] == len(messages)
        uids = client.search(["ALL"])
        fetched = client.fetch(uids, ["RFC822.SIZE", "BODYSTRUCTURE"])
        sizes = [fetched[uid][b"RFC822.SIZE"] for uid in uids]
        assert sizes[-1] == len(messages[-1])
        body = client.fetch([uids[-1]], ["BODY.PEEK[]"])[uids[-1]][b"BODY[]"]
        assert body == messages[-1]


# The harness at scale (100k messages as Maildir files, flags, both ends) is checked where a 100k
# mailbox is seeded anyway: tests/integration/search/test_search.py::test_100k_mailbox_pages_to_its_end.
