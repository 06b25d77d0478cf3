"""The words of a move, copy or delete (:mod:`mail_imap_mcp.operations.transfer`): what was asked and what
became of each message. Apart from the transfer, so that the tool's models, which a server's start lists,
name them without the IMAP commands a transfer runs."""

from __future__ import annotations

from typing import Literal

Action = Literal["move", "copy", "delete", "archive"]
#: What happened to a message (``would_*`` in a dry run).
Done = Literal[
    "moved",
    "copied",
    "moved_to_trash",
    "deleted",
    "archived",
    "would_move",
    "would_copy",
    "would_move_to_trash",
    "would_delete",
    "would_archive",
]
#: What became of a message: done (or would be), or why not (see its issue).
Outcome = Literal[Done, "not_found", "outcome_unknown", "not_attempted", "failed"]
DONE: dict[tuple[Action, bool], Done] = {
    ("move", False): "moved",
    ("copy", False): "copied",
    ("delete", False): "moved_to_trash",
    ("delete", True): "deleted",
    ("archive", False): "archived",
}
PLANNED: dict[Done, Done] = {
    "moved": "would_move",
    "copied": "would_copy",
    "moved_to_trash": "would_move_to_trash",
    "deleted": "would_delete",
    "archived": "would_archive",
}
