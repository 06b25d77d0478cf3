"""The draft a send reads is the draft, whatever another call selected meanwhile (issue 79). Before the user
is asked, imap_send_draft reads the draft's size and flags, checks its size, then reads its bytes: two
reads on the account's one connection, between which another call may select another mailbox (a search
of INBOX, say). Each read checks the mailbox it reads, so the bytes are the draft's; before, the bytes
were fetched by UID from whatever the connection had selected, and the user would have been asked to
send the message of INBOX with that UID.
"""

from __future__ import annotations

from typing import Any

import pytest

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.services import send_prepare
from mail_imap_mcp.services.send_prepare import prepare
from tests.support.accounts import account_settings
from tests.support.clients.in_process import make_config
from tests.support.mail.mailgen import plain_message
from tests.support.servers.dovecot import Dovecot


def test_the_draft_read_for_sending_is_the_draft_after_another_call_selected_inbox(
    dovecot: Dovecot, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = dovecot.new_user()
    address = f"{user}@example.com"
    dovecot.seed(
        user,
        "INBOX",
        [plain_message("Not the draft", "Mail received.\n", from_=address, to="ann@example.com")],
    )
    draft = plain_message("The draft", "Text to send.\n", from_=address, to="ann@example.com")
    dovecot.seed(user, "Drafts", [draft], flags=["\\Draft"])
    settings = account_settings(dovecot, user, addresses=[address], allowed_recipients=["@example.com"])
    app = AppContext.from_config(make_config({"default": settings}))
    checked = send_prepare._check_size

    def meanwhile(*args: Any) -> None:
        app.connection("default").run(lambda session: session.examine("INBOX"))  # another call's search
        checked(*args)

    monkeypatch.setattr(send_prepare, "_check_size", meanwhile)
    try:
        ref = MessageRef("default", "Drafts", app.mail("default").status("Drafts").uidvalidity, 1)
        prepared = prepare(app, "default", ref)
        try:
            sent = prepared.draft.read_at(0, prepared.draft.size)
        finally:
            prepared.close()
    finally:
        app.close()
    assert b"Subject: The draft" in sent and b"Text to send." in sent
    assert prepared.outgoing.recipients == ("ann@example.com",)
