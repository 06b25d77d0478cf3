"""Stable message identity: ``imap:{account}:{mailbox}:{uidvalidity}:{uid}`` and its URIs.

A UID only names a message together with the mailbox's UIDVALIDITY, so both travel in every id;
a changed UIDVALIDITY is detected instead of silently reading another message.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from urllib.parse import quote, unquote

from mail_imap_mcp.envelope import Issue

_ACCOUNT = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_NUMBER = re.compile(r"^[0-9]{1,10}$")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
MAX_UINT32 = 2**32 - 1


class InvalidMessageId(ValueError):
    """The text is not a message id of this server; the message says which part is wrong. ``parameter``:
    the argument that gave it, where the raiser knows it (else the call's arguments name it)."""

    def __init__(self, problem: str, parameter: str = "") -> None:
        super().__init__(problem)
        self.parameter = parameter


@dataclass(frozen=True)
class MessageRef:
    account_id: str
    mailbox: str
    uidvalidity: int
    uid: int

    @property
    def message_id(self) -> str:
        return f"imap:{self.account_id}:{self.mailbox}:{self.uidvalidity}:{self.uid}"

    @property
    def message_uri(self) -> str:
        mailbox = _quoted(self.mailbox)
        return f"imap://{self.account_id}/mailbox/{mailbox}/message/{self.uidvalidity}/{self.uid}"

    @property
    def message_raw_uri(self) -> str:
        return self.message_uri + "/raw"

    def attachment_uri(self, part_id: str) -> str:
        """MCP resource URI of one attachment (its bytes) of this message."""
        return f"{self.message_uri}/attachment/{part_id}"

    def issue(self, code: str, stage: str, message: str, *, retryable: bool) -> Issue:
        """An item-level issue about this message (in a multi-item result)."""
        return Issue(
            code=code,
            stage=stage,
            message=message,
            retryable=retryable,
            uid=self.uid,
            message_id=self.message_id,
        )


@functools.lru_cache(maxsize=256)
def _quoted(mailbox: str) -> str:
    """The mailbox name as one URI path segment (a page's messages share their mailbox)."""
    return quote(mailbox, safe="")


def _number(text: str, what: str) -> int:
    if not _NUMBER.match(text) or not 0 < int(text) <= MAX_UINT32:
        raise InvalidMessageId(f"{what} must be a positive 32-bit integer")
    return int(text)


def parse_message_id(text: str) -> MessageRef:
    """Parse a message id, splitting from the right so mailbox names may contain ':'."""
    if not text.startswith("imap:"):
        raise InvalidMessageId(
            "message_id must start with 'imap:' (use an id returned by imap_search_messages)"
        )
    head, sep1, uid = text.rpartition(":")
    head, sep2, uidvalidity = head.rpartition(":")
    _, _, rest = head.partition(":")
    account_id, sep3, mailbox = rest.partition(":")
    if not (sep1 and sep2 and sep3):
        raise InvalidMessageId("message_id must look like imap:{account_id}:{mailbox}:{uidvalidity}:{uid}")
    if not _ACCOUNT.match(account_id):
        raise InvalidMessageId("the account part of message_id is not a valid account id")
    if not mailbox:
        raise InvalidMessageId("the mailbox part of message_id is empty")
    if _CONTROL.search(mailbox):
        # Dovecot echoes unknown names raw in its NO reply: CR/LF would inject lines into the stream.
        raise InvalidMessageId("the mailbox part of message_id contains control characters")
    return MessageRef(account_id, mailbox, _number(uidvalidity, "uidvalidity"), _number(uid, "uid"))


_URI = re.compile(r"^imap://([^/]+)/mailbox/([^/]+)/message/([^/]+)/([^/]+?)(/raw)?$")


def parse_message_uri(uri: str) -> tuple[MessageRef, bool]:
    """Parse a ``message_uri`` (or ``message_raw_uri``); the bool says whether it is the raw form."""
    match = _URI.match(uri)
    if not match:
        raise InvalidMessageId("not a message URI of this server")
    account_id, mailbox, uidvalidity, uid, raw = match.groups()
    if not _ACCOUNT.match(account_id):
        raise InvalidMessageId("the account part of the URI is not a valid account id")
    ref = MessageRef(account_id, unquote(mailbox), _number(uidvalidity, "uidvalidity"), _number(uid, "uid"))
    return ref, raw is not None
