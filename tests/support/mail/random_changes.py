"""Random changes another client of the same user makes to the mail, for the property tests of the
local index (``test_index_search``, ``test_index_concurrent``)."""

from __future__ import annotations

import random
from collections.abc import Callable

import imapclient

#: What a change does, each as likely as it is listed (appends twice as likely: the mail grows).
ACTIONS = ("append", "append", "flag", "unflag", "move", "expunge")


def random_change(
    imap: imapclient.IMAPClient,
    rng: random.Random,
    folder: str,
    other_folder: str,
    new_message: Callable[[], bytes],
) -> str:
    """One random change in ``folder`` on ``imap``: a message appended (``new_message``, unread or not),
    ``\\Seen`` or ``\\Flagged`` set or cleared on one to three messages, one to three moved to
    ``other_folder`` (COPY, STORE and EXPUNGE without MOVE) or expunged. The action taken."""
    imap.select_folder(folder)
    uids = imap.search("ALL")
    action = rng.choice(ACTIONS) if uids else "append"
    if action == "append":
        imap.append(folder, new_message(), flags=[b"\\Seen"] if rng.random() < 0.3 else [])
        return action
    chosen = rng.sample(uids, min(len(uids), rng.randint(1, 3)))
    if action in ("flag", "unflag"):
        flag = rng.choice((b"\\Seen", b"\\Flagged"))
        (imap.add_flags if action == "flag" else imap.remove_flags)(chosen, [flag])
    elif action == "move" and imap.has_capability("MOVE"):
        imap.move(chosen, other_folder)
    else:
        if action == "move":
            imap.copy(chosen, other_folder)
        imap.add_flags(chosen, [b"\\Deleted"])
        imap.expunge()
    return action
