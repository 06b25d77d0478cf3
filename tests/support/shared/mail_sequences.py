"""Seeded sequences of random operations on two mail backends at once, every step's answer compared: the
differential run that found where the in-memory backend and ``imap/backend.py`` answered otherwise than
the servers (issue 89). Each step is chosen from what the memory backend holds (the model): append, copy,
move, flag and keyword changes (keywords in several spellings), expunge, mailboxes made, renamed and
deleted, search, flags read, status and the listing; UIDs that are not there and mailboxes that are missing
come up too. What legitimately differs is normalised: UIDVALIDITY values (each side's named in the order
first seen), ``\\Recent``, MODSEQ values, a refusal's reason (Courier gives none), the server's own
mailboxes beyond those the sequence names, the names themselves (``INBOX.`` on Cyrus and Courier) and the
case of a keyword (:func:`_spelt`).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mail_imap_mcp import query
from mail_imap_mcp.mail.backend import Appended, Copied
from mail_imap_mcp.mail.errors import CommandRefused, MailError
from mail_imap_mcp.mail.roles import INBOX
from tests.support.mail.memory_mail import MemoryMail
from tests.support.shared.mail_contract import Mail, message

#: The mailboxes a sequence may make, by their levels (a child only where its parent is).
MADE = (("Box1",), ("Box2",), ("Box1", "Sub"), ("Box3",))
#: The mailboxes the listing is compared on: those a sequence can make, rename a child to, or starts with.
LISTED = (*MADE, ("Box2", "Sub"), ("Box3", "Sub"), (INBOX,), ("Trash",), ("Archive",))
#: Flags a store or append may set: system flags and one keyword in three spellings, and another.
FLAGS = ("\\Seen", "\\Flagged", "\\Deleted", "\\Answered", "$Work", "$work", "$WORK", "Later")
SEARCHES = (
    query.AllOf(),
    query.HasFlag("seen"),
    query.HasFlag("flagged", present=False),
    query.HasKeyword("$work"),
    query.Contains("subject", "Step 1"),
    query.AnyOf((query.HasKeyword("later"), query.HasFlag("deleted"))),
)
#: The operations and how often each is chosen.
WEIGHTS = {
    "append": 6,
    "copy": 3,
    "move": 3,
    "store": 4,
    "expunge": 2,
    "create": 2,
    "rename": 1,
    "delete": 1,
    "search": 3,
    "flags": 2,
    "status": 2,
    "mailboxes": 1,
}


@dataclass(frozen=True)
class Step:
    """One operation, its mailboxes by their levels (``()`` where there is none), as both sides run it."""

    kind: str
    mailbox: tuple[str, ...] = ()
    other: tuple[str, ...] = ()
    uids: tuple[int, ...] = ()
    flags: tuple[str, ...] = ()
    change: str = "add"
    search: int = 0
    subject: str = ""


@dataclass
class Side:
    """One backend of a sequence and what it answered so far: each mailbox's UIDVALIDITY values in the
    order seen (Cyrus and Courier give mailboxes made in the same second the same one)."""

    mail: Mail
    uidvalidities: dict[tuple[tuple[str, ...], int], int] = field(default_factory=dict)

    def name(self, levels: tuple[str, ...]) -> str:
        if levels == (INBOX,):
            return INBOX
        return self.mail.named(*levels)

    def forget(self, levels: tuple[str, ...]) -> None:
        """Forget the UIDVALIDITY values of ``levels`` and below it, made, renamed or deleted: Cyrus and
        Courier give mailboxes made in one second the same value, so a value tells no incarnation from
        another (a contract case holds that one made again is another)."""
        for key in [key for key in self.uidvalidities if key[0][: len(levels)] == levels]:
            del self.uidvalidities[key]

    def uidvalidity(self, mailbox: tuple[str, ...], value: int) -> str:
        """``value`` named by its place among ``mailbox``'s: its first UIDVALIDITY is ``.../0``."""
        seen = sum(known == mailbox for known, _ in self.uidvalidities)
        return f"{'/'.join(mailbox)}/{self.uidvalidities.setdefault((mailbox, value), seen)}"


