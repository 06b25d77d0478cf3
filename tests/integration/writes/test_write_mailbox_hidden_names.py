"""imap_manage_mailbox's rename into a name a search of every mailbox leaves out by its name (issue 56 item
14): where the server marks no Junk (or Trash) folder, the search takes a folder named ``Spam``, ``Junk``
or ``Trash`` for it and leaves it out, so a folder renamed so would hide its mail from ``mailbox: "*"``.
The rename is refused by the search's own rule, and undone at once where LIST shows it so after the
RENAME anyway (another client deleted the marked Junk folder meanwhile)."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from mail_imap_mcp.mail.roles import JUNK, TRASH
from tests.support.accounts import account_settings
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import AccountFactory, make_config, open_client
from tests.support.mail.mail_state import message_id_listing
from tests.support.servers.faultproxy import FaultProxy
from tests.support.servers.matrix import MatrixServer
from tests.support.shared.write_mailboxes import TOOL, messages, writable

pytestmark = pytest.mark.anyio

#: Names the search leaves out where the server marks no folder with the role each stands for.
HIDING_NAMES = {"Spam": JUNK, "Junk": JUNK, "Trash": TRASH}


async def everywhere(mcp: EnvelopeClient) -> set[str]:
    """The subjects a search of every mailbox finds."""
    data = await mcp.ok("imap_search_messages", {"mailbox": "*", "limit": 100})
    return {message["subject"] for message in data["messages"]}


async def rename(mcp: EnvelopeClient, mailbox: str, destination: str) -> dict[str, Any]:
    """The envelope of a rename, confirmed where the tool asks for it."""
    args = {"action": "rename", "mailbox": mailbox, "destination_mailbox": destination}
    envelope = await mcp.call(TOOL, args)
    if not envelope["success"] and envelope["error"]["code"] == "confirmation_required":
        envelope = await mcp.call(TOOL, envelope["data"]["next_action"]["arguments"])
    return envelope


def marked_roles(server: MatrixServer, user: str) -> set[str]:
    """The special-use roles LIST shows on some folder of ``user``, lower case (Cyrus: ``\\junk``)."""
    with server.connect(user) as client:
        return {flag.decode().lower() for flags, _, _ in client.list_folders() for flag in flags}


async def test_a_rename_never_hides_mail_from_a_search_of_every_mailbox(
    imap_server: MatrixServer, user: str, account: AccountFactory
) -> None:
    """On every server of the matrix: renamed to ``Spam``, ``Junk`` or ``Trash``, a folder's mail is still
    found by ``mailbox: "*"`` afterwards; where LIST marks no folder with the role the name stands for,
    the rename is refused before anything is sent, naming destination_mailbox."""
    server = imap_server
    for number in range(len(HIDING_NAMES)):
        server.seed(user, server.mailbox_name(f"Keep{number}"), messages(2, f"keep{number}"))
    async for mcp in open_client(writable(account, user)):
        found = await everywhere(mcp)
        assert {f"keep{n} {i}" for n in range(len(HIDING_NAMES)) for i in range(2)} <= found
        for number, (name, role) in enumerate(HIDING_NAMES.items()):
            unmarked = role.lower() not in marked_roles(server, user)
            envelope = await rename(mcp, server.mailbox_name(f"Keep{number}"), name)
            assert await everywhere(mcp) == found, (name, envelope)
            if unmarked:
                assert not envelope["success"], (name, envelope)
                error = envelope["error"]
                assert (error["code"], error["details"]["parameter"]) == (
                    "invalid_input",
                    "destination_mailbox",
                )
                assert (
                    "hidden from searches of every mailbox" in error["message"]
                    or "undone" in error["message"]
                )


async def test_refused_by_the_searchs_rule_before_anything_is_sent(courier: MatrixServer) -> None:
    """Courier marks no special-use folder: ``Spam`` is refused at once (no confirmation asked), in words
    that say why, and every message stays where it was."""
    user = courier.new_user()
    old = courier.mailbox_name("Old")
    courier.seed(user, old, messages(2, "old"))
    before = message_id_listing(courier, user)
    async for mcp in open_client(writable(partial(account_settings, courier), user)):
        args = {"action": "rename", "mailbox": old, "destination_mailbox": "Spam"}
        error = (await mcp.fail(TOOL, args, "invalid_input"))["error"]
        assert error["details"]["parameter"] == "destination_mailbox"
        assert "for the \\Junk folder and leave it out" in error["message"], error["message"]
        assert "nothing was changed" in error["message"], error["message"]
    assert message_id_listing(courier, user) == before


async def test_a_rename_that_lands_on_a_name_the_search_leaves_out_is_undone_at_once(
    dovecot: MatrixServer, user: str, account: AccountFactory
) -> None:
    """The marked ``Junk`` folder makes ``Spam`` an ordinary name when the rename is checked; another client
    deletes ``Junk`` just before the RENAME reaches the server, so ``Spam`` is then taken for the Junk
    folder: the rename is undone at once, and the answer says why and where the folder is."""
    dovecot.seed(user, "Old", messages(3, "old"))
    with dovecot.connect(user) as other:
        other.create_folder("Junk")  # special_use = \Junk by name in the test Dovecot
    assert JUNK.lower() in marked_roles(dovecot, user)

    def delete_junk() -> None:
        with dovecot.connect(user) as other:
            other.delete_folder("Junk")

    with FaultProxy(dovecot.host, dovecot.plain_port) as proxy:
        settings = account(user, host="127.0.0.1", port=proxy.port, security="plain", ca_file=None)
        async for mcp in open_client(make_config({"default": settings}, write_enabled=True)):
            before = await everywhere(mcp)
            proxy.before_sent(b' RENAME "Old" ', delete_junk)
            envelope = await rename(mcp, "Old", "Spam")
            assert proxy.befores == 1
            assert not envelope["success"], envelope
            error = envelope["error"]
            assert error["code"] == "invalid_input"
            details = error["details"]
            assert (details["mailbox_now"], details["taken_for"]) == ("Old", JUNK), details
            assert "undone" in error["message"] and "marks no \\Junk folder" in error["message"], error
            assert await everywhere(mcp) == before
    assert set(message_id_listing(dovecot, user)) == {"INBOX", "Old"}
