"""Several mailboxes read in one round trip: EXAMINE of each and the commands on it, all sent before the
first answer is read.

A command sent after EXAMINE runs in the mailbox that EXAMINE selected (the server answers in order and
never runs a command past a selection change), so ``EXAMINE A``, ``UID SEARCH ...``, ``EXAMINE B``,
``UID SEARCH ...`` cost one wait however many mailboxes there are. The answers are read in the order
sent, each up to its tagged status, so every untagged response read meanwhile (EXISTS, SEARCH, ESEARCH,
FETCH) belongs to that one command. A mailbox whose EXAMINE or command fails is one failed
:class:`MailboxReply`, never the whole read: the commands behind a failed EXAMINE (answered BAD, as no
mailbox is selected then) are read and dropped, so the stream stays in step for the next mailbox.

Only commands without literals are sent this way (a literal waits for the server's continuation), so
searches with ``CHARSET`` text keep the one-mailbox-at-a-time plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mail_imap_mcp.imap import wire
from mail_imap_mcp.imap.errors import Context, refused
from mail_imap_mcp.imap.mailboxes import status_answers
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.imap.view import MailboxState
from mail_imap_mcp.mail.errors import MailboxMissing, MailError, UidValidityChanged
from mail_imap_mcp.mail.mailboxes import MailboxCounts


@dataclass(frozen=True)
class Command:
    """A ``UID`` command on the examined mailbox: its arguments after ``UID`` and the untagged responses
    that answer it (``SEARCH``, ``ESEARCH``, ``FETCH``)."""

    args: tuple[bytes, ...]
    answered_by: str

    @classmethod
    def search(cls, tokens: Sequence[bytes], *, counted: bool = False) -> Command:
        """``UID SEARCH`` of ``tokens``; ``counted``: ``RETURN (COUNT ALL)`` (ESEARCH, RFC 4731), the
        number of matches and all of them as a compact UID set."""
        if counted:
            return cls((b"SEARCH", b"RETURN", b"(COUNT ALL)", *tokens), "ESEARCH")
        return cls((b"SEARCH", *tokens), "SEARCH")

    @classmethod
    def fetch(cls, uid_set: str | bytes, items: Sequence[str]) -> Command:
        """``UID FETCH`` of ``items`` (PEEK or metadata only: never sets \\Seen)."""
        encoded = uid_set.encode("ascii") if isinstance(uid_set, str) else uid_set
        return cls((b"FETCH", encoded, wire.fetch_items(items)), "FETCH")


@dataclass
class MailboxRead:
    """What to read of one mailbox: EXAMINE, then ``commands``. ``uidvalidity``: the one the commands
    rely on (None: any). ``examine`` False (the first read only): the mailbox this call has selected,
    read without a new EXAMINE."""

    mailbox: str
    commands: list[Command]
    uidvalidity: int | None = None
    examine: bool = True


@dataclass
class MailboxReply:
    """The answers of one :class:`MailboxRead`: the mailbox's state after EXAMINE and each command's
    untagged responses, or the failure that ends this mailbox's part of the read (a domain error: the
    pipeline classifies what it reads, so nothing else needs to)."""

    mailbox: str
    state: MailboxState | None = None
    answers: list[list[Any]] = field(default_factory=list)
    failure: MailError | None = None


def read_each(session: ImapSession, account_id: str, reads: Sequence[MailboxRead]) -> list[MailboxReply]:
    """Send every read's EXAMINE and commands, then read every answer: one round trip for all.

    Afterwards the session's selection is the last mailbox examined (none when its EXAMINE failed).
    A failed mailbox's reply carries :class:`MailboxMissing` (EXAMINE refused),
    :class:`UidValidityChanged`, :class:`MailboxGone` (a command said the mailbox is gone) or the
    server's refusal of a command; a dead connection raises, as for any command.
    """
    if not reads:
        return []
    if any(not read.examine for read in reads[1:]):
        raise ValueError("only the first mailbox read may go without EXAMINE")
    # The selection as of now (a revalidation, when an earlier call left it), before anything is sent.
    current = None if reads[0].examine else session.examine(reads[0].mailbox)
    client = session.client  # anything pending is answered first
    sent: list[tuple[bytes | None, list[bytes]]] = []
    for read in reads:
        examined = client.send_examine(read.mailbox) if read.examine else None
        sent.append((examined, [client.send("UID", *command.args) for command in read.commands]))
    session.note_pipelined(sum(len(tags) + (examined is not None) for examined, tags in sent) - 1)
    client.untagged.clear()  # what came before belongs to the mailboxes read before, or to no one now
    replies = [
        _read_reply(session, account_id, read, tags, current) for read, tags in zip(reads, sent, strict=True)
    ]
    if replies[-1].state is None:
        client.note_unselected()
        session.forget_selection()
    return replies


def _read_reply(
    session: ImapSession,
    account_id: str,
    read: MailboxRead,
    tags: tuple[bytes | None, list[bytes]],
    current: MailboxState | None,
) -> MailboxReply:
    client = session.client
    reply = MailboxReply(read.mailbox)
    examined, command_tags = tags
    if examined is None:
        reply.state = current
        if current is not None and read.uidvalidity is not None and current.uidvalidity != read.uidvalidity:
            reply.failure = UidValidityChanged(read.uidvalidity, current.uidvalidity)
    elif client.answer_of("EXAMINE", examined)[0] != "OK":
        reply.failure = MailboxMissing(read.mailbox, "EXAMINE")
        session.forget_selection()
        client.untagged.clear()
    else:
        reply.state = session.adopt_examined(read.mailbox, client.select_answer())
        client.untagged.clear()  # the rest of EXAMINE's answer (FLAGS, OK codes)
        if read.uidvalidity is not None and reply.state.uidvalidity != read.uidvalidity:
            reply.failure = UidValidityChanged(read.uidvalidity, reply.state.uidvalidity)
    # Every answer is read before any is taken: two commands on one mailbox may run side by side
    # (Dovecot's COUNT and window searches), so one's untagged answer may come before the other's status.
    # Several commands answered by one name (the bands of days of a search without SORT, each answered
    # by one untagged SEARCH): a server runs them one after the other (RFC 3501 5.5: their answers could
    # not be told apart otherwise), so each one's answer is what came before its own status.
    names = [command.answered_by for command in read.commands]
    shared = {name for name in names if names.count(name) > 1}
    statuses, arrived = [], []
    for tag in command_tags:  # even after a failure: in step
        statuses.append(client.answer_of("UID", tag))
        arrived.append({name: len(client.untagged.get(name, ())) for name in shared})
    untagged = client.untagged
    taken = {name: untagged.pop(name, []) for name in dict.fromkeys(names)}
    if reply.state is not None:
        session.refresh_counts(reply.state)
    untagged.clear()
    for index, ((typ, said), command) in enumerate(zip(statuses, read.commands, strict=True)):
        if reply.failure is not None:
            break
        name = command.answered_by
        if typ != "OK":
            # As the one-mailbox plan says it: a mailbox that no longer exists went away during the call.
            reply.failure = refused(said, Context(mailbox=read.mailbox, account_id=account_id))
        elif name in shared:
            start = arrived[index - 1][name] if index else 0
            reply.answers.append(taken[name][start : arrived[index][name]])
        else:  # the responses of a name go to the first command answered by it
            reply.answers.append(taken.pop(name, []))
    return reply


def status_each(
    session: ImapSession,
    mailboxes: Sequence[str],
    items: bytes = b"(MESSAGES UIDNEXT)",
    refused: dict[str, str] | None = None,
) -> dict[str, MailboxCounts]:
    """``STATUS items`` (by default ``(MESSAGES UIDNEXT)``) of every mailbox in one round trip (where
    LIST-STATUS is not offered). A mailbox whose STATUS is refused is left out (its EXAMINE says why,
    later), and the server's words of its refusal put in ``refused``, where given. The selected
    mailbox's counts may come from the session's older view: a hint, not a fact."""
    if not mailboxes:
        return {}
    client = session.client
    client.untagged.pop("STATUS", None)
    tags = [client.send("STATUS", client.mailbox_argument(name), items) for name in mailboxes]
    session.note_pipelined(len(tags) - 1)
    for name, tag in zip(mailboxes, tags, strict=True):
        answer, said = client.answer_of("STATUS", tag)
        if answer != "OK" and refused is not None:
            refused[name] = said
    return status_answers(client.untagged.pop("STATUS", []))
