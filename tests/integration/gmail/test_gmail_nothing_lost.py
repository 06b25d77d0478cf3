"""Nothing lost on Gmail: random sequences of Gmail's writes through the MCP client against the Gmail
emulation, each followed by a census from a session of the test's own.

Steps, drawn by hypothesis (a fixed seed, no example database): labels added, removed or replaced on
messages found by a search of every folder or of INBOX, archive (a move of INBOX messages to All Mail),
delete (a move to Trash), and the undo ``next_action`` of an earlier step. After every step:

* the account holds the same messages (one X-GM-MSGID each, in All Mail or Trash): none is lost, none
  is duplicated, and each one's text is intact;
* what a label write reports as each message's labels after is what the server holds;
* INBOX holds exactly the messages labelled Inbox, and a label folder exactly those with its label.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import account_client
from tests.support.mail import mailgen
from tests.support.servers.gmail import ALL_MAIL, TRASH, Gmail

LABELS = ["Work", "Receipts", "Important", "Inbox"]
STEPS = st.lists(
    st.tuples(
        st.sampled_from(["add", "remove", "replace", "archive", "delete", "undo"]),
        st.lists(st.integers(0, 5), min_size=1, max_size=3),
        st.lists(st.sampled_from(LABELS), min_size=1, max_size=2),
        st.booleans(),
    ),
    min_size=3,
    max_size=8,
)


def census(gmail: Gmail, user: str) -> dict[int, tuple[bool, frozenset[str], str]]:
    """Every message of the account by X-GM-MSGID: in Trash, its labels, a hash of its text."""
    found: dict[int, tuple[bool, frozenset[str], str]] = {}
    with gmail.connect(user) as client:
        for name in (ALL_MAIL, TRASH):
            client.select_folder(name, readonly=True)
            uids = client.search("ALL")
            for data in (
                client.fetch(uids, ["X-GM-MSGID", "X-GM-LABELS", "BODY.PEEK[TEXT]"]).values() if uids else []
            ):
                msgid = data[b"X-GM-MSGID"]
                assert msgid not in found, f"message {msgid} is in All Mail and in Trash"
                labels = frozenset(
                    label.decode() if isinstance(label, bytes) else str(label)
                    for label in data[b"X-GM-LABELS"]
                )
                found[msgid] = (name == TRASH, labels, hashlib.sha256(data[b"BODY[TEXT]"]).hexdigest())
        for folder, label in (("INBOX", "\\Inbox"), ("Work", "Work"), ("Receipts", "Receipts")):
            if not client.folder_exists(folder):
                continue
            client.select_folder(folder, readonly=True)
            uids = client.search("ALL")
            shown = {d[b"X-GM-MSGID"] for d in client.fetch(uids, ["X-GM-MSGID"]).values()} if uids else set()
            assert shown == {
                m for m, (trashed, labels, _) in found.items() if label in labels and not trashed
            }, folder
    return found


async def run(gmail: Gmail, steps: list[tuple[str, list[int], list[str], bool]]) -> None:
    user = gmail.new_user("n")
    base = dt.datetime(2026, 9, 1, 8, tzinfo=dt.UTC)
    messages = [
        mailgen.plain_message(
            f"Note {i}", f"Body of note {i}.", date=base + dt.timedelta(hours=i), message_id=f"<n{i}@x>"
        )
        for i in range(6)
    ]
    gmail.seed(user, "INBOX", messages[:3])
    gmail.seed(user, "Work", messages[3:5])
    gmail.seed(user, ALL_MAIL, messages[5:])
    before = census(gmail, user)
    undo: list[dict[str, Any]] = []
    reported: dict[str, list[str]] = {}
    async for mcp in account_client(gmail, user, write_enabled=True):
        for action, picks, labels, whole in steps:
            await step(mcp, action, picks, labels, whole, undo, reported)
            now = census(gmail, user)
            assert set(now) == set(before), "a message was lost or made"
            assert {m: h for m, (_, _, h) in now.items()} == {m: h for m, (_, _, h) in before.items()}
            await reported_labels_hold(mcp, reported)


async def step(
    mcp: EnvelopeClient,
    action: str,
    picks: list[int],
    labels: list[str],
    whole: bool,
    undo: list[dict[str, Any]],
    reported: dict[str, list[str]],
) -> None:
    if action == "undo":
        if undo:
            envelope = await mcp.call(undo[-1]["tool"], undo.pop()["arguments"])
            assert envelope["success"] or envelope["error"]["code"] in ("not_found", "invalid_input"), (
                envelope
            )
        return
    mailbox = "*" if whole and action not in ("archive",) else "INBOX"
    found = await mcp.ok("imap_search_messages", {"mailbox": mailbox, "limit": 20})
    ids = (
        list(dict.fromkeys(found["messages"][i % len(found["messages"])]["message_id"] for i in picks))
        if found["messages"]
        else []
    )
    if not ids:
        return
    if action in ("add", "remove", "replace"):
        envelope = await mcp.call(
            "imap_update_message_flags", {"message_ids": ids, "operation": action, "labels": labels}
        )
    else:
        envelope = await mcp.call("imap_apply_to_messages", {"message_ids": ids, "action": action})
    assert envelope["success"] or envelope["error"]["code"] == "invalid_input", envelope
    if envelope["success"]:
        next_action = envelope["data"].get("next_action")
        if next_action and next_action["instruction"].startswith("Undo"):
            undo.append(next_action)
        reported.update(
            {
                result.get("new_message_id") or result["message_id"]: result["labels"]
                for result in envelope["data"].get("messages", [])
                if "labels" in result
            }
        )


async def reported_labels_hold(mcp: EnvelopeClient, reported: dict[str, list[str]]) -> None:
    """The labels the last label write reported are those its messages have now (a search of every
    folder lists them; a message reported in INBOX that is also in All Mail is compared there)."""
    if not reported:
        return
    read = await mcp.ok("imap_search_messages", {"mailbox": "*", "limit": 50, "fields": "full"})
    listed = {m["message_id"]: m["labels"] for m in read["messages"]}
    for message_id, labels in reported.items():
        if message_id in listed:
            assert sorted(listed[message_id]) == sorted(labels), message_id
    reported.clear()


@pytest.mark.slow
@seed(20261125)
@settings(
    max_examples=12, deadline=None, database=None, derandomize=False, suppress_health_check=list(HealthCheck)
)
@given(steps=STEPS)
def test_gmails_writes_lose_and_duplicate_nothing(
    gmail: Gmail, steps: list[tuple[str, list[int], list[str], bool]]
) -> None:
    anyio.run(run, gmail, steps)
