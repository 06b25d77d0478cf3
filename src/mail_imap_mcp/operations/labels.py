"""Label changes (Gmail, X-GM-EXT-1), in the mailbox of each message (imap_update_message_flags).

After the flags of a mailbox's messages (when flags were asked for too), in the same read-write SELECT:
``UID FETCH (FLAGS X-GM-LABELS X-GM-MSGID)``, one ``UID STORE [+-]X-GM-LABELS`` per distinct change
(never retried), whose answer is the labels each message has now. A message whose change took it out of
its mailbox (the mailbox's own label removed: ``Inbox`` from an INBOX message, archiving it) is found
again in All Mail by its X-GM-MSGID, so that its result names an id that still exists and the undo can
put the label back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from mail_imap_mcp.config import AccountConfig
from mail_imap_mcp.imap.directory import load_directory
from mail_imap_mcp.imap.personality.gmail import gmail_label
from mail_imap_mcp.imap.session_writes import LabelState
from mail_imap_mcp.imap.uidplus import format_uid_set
from mail_imap_mcp.mail.backend import FlagOperation
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.mail.roles import ALL
from mail_imap_mcp.mail.write_errors import WriteRefused

if TYPE_CHECKING:
    from mail_imap_mcp.imap.session import ImapSession

#: At most this many X-GM-MSGID keys in one search for messages that left their mailbox.
_SEARCH_CHUNK = 64


def label_names(labels: Sequence[str]) -> tuple[str, ...]:
    """Labels as given (``Inbox`` or ``\\Inbox``, ``Work``) as X-GM-LABELS names them, without duplicates."""
    return tuple(dict.fromkeys(gmail_label(label.strip()) for label in labels if label.strip()))


def target_labels(operation: FlagOperation, requested: Sequence[str], before: Sequence[str]) -> list[str]:
    """The labels of a message with ``before`` after ``operation`` with ``requested``."""
    if operation == "add":
        return list(dict.fromkeys([*before, *requested]))
    if operation == "remove":
        return [label for label in before if label not in requested]
    return list(requested)


@dataclass
class LabelStores:
    """What the label STOREs of one mailbox did."""

    #: The labels now of each message the STOREs changed (or set, where they already had them).
    after: dict[int, list[str]] = field(default_factory=dict)
    #: The messages a refused STORE left as they were, with the refusal.
    refused: dict[int, WriteRefused] = field(default_factory=dict)


class LabelStep:
    """The label change of one mailbox's messages; ``results`` and failures go to the caller's ledger
    through ``settle`` and ``fail`` (see :func:`mail_imap_mcp.operations.flags.change_flags`)."""

    def __init__(self, session: ImapSession, operation: FlagOperation, labels: tuple[str, ...]) -> None:
        self.session = session
        self.operation = operation
        self.labels = labels

    def read(self, uids: Sequence[int]) -> dict[int, LabelState]:
        """Flags, labels and X-GM-MSGID of those of ``uids`` that exist in the selected mailbox."""
        return self.session.fetch_labels(list(uids))

    def targets(self, states: dict[int, LabelState]) -> dict[int, list[str]]:
        return {
            uid: target_labels(self.operation, self.labels, state.labels) for uid, state in states.items()
        }

    def store(self, states: dict[int, LabelState], targets: dict[int, list[str]]) -> LabelStores:
        """Send the STOREs; what each message has now. A STORE the server refused may have changed some of
        its messages before the NO: their labels are read again, and only those left short of what was
        asked count as refused (one that already had the labels added, or lacked those removed, is as
        asked: unchanged because already so). OutcomeUnknown goes to the caller."""
        uids = sorted(states)
        if self.operation != "replace":
            commands = [(uids, "+" if self.operation == "add" else "-", list(self.labels))]
        else:
            by_target: dict[tuple[str, ...], list[int]] = {}
            for uid in uids:
                by_target.setdefault(tuple(targets[uid]), []).append(uid)
            commands = [(group, "", list(target)) for target, group in by_target.items()]
        done = LabelStores()
        for group, mode, labels in commands:
            try:
                answered = self.session.store_labels(group, mode, labels)
            except WriteRefused as exc:
                now = self.read(group)
                for uid in group:
                    if uid in now and (
                        set(now[uid].labels) != set(states[uid].labels)
                        or set(now[uid].labels) == set(targets[uid])
                    ):
                        done.after[uid] = now[uid].labels
                    else:
                        done.refused[uid] = exc
                continue
            done.after.update({uid: answered.get(uid, targets[uid]) for uid in group})
        return done

    def left(self, uids: Sequence[int]) -> list[int]:
        """Those of ``uids`` no longer in the selected mailbox (the change took them out)."""
        if not uids:
            return []
        still = set(self.session.uid_search([b"UID", format_uid_set(sorted(uids)).encode("ascii")]))
        return [uid for uid in uids if uid not in still]

    def found_in_all_mail(
        self, account: AccountConfig, first: MessageRef, gmail_ids: dict[int, int]
    ) -> dict[int, MessageRef]:
        """The refs in All Mail of messages that left their mailbox, by their UID there before (their
        account spelled, and tagged, as the group's ``first``)."""
        if not gmail_ids:
            return {}
        directory = load_directory(self.session, account)
        marked = directory.with_role(ALL)
        if not marked:
            return {}
        all_mail = marked[0]
        state = self.session.examine(all_mail)
        wanted = list(gmail_ids.values())
        uids: list[int] = []
        for start in range(0, len(wanted), _SEARCH_CHUNK):
            uids += self.session.uid_search(_any_gmail_id(wanted[start : start + _SEARCH_CHUNK]))
        by_gmail_id = {
            data.get(b"X-GM-MSGID"): uid
            for uid, data in (self.session.fetch(sorted(set(uids)), ["X-GM-MSGID"]) if uids else {}).items()
        }
        return {
            old: replace(first, mailbox=all_mail, uidvalidity=state.uidvalidity, uid=by_gmail_id[gmail_id])
            for old, gmail_id in gmail_ids.items()
            if gmail_id in by_gmail_id
        }


def _any_gmail_id(ids: list[int]) -> list[bytes | str | int]:
    """SEARCH keys matching any of ``ids`` (a balanced OR tree of ``X-GM-MSGID`` keys)."""
    if len(ids) == 1:
        return [b"X-GM-MSGID", ids[0]]
    middle = len(ids) // 2
    return [b"OR", *_any_gmail_id(ids[:middle]), *_any_gmail_id(ids[middle:])]
