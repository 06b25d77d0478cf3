"""Finding the message a tool was given by id: the id checked against the accounts and its mailbox
examined (``conflict`` when the mailbox changed since the id was issued).

What a connection or a session is stays the caller's: this module names only what it asks of them (the
account's connection by id; a read-only selection that says the mailbox's UIDVALIDITY), so the same check
serves IMAP's session and any backend that selects."""

from __future__ import annotations

from typing import Protocol, TypeVar

from mail_imap_mcp.mail.errors import still_names
from mail_imap_mcp.mail.ids import ForeignMessageId, InvalidMessageId, MessageRef, parse_message_id
from mail_imap_mcp.state import Caller

# Error codes of the tools that read one message by id (rendered into docs/tools.md).
MESSAGE_TOOL_ERRORS = {
    "invalid_input": "message_id is malformed or another argument is out of range.",
    "not_found": "The account or mailbox is unknown, or the message no longer exists.",
    "conflict": "The mailbox's UIDVALIDITY changed since the id was issued; next_action reruns the search.",
    "auth_failed": "The server rejected the credentials.",
    "unavailable": "The server cannot be reached.",
    "timeout": "A command exceeded its time budget.",
}

Connection_co = TypeVar("Connection_co", covariant=True)
Connection = TypeVar("Connection")


class Calling(Protocol):
    """Whose call it is: what reading an id needs of the call."""

    @property
    def caller(self) -> Caller: ...


class Connecting(Calling, Protocol[Connection_co]):
    """Whose call it is and each account's connection (``call.Connections``)."""

    def connection(self, account_id: str) -> Connection_co: ...


class Selected(Protocol):
    """A mailbox selected for reading: the UIDVALIDITY it has now."""

    @property
    def uidvalidity(self) -> int: ...


Selection_co = TypeVar("Selection_co", bound=Selected, covariant=True)
Selection = TypeVar("Selection", bound=Selected)


class Selecting(Protocol[Selection_co]):
    """What selects a mailbox read-only (IMAP's session, by EXAMINE)."""

    def examine(self, mailbox: str) -> Selection_co: ...


def message_ref(app: Calling, message_id: str) -> MessageRef:
    """The message ``message_id`` names for this caller: a foreign id said as a message that does not
    exist, a malformed one as the argument ``message_id``."""
    try:
        return parse_message_id(message_id, app.caller)
    except ForeignMessageId:  # said as a message that does not exist
        raise
    except InvalidMessageId as exc:  # named as the argument that gave it; the registry words it
        raise InvalidMessageId(str(exc), "message_id") from None


def resolve_message(app: Connecting[Connection], message_id: str) -> tuple[Connection, MessageRef]:
    """Parse and check a message id against the configured accounts."""
    ref = message_ref(app, message_id)
    return app.connection(ref.account_id), ref


def examine_for(session: Selecting[Selection], ref: MessageRef) -> Selection:
    """Select the message's mailbox read-only and make sure the id still refers to it."""
    state = session.examine(ref.mailbox)
    still_names(ref, state.uidvalidity)
    return state
