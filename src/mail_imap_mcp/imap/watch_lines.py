"""What a watching connection reads in the server's untagged lines, as plain functions: whether a line
tells a change of the watched mailbox, the message count after it, and what it tells of the mailbox's
fingerprint (see :mod:`.watch`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from mail_imap_mcp.imap.wire import BudgetedIMAPClient

#: Untagged responses that tell a change of the examined mailbox (EXISTS only when its count moves).
CHANGES = frozenset({b"EXPUNGE", b"FETCH", b"VANISHED"})
MESSAGES, UIDNEXT, UIDVALIDITY, HIGHESTMODSEQ = b"MESSAGES", b"UIDNEXT", b"UIDVALIDITY", b"HIGHESTMODSEQ"
UNSEEN = b"UNSEEN"


class Looker(Protocol):
    """What a line reader tells a watcher: a change to follow, or values looked at."""

    def follow(self, mailbox: str, learn: Callable[[dict[bytes, int]], None]) -> None: ...

    def looked(self, mailbox: str, seen: dict[bytes, int] | None) -> bool: ...


def is_change(tokens: list[bytes], exists: int | None) -> bool:
    """Whether an untagged response (``* 4 EXISTS``, ``* 2 FETCH (FLAGS ...)``, ``* VANISHED ...``)
    tells a change of the examined mailbox; ``* OK Still here`` and ``* n RECENT`` do not."""
    if len(tokens) < 3 or tokens[0] != b"*":
        return False
    if tokens[1].upper() in CHANGES:
        return True
    kind = tokens[2].upper()
    if kind == b"EXISTS":
        return exists is None or tokens[1] != str(exists).encode("ascii")
    return kind in CHANGES


class CountWatch:
    """Tells, line by line, whether what the server says changes the one examined mailbox, and keeps in
    its fingerprint what a change tells (a new message count, a MODSEQ) and forgets what it leaves
    unknown, so that the next look does not report the same change again."""

    def __init__(self, mailbox: str, exists: int | None, watcher: Looker) -> None:
        self.mailbox = mailbox
        self.exists = exists
        self.watcher = watcher

    def __call__(self, line: bytes) -> str | None:
        tokens = line.split()
        changed = is_change(tokens, self.exists)
        before, self.exists = self.exists, new_exists(tokens, self.exists)
        if not changed:
            return None
        self.watcher.follow(self.mailbox, lambda fingerprint: learn(fingerprint, tokens, before, self.exists))
        return self.mailbox


def learn(fingerprint: dict[bytes, int], tokens: list[bytes], before: int | None, after: int | None) -> None:
    """What the reported line ``tokens`` tells of the mailbox, kept in its ``fingerprint``."""
    fingerprint.pop(UNSEEN, None)  # a new message, a flag or an expunge may each move it
    if after is None:
        fingerprint.pop(MESSAGES, None)
    else:
        if before is not None and after > before and UIDNEXT in fingerprint:
            fingerprint[UIDNEXT] += after - before  # new messages take the next UIDs
        fingerprint[MESSAGES] = after
    changed_at = modseq(tokens)
    if changed_at is not None:  # the change just made has the mailbox's highest MODSEQ
        fingerprint[HIGHESTMODSEQ] = max(fingerprint.get(HIGHESTMODSEQ, changed_at), changed_at)
    else:  # a new message or an expunge moves it by an amount nobody said
        fingerprint.pop(HIGHESTMODSEQ, None)


def modseq(tokens: list[bytes]) -> int | None:
    """The MODSEQ a FETCH response carries (``* 2 FETCH (FLAGS (\\Seen) MODSEQ (12))``), if any."""
    for index, token in enumerate(tokens[:-1]):
        if token.upper().lstrip(b"(") == b"MODSEQ":
            value = tokens[index + 1].strip(b"()")
            return int(value) if value.isdigit() else None
    return None


class NotifyWatch:
    """Tells which watched mailbox a NOTIFY report is about, unless its STATUS values are those the
    fingerprint already holds (Dovecot repeats a report; the STATUS after NOTIFY SET told it)."""

    def __init__(self, watcher: Looker, client: BudgetedIMAPClient, watched: set[str]) -> None:
        self.watcher = watcher
        self.client = client
        self.watched = watched

    def __call__(self, line: bytes) -> str | None:
        mailbox = self.client.notified_mailbox(line)
        if mailbox not in self.watched:
            return None
        values = self.client.status_values(line)
        if values is None:  # deleted or renamed away, or nothing to compare
            changed = self.watcher.looked(mailbox, None) or line.upper().startswith(b"* STATUS")
            return mailbox if changed else None
        return mailbox if self.watcher.looked(mailbox, values) else None


def known(values: dict[bytes, Any]) -> dict[bytes, int]:
    """The items of a STATUS or EXAMINE answer the server gave, as numbers."""
    return {item: int(value) for item, value in values.items() if value is not None}


def changes_in(responses: list[Any], exists: int | None) -> tuple[bool, int | None]:
    """Whether imapclient's parsed untagged responses (``[(4, b"EXISTS"), (2, b"FETCH", ...)]``, as
    NOOP and DONE return them) tell a change, and the message count after them."""
    changed = False
    for response in responses:
        if isinstance(response, tuple) and len(response) >= 2 and isinstance(response[1], bytes):
            tokens = [b"*", str(response[0]).encode("ascii"), response[1]]
            changed |= is_change(tokens, exists)
            exists = new_exists(tokens, exists)
    return changed, exists


def idle_is_lazy(client: BudgetedIMAPClient) -> bool:
    """Whether the server's IDLE reports changes late: Courier-IMAP without its FAM build looks at the
    mailbox only every IMAP_IDLE_TIMEOUT (60 s), so NOOP polling reports sooner there."""
    return b"Courier-IMAP" in client.greeting


def new_exists(tokens: list[bytes], exists: int | None) -> int | None:
    """The message count after an untagged response: ``* 5 EXISTS`` sets it, ``* 2 EXPUNGE`` lowers
    it, and after ``* VANISHED`` it is unknown (the next EXISTS then counts as a change)."""
    if len(tokens) >= 2 and tokens[1].upper() == b"VANISHED":
        return None
    if len(tokens) < 3 or not tokens[1].isdigit():
        return exists
    kind = tokens[2].upper()
    if kind == b"EXISTS":
        return int(tokens[1])
    if kind == b"EXPUNGE" and exists is not None:
        return exists - 1
    return exists
