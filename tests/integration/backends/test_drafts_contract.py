"""The drafts family of the mail backend (``mail/drafts.py``) under contract on real servers through
``imap/drafts.py``: the cases of ``tests/support/shared/drafts_contract.py``, whose rows on the in-memory
backend run in the pure tier (``tests/pure/test_drafts_contract.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mail_imap_mcp.app import AppContext
from tests.support.accounts import account_settings
from tests.support.clients.in_process import make_config
from tests.support.mail.mail_state import message_id_listing
from tests.support.servers.imapserver import ImapServer
from tests.support.shared.drafts_contract import CASES, WITHOUT_UIDPLUS, Drafts
from tests.support.shared.mail_contract import Case


@pytest.fixture
def mail(request: pytest.FixtureRequest) -> Iterator[Drafts]:
    name: str = request.param
    server: ImapServer = request.getfixturevalue(name)
    user = server.new_user()
    drafts, trash = server.mailbox_name("Drafts"), server.mailbox_name("Trash")
    for folder in (drafts, trash):
        server.seed(user, folder, [])  # made where the server does not make it
    app = AppContext.from_config(make_config({"default": account_settings(server, user)}))
    listing = lambda: message_id_listing(server, user)  # noqa: E731
    yield Drafts(app.mail("default"), drafts, trash, listing, name not in WITHOUT_UIDPLUS)  # imap/backend.py
    app.close()


@pytest.mark.parametrize(("case", "mail"), CASES.rows(memory=False), indirect=["mail"])
def test_a_server_keeps_the_drafts_contract(case: Case[Drafts], mail: Drafts) -> None:
    case.run(mail)
