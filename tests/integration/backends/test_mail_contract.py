"""The mail backend contract (``mail/backend.py``) on real servers through ``imap/backend.py``: the cases
of ``tests/support/shared/mail_contract*.py``, whose rows on the in-memory backend run in the pure tier
(``tests/pure/test_mail_contract.py``), here on each server they name.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mail_imap_mcp.credentials.logins import credentials_for
from mail_imap_mcp.imap.backend import ImapMail
from mail_imap_mcp.imap.connection import AccountConnection
from tests.support.accounts import account_settings
from tests.support.clients.in_process import make_config
from tests.support.servers.imapserver import ImapServer
from tests.support.shared.mail_contract import Case, Mail, rows


@pytest.fixture
def mail(request: pytest.FixtureRequest) -> Iterator[Mail]:
    server: ImapServer = request.getfixturevalue(request.param)
    user = server.new_user()
    trash, archive = server.mailbox_name("Trash"), server.mailbox_name("Archive")
    with server.connect(user, tls=False, starttls=False) as client:
        for folder in (trash, archive):
            if not client.folder_exists(folder):
                client.create_folder(folder)
        advertised = [c for c in client.capabilities() if c.upper().startswith(b"APPENDLIMIT=")]
    account = make_config({"default": account_settings(server, user)}).accounts["default"]
    connection = AccountConnection("default", account, credentials=credentials_for("default", account))
    yield Mail(
        ImapMail(connection),
        trash,
        archive,
        server.mailbox_name("Nowhere"),
        lambda name: server.recreate_mailbox(user, name),
        int(advertised[0].partition(b"=")[2]) if advertised else None,
        server.mailbox_name,
    )
    connection.close()


@pytest.mark.parametrize(("case", "mail"), rows(memory=False), indirect=["mail"])
def test_a_server_keeps_the_mail_contract(case: Case, mail: Mail) -> None:
    case.run(mail)
