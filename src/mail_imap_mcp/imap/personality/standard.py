"""The standard personality: what the IMAP RFCs mean, as every server of the test matrix means it.

A hook is where servers differ in *meaning*, not in extensions (those are :class:`Profile` facts): what
a search of every mailbox covers, what the server's own search understands, which mailbox deleted mail
goes to, and which commands move, copy or remove exactly the messages asked for. A server that means
something else (Gmail, where a COPY adds a label and All Mail holds every message) gets a subclass
that overrides the hooks it must, registered in :data:`PERSONALITIES`; nothing outside
``imap/personality/`` asks which server it talks to.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, ClassVar, Literal, Protocol

from mail_imap_mcp.imap.personality.profile import Profile
from mail_imap_mcp.mail.pages import IndexView
from mail_imap_mcp.mail.roles import TRASH
from mail_imap_mcp.mail.write_errors import ExtensionMissing

if TYPE_CHECKING:
    from mail_imap_mcp.mail.backend import Landing
    from mail_imap_mcp.query import Dialect

Action = Literal["move", "copy", "delete", "archive"]


class Listing(Protocol):
    """An account's mailboxes as one LIST showed them (:class:`~mail_imap_mcp.mail.directory.MailboxDirectory`)."""

    def searchable(self) -> list[str]: ...

    def with_role(self, role: str) -> list[str]: ...


@dataclass(frozen=True)
class IndexPlan:
    """Which folders a local index of the account syncs: ``always`` (the background sync keeps them), and
    ``on_request`` (indexed only once a search asks for them, then kept)."""

    always: list[str]
    on_request: list[str]
    #: The planned folders never show one message twice (Gmail's All Mail, Spam and Trash): a message is
    #: keyed by the server's own id of it (:meth:`Personality.identity_of`), one row wherever it is seen.
    #: False where a message may be in several planned folders (each folder's search needs its row).
    one_row_per_message: bool = False

    @property
    def kept(self) -> list[str]:
        return [*self.always, *self.on_request]


class Personality:
    """How a server means what it says, hook by hook: this class is the standard meaning."""

    name: ClassVar[str] = "standard"
    #: The dialects the server's own search answers, best first (which one a search uses is chosen in
    #: ``services/``, and every compiler lives in ``query/``).
    search_dialects: ClassVar[tuple[Dialect, ...]] = ("imap",)
    #: The role of the mailbox a delete (without ``permanent``) moves messages to.
    deletes_to: ClassVar[str] = TRASH
    #: Whether messages carry labels (read with a summary, written by imap_update_message_flags).
    has_labels: ClassVar[bool] = False
    #: What a move or copy into the mailbox of a special-use role (or a label naming it) is where it is
    #: more than a move or copy, by role (Gmail: into Trash a delete, into Spam a report as spam); none
    #: where a copy is a copy.
    lands_as: ClassVar[Mapping[str, Landing]] = MappingProxyType({})
    #: Whether a search of every mailbox covers one mailbox (Gmail: All Mail), read as one mailbox is.
    every_mailbox_is_one: ClassVar[bool] = False
    #: FETCH items a summary reads besides the standard ones (Gmail: its labels).
    summary_items: ClassVar[tuple[str, ...]] = ()
    #: FETCH items the local index reads of a message besides its own (Gmail: its id and labels).
    index_items: ClassVar[tuple[str, ...]] = ()

    def __init__(self, profile: Profile) -> None:
        self.profile = profile

    @classmethod
    def fits(cls, profile: Profile) -> bool:
        """Whether a server with ``profile`` has this personality (the standard one fits every server)."""
        return True

    def every_mailbox(self, listing: Listing) -> list[str]:
        """The mailboxes a search of every mailbox (``mailbox: "*"``) covers, in LIST order: every one
        but deleted mail, spam and virtual views of mail kept elsewhere, so a message comes once."""
        return listing.searchable()

    def index_plan(self, listing: Listing, selectable: Sequence[str]) -> IndexPlan:
        """The folders a local index syncs: every selectable one (a message is in one folder only)."""
        return IndexPlan(list(selectable), [])

    def index_view(self, name: str, listing: Callable[[], Listing]) -> IndexView:
        """Where the local index finds the messages of mailbox ``name`` (``listing``: the account's LIST,
        asked only where the answer needs it): the folder itself."""
        return IndexView(name)

    def transfer_commands(self, action: Action, *, permanent: bool) -> str:
        """The commands that move, copy or delete exactly the messages asked for on this server;
        :class:`ExtensionMissing` (before anything changes) where no such commands exist."""
        expunge = "UID STORE +FLAGS.SILENT (\\Deleted) + UID EXPUNGE"
        if action == "copy":
            return "UID COPY"
        if permanent:
            if not self.profile.uidplus:
                raise ExtensionMissing("UIDPLUS", "remove exactly these messages for good (UID EXPUNGE)")
            return expunge
        if self.profile.moves:
            return "UID MOVE"
        if not self.profile.uidplus:
            raise ExtensionMissing("MOVE or UIDPLUS", "move exactly these messages")
        return f"UID COPY + {expunge}"

    def expunges_for_good(self, role: str | None) -> bool:
        """Whether an expunge in a mailbox with this special-use ``role`` (None: none) removes the messages
        for good (a permanent delete); elsewhere it is refused before anything changes."""
        return True

    def labels_of(self, response: dict[bytes, object]) -> list[str] | None:
        """The labels of a message, from its FETCH answer (None: the server has no labels)."""
        return None

    def stored_labels(self, response: dict[bytes, object]) -> tuple[str, ...]:
        """The labels the local index keeps of a message, from its FETCH answer (none without labels)."""
        return ()

    def identity_of(self, response: dict[bytes, object]) -> int | None:
        """The server's own id of a message, the same in every mailbox that shows it (Gmail's X-GM-MSGID),
        from its FETCH answer; None where a message is in one mailbox only."""
        return None

    def thread_key(self) -> str | None:
        """The FETCH item (and SEARCH key) that names a message's conversation on this server, where
        it has one (None: conversations are found by their headers)."""
        return None
