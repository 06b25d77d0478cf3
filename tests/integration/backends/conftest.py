"""The integration tests of backends: ``mail``, a server of the matrix as the mail backend contract
(``tests/support/shared/mail_contract.py``) sees it, through ``imap/backend.py``, on a new user."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mail_imap_mcp.credentials.logins import credentials_for
from mail_imap_mcp.imap.backend import ImapMail
from mail_imap_mcp.imap.connection import AccountConnection
from tests.support.accounts import account_settings
from tests.support.clients.in_process import make_config
from tests.support.servers.imapserver import ImapServer
from tests.support.shared.mail_contract import Mail


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
