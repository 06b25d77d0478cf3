"""imap_manage_mailbox's delete of a just-emptied mailbox while another client delivers into it.

Dovecot deletes a mailbox with messages in it without a word, so a message appended between the tool's
last count and its DELETE was lost although the server had acknowledged it (14 messages in 6 of 45
deletes, measured). Here a second client APPENDs into the folder all along while the tool deletes it
200 times (the test recreates and empties it between deletes); every APPEND the server answered OK
must be found in some mailbox afterwards.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time

import pytest
from imapclient import IMAPClient
from imapclient.exceptions import IMAPClientError

from tests.integration.test_write_mailboxes import TOOL, writable
from tests.support.clients import AccountFactory, open_client
from tests.support.mail_state import message_id_listing
from tests.support.mailgen import plain_message
from tests.support.matrix import MatrixServer
from tests.support.patience import patient

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

DELETES = 200


class Deliverer(threading.Thread):
    """Another client APPENDing into ``mailbox`` until stopped; ``acknowledged``: the Message-IDs of
    every APPEND the server answered OK (a refusal, the folder being gone, is no delivery)."""

    def __init__(self, server: MatrixServer, user: str, mailbox: str) -> None:
        super().__init__(daemon=True)
        self.client = server.connect(user)
        self.mailbox = mailbox
        self.acknowledged: list[str] = []
        self.stop = threading.Event()
        self.pauses = random.Random(DELETES)

    def run(self) -> None:
        n = 0
        while not self.stop.is_set():
            n += 1
            message_id = f"<delivery-{n}@race.example>"
            message = plain_message(subject=f"delivery {n}", body="race", message_id=message_id)
            try:
                self.client.append(self.mailbox, message)
            except IMAPClientError:
                pass  # the folder is gone or renamed aside: not delivered
            else:
                self.acknowledged.append(message_id)
            # At any moment of a delete, and sometimes not during one at all.
            self.stop.wait(self.pauses.uniform(0, 0.06))


def select_made(client: IMAPClient, mailbox: str) -> None:
    """SELECT ``mailbox``, made first where missing. A delivery in flight while Dovecot deleted the
    folder can leave it listed but not selectable ("deleted under us") until Dovecot's own cleanup
    of it ends: asked again after a pause (five attempts at once failed alike in a loaded CI run)."""
    for attempt in range(10):
        with contextlib.suppress(IMAPClientError):
            if not client.folder_exists(mailbox):
                client.create_folder(mailbox)
            client.select_folder(mailbox)
            return
        time.sleep(0.05 * (attempt + 1))
    client.select_folder(mailbox)


@pytest.mark.parametrize("imap_server", ["dovecot", "cyrus"], indirect=True)
async def test_no_acknowledged_delivery_is_lost_to_a_delete(
    imap_server: MatrixServer, user: str, account: AccountFactory
) -> None:
    server = imap_server
    box, kept = server.mailbox_name("Box"), server.mailbox_name("Kept")
    server.seed(user, kept, [])
    deliverer = Deliverer(server, user, box)
    deleted = refused = timeouts = 0
    with server.connect(user) as direct:
        async for mcp in open_client(writable(account, user)):
            deliverer.start()
            try:
                for _ in range(DELETES):
                    select_made(direct, box)
                    waiting = direct.search("ALL")
                    if waiting:
                        direct.move(waiting, kept)
                    direct.unselect_folder()
                    envelope = await mcp.call(TOOL, {"action": "delete", "mailbox": box})
                    if envelope["error"]["code"] == "confirmation_required":
                        envelope = await mcp.call(TOOL, envelope["data"]["next_action"]["arguments"])
                    if envelope["success"]:
                        deleted += 1
                    elif envelope["error"]["code"] == "timeout":  # the folder may be left aside
                        timeouts += 1
                    else:  # a delivery came first, or Dovecot had the folder half made by one
                        assert envelope["error"]["code"] in {"invalid_input", "not_found"}, envelope
                        refused += 1
            finally:
                deliverer.stop.set()
                deliverer.join(patient(10))
                deliverer.client.logout()
    listing = message_id_listing(server, user)
    found = {message_id for ids in listing.values() for message_id in ids or []}
    lost = [message_id for message_id in deliverer.acknowledged if message_id not in found]
    assert not lost, f"{len(lost)} acknowledged deliveries lost ({deleted} deletes, {refused} refused)"
    # The race was run: deletes went through and deliveries were acknowledged around them (how many
    # depends on the machine's load: 91 of 200 on a busy two-core machine, so no share is asked).
    assert deleted > 0 and len(deliverer.acknowledged) >= DELETES // 10, (
        deleted,
        len(deliverer.acknowledged),
    )
    left_aside = [name for name in listing if "-deleting-" in name]
    assert len(left_aside) <= timeouts, listing