def choose(rng: random.Random, model: MemoryMail, number: int, deleted: set[tuple[str, ...]]) -> Step:
    """The ``number``-th step, from what the model holds now; no mailbox named as one ``deleted`` before is
    deleted (Cyrus's delayed delete refuses a DELETE of a name deleted in the same second)."""
    kind = rng.choices(list(WEIGHTS), list(WEIGHTS.values()))[0]
    boxes = [tuple(name.split("/")) for name in model.names()]
    mailbox = rng.choice(boxes)
    there = sorted(model.kept("/".join(mailbox)).messages)
    picked = tuple(sorted(rng.sample(there, rng.randint(1, len(there))))) if there else ()
    if kind in ("copy", "move", "store") and (not picked or rng.random() < 0.2):
        picked = (*picked, (there[-1] if there else 0) + rng.randint(1, 5))  # a UID not there
    flags = tuple(rng.sample(FLAGS, rng.randint(1, 3)))
    if kind == "append":
        return Step("append", mailbox, flags=flags, subject=f"Step {number}")
    if kind in ("copy", "move"):
        others = [box for box in boxes if box != mailbox]
        destination = ("Nowhere",) if rng.random() < 0.15 or not others else rng.choice(others)
        return Step(kind, mailbox, destination, picked)
    if kind == "store":
        return Step(
            "store", mailbox, uids=picked, flags=flags, change=rng.choice(["add", "remove", "replace"])
        )
    if kind == "expunge" and picked:
        return Step("expunge", mailbox, uids=picked)
    names = {tuple(name.split("/")) for name in model.names()}
    fixed = {(INBOX,), ("Trash",), ("Archive",)}
    if kind == "create":
        wanted = rng.choice(MADE)  # a name taken is refused on every side
        if len(wanted) == 1 or wanted[:1] in names:
            return Step("create", wanted)
    made = sorted(names - fixed)
    if kind == "rename" and made:
        source = rng.choice(made)
        free = [levels for levels in MADE if len(levels) == 1 and levels not in names]
        if free:
            return Step("rename", source, rng.choice(free))
    if kind == "delete" and made:
        leaves = [
            box for box in made if not any(other[: len(box)] == box and other != box for other in names)
        ]
        empty = [box for box in leaves if not model.kept("/".join(box)).messages and box not in deleted]
        if empty:
            return Step("delete", rng.choice(empty))
    if kind == "status":
        return Step("status", mailbox if rng.random() < 0.9 else ("Nowhere",))
    if kind == "mailboxes":
        return Step("mailboxes")
    if kind == "flags":
        return Step("flags", mailbox, uids=(*there, (there[-1] if there else 0) + 1))
    return Step("search", mailbox, search=rng.randrange(len(SEARCHES)))


def answer(side: Side, step: Step) -> Any:
    """What ``side`` answers to ``step``, normalised; a domain error as its type (and a refusal's command)."""
    try:
        return _answer(side, step)
    except CommandRefused as refused:
        return ("refused", refused.command)
    except MailError as failure:
        return type(failure).__name__
    finally:
        if step.kind in ("create", "rename", "delete"):
            side.forget(step.mailbox)
            side.forget(step.other)


def _answer(side: Side, step: Step) -> Any:
    backend, mailbox, other = side.mail.backend, side.name(step.mailbox) if step.mailbox else "", ""
    if step.other:
        other = side.name(step.other)
    actions: dict[str, Callable[[], Any]] = {
        "append": lambda: _appended(side, step, backend.append(mailbox, message(step.subject), step.flags)),
        "copy": lambda: _copied(side, step, backend.copy(mailbox, step.uids, other)),
        "move": lambda: _copied(side, step, backend.move(mailbox, step.uids, other)),
        "store": lambda: backend.store(mailbox, step.uids, step.change, step.flags),  # type: ignore[arg-type]
        "expunge": lambda: backend.expunge(mailbox, step.uids),
        "create": lambda: backend.create_mailbox(mailbox),
        "rename": lambda: backend.rename_mailbox(mailbox, other),
        "delete": lambda: backend.delete_mailbox(mailbox),
        "search": lambda: backend.search(mailbox, SEARCHES[step.search]),
        "flags": lambda: {
            uid: sorted(_spelt(found.flags)) for uid, found in backend.flags(mailbox, step.uids).items()
        },
        "status": lambda: _status(side, step.mailbox, mailbox),
        "mailboxes": lambda: _listed(side),
    }
    return actions[step.kind]()


def _spelt(flags: frozenset[str]) -> set[str]:
    """``flags`` without ``\\Recent``, keywords in lower case: how a keyword that reached a mailbox several
    ways is spelt is the server's own (Courier's follows the messages that carry it, Dovecot's Maildir copy
    brings the source's); the contract's cases hold the rules where they are sure."""
    return {flag if flag.startswith("\\") else flag.lower() for flag in flags - {"\\Recent"}}


def _appended(side: Side, step: Step, made: Appended) -> tuple[str, int]:
    return side.uidvalidity(step.mailbox, made.uidvalidity), made.uid


def _copied(side: Side, step: Step, copied: Copied) -> tuple[str, list[tuple[int, int]]]:
    return side.uidvalidity(step.other, copied.uidvalidity), sorted(copied.uids.items())


def _status(side: Side, levels: tuple[str, ...], mailbox: str) -> tuple[int, int, str, int, bool]:
    found = side.mail.backend.status(mailbox)
    return (
        found.messages,
        found.unseen,
        side.uidvalidity(levels, found.uidvalidity),
        found.uidnext,
        side.mail.backend.messages(mailbox) == found.messages,
    )


def _listed(side: Side) -> list[tuple[str, ...]]:
    """The mailboxes a sequence can name that are there (a server makes others of its own)."""
    known = {side.name(levels): levels for levels in LISTED}
    return sorted(known[box.name] for box in side.mail.backend.mailboxes() if box.name in known)


def compare(model: Mail, other: Mail, seed: int, steps: int) -> None:
    """Run ``steps`` steps of sequence ``seed`` on the memory backend ``model`` and on ``other``, and fail at
    the first whose answers differ, naming the seed and every step up to it."""
    memory = model.backend
    assert isinstance(memory, MemoryMail)
    rng = random.Random(seed)
    sides = Side(model), Side(other)
    done: list[Step] = []
    for number in range(steps):
        step = choose(rng, memory, number, {each.mailbox for each in done if each.kind == "delete"})
        done.append(step)
        expected, found = (answer(side, step) for side in sides)
        assert found == expected, (
            f"seed {seed}, step {number}: the memory backend answered {expected!r}, the server {found!r}; "
            "the steps: " + "; ".join(map(repr, done))
        )
