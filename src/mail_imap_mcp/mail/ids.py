"""Stable message identity: ``imap:{account}:{mailbox}:{uidvalidity}:{uid}`` and its URIs.

A UID only names a message together with the mailbox's UIDVALIDITY, so both travel in every id;
a changed UIDVALIDITY is detected instead of silently reading another message.

An account served per user (``per_user = true``) names each user's own mailbox with the same account
id, so its ids carry the user too: the account part is ``{account}~{tag}``, ``tag`` a short keyed digest
of the user (:func:`~mail_imap_mcp.mail.sealing.user_digest` under the user's key, :func:`user_tag`): a
:class:`MessageRef` carries it where it is made, and the caller's is checked when an id is read.
Another user's id is :class:`ForeignMessageId` (said as a message that does not exist); ids of every
other account are unchanged.
"""

from __future__ import annotations

import base64
import functools
import hmac
import re
from dataclasses import dataclass, field, replace
from urllib.parse import quote, unquote

from mail_imap_mcp.envelope import Issue
from mail_imap_mcp.mail import sealing
from mail_imap_mcp.state import Caller

_TAGGED_ACCOUNT = re.compile(r"^([A-Za-z0-9_-]{1,64})(?:~([a-z2-7]{8}))?$")
_TAG_BYTES = 5  # 8 base32 characters


def user_tag(caller: Caller, account_id: str) -> str:
    """``~tag`` of ``caller`` in the ids of ``account_id`` when it is served per user, else nothing."""
    if not caller.owns_mailbox_of(account_id):
        return ""
    digest = sealing.user_digest(b"mail-imap-mcp message id\0" + account_id.encode(), _TAG_BYTES, caller.user)
    return "~" + base64.b32encode(digest).decode("ascii").lower()


_NUMBER = re.compile(r"^[0-9]{1,10}$")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
MAX_UINT32 = 2**32 - 1


class InvalidMessageId(ValueError):
    """The text is not a message id of this server; the message says which part is wrong. ``parameter``:
    the argument that gave it, where the raiser knows it (else the call's arguments name it)."""

    def __init__(self, problem: str, parameter: str = "") -> None:
        super().__init__(problem)
        self.parameter = parameter


class ForeignMessageId(InvalidMessageId):
    """A well-formed id of an account served per user that was not given to the current user (another
    user's, or one without the user's tag): said as a message that does not exist, like any unknown UID,
    so nothing tells whether it is someone else's. ``text``: the id as given."""

    def __init__(self, ref: MessageRef, text: str) -> None:
        super().__init__(f"message {text} does not exist")
        self.ref = ref
        self.text = text


@dataclass(frozen=True)
class MessageRef:
    account_id: str
    mailbox: str
    uidvalidity: int
    uid: int
    #: The user's ``~tag`` in the account part (:func:`user_tag`); not part of which message it is.
    tag: str = field(default="", compare=False)

    @property
    def message_id(self) -> str:
        return f"imap:{self.account_id}{self.tag}:{self.mailbox}:{self.uidvalidity}:{self.uid}"

    @property
    def message_uri(self) -> str:
        mailbox = _quoted(self.mailbox)
        account = self.account_id + self.tag
        return f"imap://{account}/mailbox/{mailbox}/message/{self.uidvalidity}/{self.uid}"

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


def parse_message_id(text: str, caller: Caller) -> MessageRef:
    """Parse a message id given to ``caller``, splitting from the right so mailbox names may contain ':'."""
    ref, tag = _parsed(text)
    return _owned(ref, tag, text, caller)


def place_of(message_id: str) -> tuple[str, int]:
    """(mailbox, uid) of an id this call was just given by the IMAP layer (its summaries, its issues),
    whoever's it is."""
    ref, _ = _parsed(message_id)
    return ref.mailbox, ref.uid


def _parsed(text: str) -> tuple[MessageRef, str | None]:
    """The message a message id names and the user tag its account part carries, unchecked."""
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
    tagged = _TAGGED_ACCOUNT.match(account_id)
    if not tagged:
        raise InvalidMessageId("the account part of message_id is not a valid account id")
    if not mailbox:
        raise InvalidMessageId("the mailbox part of message_id is empty")
    if _CONTROL.search(mailbox):
        # Dovecot echoes unknown names raw in its NO reply: CR/LF would inject lines into the stream.
        raise InvalidMessageId("the mailbox part of message_id contains control characters")
    ref = MessageRef(tagged[1], mailbox, _number(uidvalidity, "uidvalidity"), _number(uid, "uid"))
    return ref, tagged[2]


def _owned(ref: MessageRef, tag: str | None, text: str, caller: Caller) -> MessageRef:
    """``ref`` with its tag when the id's user tag is ``caller``'s for its account (none for an account
    not served per user); :class:`ForeignMessageId` otherwise."""
    given = f"~{tag}" if tag else ""
    expected = user_tag(caller, ref.account_id)
    if not hmac.compare_digest(given, expected):
        raise ForeignMessageId(ref, text)
    return replace(ref, tag=expected)


_URI = re.compile(r"^imap://([^/]+)/mailbox/([^/]+)/message/([^/]+)/([^/]+?)(/raw)?$")


def parse_message_uri(uri: str, caller: Caller) -> tuple[MessageRef, bool]:
    """Parse a ``message_uri`` (or ``message_raw_uri``) given to ``caller``; the bool says whether it is
    the raw form."""
    match = _URI.match(uri)
    if not match:
        raise InvalidMessageId("not a message URI of this server")
    account_id, mailbox, uidvalidity, uid, raw = match.groups()
    tagged = _TAGGED_ACCOUNT.match(account_id)
    if not tagged:
        raise InvalidMessageId("the account part of the URI is not a valid account id")
    ref = MessageRef(tagged[1], unquote(mailbox), _number(uidvalidity, "uidvalidity"), _number(uid, "uid"))
    return _owned(ref, tagged[2], uri, caller), raw is not None


_ATTACHMENT_URI = re.compile(r"^(imap://[^/]+/mailbox/[^/]+/message/[^/]+/[^/]+?)/attachment/([^/]+)$")


def parse_attachment_uri(uri: str, caller: Caller, parameter: str) -> tuple[MessageRef, str]:
    """The message and part id of an attachment's ``resource_uri`` given to ``caller``;
    :class:`InvalidMessageId` naming ``parameter`` when it is none."""
    match = _ATTACHMENT_URI.match(uri)
    if not match:
        raise InvalidMessageId("not an attachment's resource_uri of this server", parameter)
    try:
        ref, raw = parse_message_uri(match.group(1), caller)
    except ForeignMessageId:
        raise
    except InvalidMessageId as exc:
        raise InvalidMessageId(str(exc), parameter) from None
    if raw:
        raise InvalidMessageId("not an attachment's resource_uri of this server", parameter)
    return ref, unquote(match.group(2))
