"""Forwarding and answering invitations on every server of the matrix (Dovecot, Cyrus, Courier), where
the sending chain (Dovecot only) is not needed: the mark a send leaves on the forwarded message
(the backend's ``mark_original``, imap/drafts.py: ``$Forwarded`` on exactly it, as each server keeps new keywords, PERMANENTFLAGS
``\\*``; a folder that keeps none is in test_forward_and_invitation.py, through a Dovecot ACL), read back by
a session of the test's own; and the one search that finds an invitation's later cancellation.
"""

from __future__ import annotations

from typing import Any

import pytest

from mail_imap_mcp.config import Config
from mail_imap_mcp.content.forwards import FORWARDED_KEYWORD
from mail_imap_mcp.credentials.logins import credentials_for
from mail_imap_mcp.imap.backend import ImapMail
from mail_imap_mcp.imap.connection import AccountConnection
from mail_imap_mcp.services.send_marks import original_words
from tests.support.accounts import account_settings
from tests.support.clients.in_process import make_config, open_client
from tests.support.mail.invitations import google, invitation_mail, outlook
from tests.support.mail.mailgen import plain_message
from tests.support.servers.matrix import MatrixServer, inbox_only


def _flags(server: MatrixServer, user: str) -> dict[str, set[str]]:
    with server.connect(user) as client:
        permanent = client.select_folder("INBOX").get(b"PERMANENTFLAGS", ())  # EXAMINE says none
        answer = client.fetch(client.search(), ["FLAGS", "BODY.PEEK[HEADER.FIELDS (SUBJECT)]"])
    flags = {
        next(v for k, v in data.items() if k.startswith(b"BODY[")).decode().split(":", 1)[1].strip(): {
            f.decode() for f in data[b"FLAGS"] if f.lower() != b"\\recent"
        }
        for data in answer.values()
    }
    flags["PERMANENTFLAGS"] = {f.decode() for f in permanent}
    return flags


@inbox_only()
def test_the_forwarded_message_alone_is_marked_where_its_folder_keeps_keywords(
    imap_server: MatrixServer,
) -> None:
    user = imap_server.new_user()
    messages = [plain_message(f"m{i}", "text\r\n", message_id=f"<m{i}@marks.test>") for i in range(3)]
    imap_server.seed(user, "INBOX", messages)
    config = Config.model_validate({"accounts": {"default": account_settings(imap_server, user)}})
    account = config.accounts["default"]
    connection = AccountConnection("default", account, credentials=credentials_for("default", account))
    mail = ImapMail(connection)
    try:
        shown = original_words(mail, ["INBOX"], "<m1@marks.test>")
        marked = mail.mark_original(["INBOX"], "<m1@marks.test>", FORWARDED_KEYWORD)
        missing = mail.mark_original(["INBOX"], "<none@marks.test>", FORWARDED_KEYWORD)
    finally:
        connection.close()
    flags = _flags(imap_server, user)
    assert "\\*" in flags.pop("PERMANENTFLAGS")  # every server of the matrix keeps new keywords (Courier too)
    assert shown is not None and shown.startswith("'m1' of ")
    assert (marked, missing) == ("marked", "not_found")
    assert {subject: FORWARDED_KEYWORD in found for subject, found in flags.items()} == {
        "m0": False, "m1": True, "m2": False
    }  # fmt: skip


@pytest.mark.anyio
@inbox_only()
@pytest.mark.parametrize("vendor", ["google", "outlook"])
async def test_a_later_cancel_is_found_by_one_search_on_every_server(
    imap_server: MatrixServer, vendor: str
) -> None:
    """The later message is found by ``UID SEARCH BODY <UID>``, which each server answers from the decoded
    calendar part (Exchange's is base64): an invitation is answerable until its cancellation arrives."""
    user = imap_server.new_user()
    alice, bob = f"{user}@example.com", "bob@example.com"
    make = {"google": google, "outlook": outlook}[vendor]
    imap_server.seed(user, "INBOX", [invitation_mail(bob, alice, make(bob, [alice]), vendor=vendor)])
    arguments: dict[str, Any] = {"invitation_answer": "decline", "dry_run": True}
    # drafts_mailbox: INBOX, the one folder this test names (a dry run saves nothing there).
    config = make_config(
        {"default": account_settings(imap_server, user, addresses=[alice], drafts_mailbox="INBOX")},
        write_enabled=True,
    )
    async for mcp in open_client(config):
        (invitation,) = (await mcp.ok("imap_search_messages", {"mailbox": "INBOX"}))["messages"]
        arguments["reply_to_invitation"] = invitation["message_id"]
        answered = await mcp.ok("imap_save_draft", arguments)
        cancel = make(bob, [alice], method="CANCEL", sequence=3)
        imap_server.seed(user, "INBOX", [invitation_mail(bob, alice, cancel, vendor=vendor, method="CANCEL")])
        refused = await mcp.fail("imap_save_draft", arguments, "conflict")
    assert answered["draft"]["invitation_reply"].startswith("Decline 'Quarterly review'")
    assert refused["error"]["details"]["reason"] == "invitation_cancelled"
