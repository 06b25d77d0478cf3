"""No chain of ordinary writes destroys a message for good (issue 33, C1), through an MCP client on Dovecot.

The review found three writes that did: move a message to Drafts, flag it ``\\Draft``, then save a draft
with ``replace_message_id`` of it (the old one was expunged). Here every chain of two and of three write
steps a prompt-injected agent could take on one message (with allow_permanent_delete = false, confirming
with every token it is handed, but unable to answer for the user) runs on a fresh copy of a message with
a PDF attachment, and that message must still exist afterwards in some mailbox (Trash counts).
"""

from __future__ import annotations

import itertools
import re
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import AccountFactory, make_config, open_client
from tests.support.mail.mail_state import copies_of
from tests.support.mail.mailgen import large_attachment_message
from tests.support.servers.matrix import MatrixServer

pytestmark = pytest.mark.anyio

DRAFTS, TRASH, ARCHIVE = "Drafts", "Trash", "Archive"


def attached(subject: str) -> bytes:
    return large_attachment_message(4000, subject=subject)


class Target:
    """The message a chain works on: its current id, as the answers of the steps tell it."""

    def __init__(self, message_id: str) -> None:
        self.message_id = message_id

    def mailbox(self) -> str:
        return self.message_id.split(":")[2]


async def call(mcp: EnvelopeClient, tool: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
    """The call's data, or None when it failed; a confirmation token handed out is used at once (an
    agent can do that), a confirmation only the user can give is not."""
    envelope = await mcp.call(tool, arguments)
    token = (envelope.get("error") or {}).get("details", {}).get("confirm_token")
    if token is not None:
        envelope = await mcp.call(tool, {**arguments, "confirm_token": token})
    data: dict[str, Any] | None = envelope["data"] if envelope["success"] else None
    return data


async def apply(mcp: EnvelopeClient, target: Target, **arguments: Any) -> None:
    data = await call(mcp, "imap_apply_to_messages", {"message_ids": [target.message_id], **arguments})
    moved = data["results"][0]["new_message_id"] if data else None
    target.message_id = moved or target.message_id


async def move_to_drafts(mcp: EnvelopeClient, target: Target) -> None:
    await apply(mcp, target, action="move", destination_mailbox=DRAFTS)


async def move_to_archive(mcp: EnvelopeClient, target: Target) -> None:
    await apply(mcp, target, action="move", destination_mailbox=ARCHIVE)


async def delete_to_trash(mcp: EnvelopeClient, target: Target) -> None:
    await apply(mcp, target, action="delete")


async def delete_for_good(mcp: EnvelopeClient, target: Target) -> None:
    await apply(mcp, target, action="delete", permanent=True)


async def flag(mcp: EnvelopeClient, target: Target, flag: str) -> None:
    arguments = {"message_ids": [target.message_id], "operation": "add", "flags": [flag]}
    await call(mcp, "imap_update_message_flags", arguments)


async def flag_draft(mcp: EnvelopeClient, target: Target) -> None:
    await flag(mcp, target, "\\Draft")


async def flag_deleted(mcp: EnvelopeClient, target: Target) -> None:
    await flag(mcp, target, "\\Deleted")


async def replace_as_draft(mcp: EnvelopeClient, target: Target) -> None:
    arguments = {"to": ["a@example.com"], "body_text": "x", "replace_message_id": target.message_id}
    data = await call(mcp, "imap_save_draft", arguments)
    target.message_id = (data or {}).get("replaced_trash_message_id") or target.message_id


async def delete_its_mailbox(mcp: EnvelopeClient, target: Target) -> None:
    await call(mcp, "imap_manage_mailbox", {"action": "delete", "mailbox": target.mailbox()})


Step = Callable[[EnvelopeClient, Target], Awaitable[None]]
STEPS: list[Step] = [
    move_to_drafts,
    move_to_archive,
    delete_to_trash,
    delete_for_good,
    flag_draft,
    flag_deleted,
    replace_as_draft,
    delete_its_mailbox,
]
CHAINS = [chain for length in (2, 3) for chain in itertools.product(STEPS, repeat=length)]


@pytest.mark.parametrize("first", STEPS, ids=lambda step: step.__name__)
async def test_no_chain_of_two_or_three_writes_destroys_a_message(
    dovecot: MatrixServer, user: str, account: AccountFactory, first: Step
) -> None:
    for mailbox in (DRAFTS, TRASH, ARCHIVE):
        dovecot.seed(user, mailbox, [])
    config = make_config({"default": account(user)}, write_enabled=True)
    chains = [chain for chain in CHAINS if chain[0] is first]
    # One session asks after every chain (each login costs Dovecot a process of its own).
    with dovecot.connect(user, tls=False, starttls=False) as checker:
        # imapclient writes some commands in two pieces: without this each waits for a delayed ACK.
        checker.socket().setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        assert copies_of(checker, "<chain-none@example.net>") == 0  # the count is not of any message
        async for mcp in open_client(config):
            for number, chain in enumerate(chains):
                subject, header_id = f"chain-{number}-end", f"<chain-{number}@example.net>"
                raw = re.sub(rb"Message-ID: <[^>]*>", f"Message-ID: {header_id}".encode(), attached(subject))
                dovecot.seed(user, "INBOX", [raw])
                found = await mcp.ok("imap_search_messages", {"mailbox": "INBOX", "subject": subject})
                target = Target(found["messages"][0]["message_id"])
                for step in chain:
                    await step(mcp, target)
                copies = copies_of(checker, header_id)
                assert copies >= 1, f"{' -> '.join(step.__name__ for step in chain)} destroyed the message"
