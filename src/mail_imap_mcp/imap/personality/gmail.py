"""Gmail's personality: labels, not folders (Google's "IMAP Extensions" page of the Gmail developer
documentation, offered where the server advertises ``X-GM-EXT-1``).

A Gmail message is stored once and shown in every folder of its labels: INBOX is the label ``\\Inbox``,
``[Gmail]/All Mail`` (special use ``\\All``) holds every message but Spam and Trash, archived mail
included. So a search of every mailbox searches All Mail alone (each message once), a summary carries
the message's labels (``X-GM-LABELS``), a conversation is Gmail's own (``X-GM-THRID``), and an
expunge removes a message for good only in Trash or Spam (elsewhere it removes one label).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, ClassVar

from mail_imap_mcp.imap import parsing
from mail_imap_mcp.imap.personality.profile import Profile
from mail_imap_mcp.imap.personality.standard import (
    IndexPlan,
    Listing,
    Personality,
)
from mail_imap_mcp.mail.pages import IndexView
from mail_imap_mcp.mail.roles import ALL, DRAFTS, FLAGGED, IMPORTANT, INBOX, JUNK, SENT, TRASH

if TYPE_CHECKING:
    from mail_imap_mcp.mail.backend import Landing
    from mail_imap_mcp.query import Dialect

#: Gmail's system labels as X-GM-LABELS names them, and as a summary shows them (its web interface's
#: words); ``\\Starred`` is the ``\\Flagged`` flag, which a summary shows already.
SYSTEM_LABELS = {"\\Inbox": "Inbox", "\\Important": "Important", "\\Sent": "Sent", "\\Draft": "Draft"}
HIDDEN_LABELS = frozenset({"\\Starred"})
#: The system label each special-use folder of Gmail shows (Starred: the ``\\Flagged`` flag).
ROLE_LABELS = {SENT: "\\Sent", DRAFTS: "\\Draft", IMPORTANT: "\\Important", FLAGGED: "\\Starred"}


def shown_label(label: str) -> str | None:
    """A label as a summary shows it (None: left out, the flags say it)."""
    if label in HIDDEN_LABELS:
        return None
    return SYSTEM_LABELS.get(label, label)


def label_names_of(response: dict[bytes, object]) -> list[str]:
    """The labels of a FETCH answer (its ``X-GM-LABELS``) as Gmail names them (``\\Inbox``, a user's
    label), decoded; a label that reads as a number (an atom such as ``2026``) is its name."""
    raw = response.get(b"X-GM-LABELS")
    if not isinstance(raw, tuple | list):
        return []
    return [parsing.mailbox_name(label) if isinstance(label, bytes | str) else str(label) for label in raw]


def shown_labels(labels: Iterable[str]) -> list[str]:
    """Labels as a summary shows them, sorted, each once (``\\Starred`` left out: the ``\\Flagged``
    flag says it)."""
    return sorted({name for label in labels if (name := shown_label(label)) is not None})


def gmail_label(shown: str) -> str:
    """The X-GM-LABELS name of a label as a summary shows it or as Gmail names it (``Inbox`` or
    ``\\Inbox``; ``Starred`` is ``\\Starred``)."""
    by_word = {word.casefold(): label for label, word in SYSTEM_LABELS.items()} | {"starred": "\\Starred"}
    if shown.startswith("\\"):
        return by_word.get(shown[1:].casefold(), shown)
    return by_word.get(shown.casefold(), shown)


class Gmail(Personality):
    """Gmail, recognised by ``X-GM-EXT-1``."""

    name: ClassVar[str] = "gmail"
    has_labels: ClassVar[bool] = True
    #: A COPY (or MOVE) into Trash deletes the message (Gmail removes every other label, Inbox and All
    #: Mail included); into Spam it reports it as spam: by their special-use attributes, whatever their
    #: names (``[Google Mail]/...``, localised).
    lands_as: ClassVar[Mapping[str, Landing]] = MappingProxyType({TRASH: "delete", JUNK: "spam"})
    every_mailbox_is_one: ClassVar[bool] = True
    summary_items: ClassVar[tuple[str, ...]] = ("X-GM-LABELS", "X-GM-MSGID")
    index_items: ClassVar[tuple[str, ...]] = ("X-GM-MSGID", "X-GM-LABELS")
    #: Gmail's own search (X-GM-RAW, with IMAP keys beside it for what it cannot say) first.
    search_dialects: ClassVar[tuple[Dialect, ...]] = ("gmail", "imap")

    @classmethod
    def fits(cls, profile: Profile) -> bool:
        return profile.gmail_extensions

    def every_mailbox(self, listing: Listing) -> list[str]:
        """All Mail alone: every message once (archived mail included); Spam and Trash only when named.
        Where no mailbox is marked ``\\All``, the standard mailboxes."""
        found = listing.with_role(ALL)
        return found[:1] if found else listing.searchable()

    def index_plan(self, listing: Listing, selectable: Sequence[str]) -> IndexPlan:
        """All Mail (every message once, with its labels); Spam and Trash, which All Mail leaves out, only
        once a search asks for them; a message keyed by its X-GM-MSGID. Where no mailbox is marked
        ``\\All`` (All Mail hidden from IMAP), every folder, a row per folder that shows a message."""
        found = listing.with_role(ALL)
        if not found:
            return super().index_plan(listing, selectable)
        return IndexPlan(found[:1], [*listing.with_role(JUNK), *listing.with_role(TRASH)], True)

    def index_view(self, name: str, listing: Callable[[], Listing]) -> IndexView:
        """A label folder (INBOX, Sent Mail, a user's label...) is All Mail's messages with its label; All
        Mail, Spam and Trash are themselves."""
        known = listing()
        every = known.with_role(ALL)
        if not every or name in (*every, *known.with_role(JUNK), *known.with_role(TRASH)):
            return IndexView(name)
        if name.upper() == INBOX:
            return IndexView(every[0], "\\Inbox")
        for role, label in ROLE_LABELS.items():
            if name in known.with_role(role):
                return IndexView(every[0], label)
        return IndexView(every[0], name)

    def expunges_for_good(self, role: str | None) -> bool:
        """Only in Trash and Spam: in a label folder Gmail removes the label (and what it does in All
        Mail depends on the user's settings)."""
        return role in (TRASH, JUNK)

    def labels_of(self, response: dict[bytes, object]) -> list[str] | None:
        return shown_labels(label_names_of(response))

    def stored_labels(self, response: dict[bytes, object]) -> tuple[str, ...]:
        """The labels as X-GM-LABELS names them (``\\Inbox``, a user's label), for the local index."""
        return tuple(sorted(label_names_of(response)))

    def identity_of(self, response: dict[bytes, object]) -> int | None:
        found = response.get(b"X-GM-MSGID")
        return found if isinstance(found, int) else None

    def thread_key(self) -> str | None:
        return "X-GM-THRID"
