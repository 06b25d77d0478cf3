"""Round trips of saving a draft and of reading one for sending, pinned, as
tests/integration/harness/test_round_trips.py pins the reads: a new draft, its revision (the replaced draft
read, the new one saved, the old one moved alone to Trash), and the draft read before the user is asked to
send it (services/send_prepare.py: the Drafts folder by one LIST, its size and flags, then its bytes a chunk
at a time). Each is made against Dovecot through the wire recorder; a change that adds a command or a
round trip fails here. Issue 79 moved these steps behind the backend's drafts family (mail/drafts.py)
with the waits they had.
"""

from __future__ import annotations

import anyio
import pytest

from mail_imap_mcp.mail.ids import parse_message_id
from mail_imap_mcp.services.send_prepare import prepare
from tests.support.round_trips import Plan, plain_settings, recording, rig
from tests.support.servers.dovecot import Dovecot
from tests.support.wire import parse_commands

pytestmark = pytest.mark.anyio

PLANS: dict[str, Plan] = {
    # One LIST of the roles, then the APPEND (APPENDUID says where it landed; its literal waits once more).
    "new draft": Plan(("LIST", "APPEND"), 3),
    # LIST; the replaced draft read (EXAMINE of Drafts, its header and structure, its text); the APPEND
    # after stepping out of Drafts; the old draft selected, checked to be a \Draft still, moved alone.
    "revision": Plan(
        (
            "LIST",
            "EXAMINE",
            "UID FETCH",
            "UID FETCH",
            "UNSELECT",
            "APPEND",
            "SELECT",
            "UID FETCH",
            "UID MOVE",
        ),
        10,
    ),
    # LIST; Drafts examined (it was selected read-write for the move) and the draft's size and flags; its
    # bytes a chunk at a time, the selection revalidated with the first chunk (no wait of its own: before
    # issue 79 the bytes were read from whatever the connection had selected, two commands fewer).
    "prepare": Plan(("LIST", "EXAMINE", "UID FETCH", "NOOP", "STATUS", "UID FETCH"), 4),
}


async def test_saving_a_draft_and_reading_it_for_sending_wait_as_pinned(dovecot: Dovecot) -> None:
    user = dovecot.new_user("t-rtd")
    for folder in ("Drafts", "Trash"):
        dovecot.seed(user, folder, [])
    address = f"{user}@example.com"
    seen: dict[str, Plan] = {}
    with recording(dovecot) as recorder:
        settings = plain_settings(dovecot, user, recorder.port)
        settings.update(write_enabled=True, addresses=[address], allowed_recipients=["@example.com"])
        async with rig(settings, recorder) as r:
            await r.call("imap_list_mailboxes", {})  # logged in before the calls pinned
            draft = {"to": ["ann@example.com"], "subject": "Plan", "body_text": "First."}
            first, seen["new draft"] = await r.call("imap_save_draft", draft)
            revised = {**draft, "body_text": "Second.", "replace_message_id": first["message_id"]}
            second, seen["revision"] = await r.call("imap_save_draft", revised)
            ref = parse_message_id(second["message_id"], r.app.caller)
            recorder.take()
            before = r.connection.round_trips
            prepared = await anyio.to_thread.run_sync(lambda: prepare(r.app, "default", ref))
            sent = b"".join(out for out, _ in recorder.take())
            seen["prepare"] = Plan(
                tuple(c.verb for c in parse_commands(sent)), r.connection.round_trips - before
            )
            body = prepared.draft.read_at(0, prepared.draft.size)
            prepared.close()
    assert seen == PLANS
    assert b"Second." in body and prepared.outgoing.header_id == second["header_message_id"]
