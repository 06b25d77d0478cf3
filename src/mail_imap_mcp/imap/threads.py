"""Conversations: the messages linked to one message by Message-ID, In-Reply-To and References.

The message's own headers name its ancestors (References, In-Reply-To) and the thread's root (the first
reference). A search of a few mailboxes (the message's own, INBOX, Sent) finds

* the ancestors, by ``HEADER Message-ID`` of each id named,
* the replies, by ``HEADER References <root>`` and ``HEADER In-Reply-To <id>`` of each id named,

in one ``UID SEARCH`` per mailbox. Where the server advertises ``THREAD=REFERENCES`` (RFC 5256), the
message's own mailbox is threaded by the server instead, over those messages plus the ones with the same
base subject, so a reply whose client dropped References and In-Reply-To still joins its conversation.
A hostile message cannot make the search large: at most :data:`MAX_THREAD_IDS` ids are used.

Where the server names conversations itself (its personality's ``thread_key``: Gmail's ``X-GM-THRID``),
the conversation is exactly the server's: the key is read with the seed's headers, and one ``UID SEARCH``
of it in the mailboxes a search of every mailbox covers (Gmail: All Mail) finds every message of it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from mail_imap_mcp import mime
from mail_imap_mcp.content.drafts import MESSAGE_ID
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.mail.directory import MailboxDirectory
from mail_imap_mcp.mail.mailboxes import MailboxInfo
from mail_imap_mcp.mail.roles import SENT
from mail_imap_mcp.query import AnyOf, Contains, Header, Query, needs_utf8, search_keys

#: Ids searched for at most: the root, the message's own and the newest references.
MAX_THREAD_IDS = 12
#: Header bytes read from the message to find its thread (a 1 MB References is cut).
SEED_HEADER_BYTES = 16 * 1024
_SEED_ITEM = f"BODY.PEEK[HEADER.FIELDS (MESSAGE-ID IN-REPLY-TO REFERENCES SUBJECT)]<0.{SEED_HEADER_BYTES}>"
_REPLY_PREFIX = re.compile(
    r"^\s*((re|fwd?|aw|wg|sv|vs|antw|tr|rv|réf)\s*(\[\d+\])?\s*:|\[[^\]]{1,40}\])\s*", re.I
)


# Where the server marks no mailbox \Sent, these last name parts stand for it.
@dataclass
class ThreadSeed:
    """What one message says about its conversation."""

    own_id: str | None
    root_id: str | None
    #: Ids to search for: the root, the message's own, the newest references (at most MAX_THREAD_IDS).
    ids: list[str] = field(default_factory=list)
    subject: str | None = None
    #: The server's own id of the conversation (Gmail's X-GM-THRID), where it has one.
    conversation: int | None = None

    @property
    def base_subject(self) -> str:
        """The subject without reply/forward prefixes and list tags (RFC 5256 base subject, roughly)."""
        text = " ".join((self.subject or "").split())
        while True:
            stripped = _REPLY_PREFIX.sub("", text, count=1)
            if stripped == text:
                return text
            text = stripped


def message_ids(value: str | None) -> list[str]:
    """The message ids in a Message-ID, In-Reply-To or References value, in order."""
    return MESSAGE_ID.findall(value or "")


def read_seed(session: ImapSession, uid: int) -> ThreadSeed | None:
    """The thread headers of ``uid`` in the selected mailbox; None when it no longer exists."""
    key = session.personality.thread_key()
    answer = session.fetch([uid], [_SEED_ITEM, *([key] if key else [])])
    response = answer.get(uid)
    if response is None:
        return None
    raw = next((v for k, v in response.items() if isinstance(k, bytes) and k.startswith(b"BODY[")), None)
    if raw is None:
        return None
    headers = mime.parse_header_block(raw or b"")

    def first(name: str) -> str | None:
        values = headers.get(name)
        return values[0] if values else None

    own = next(iter(message_ids(first("message-id"))), None)
    references = message_ids(" ".join(headers.get("references", [])))
    replied_to = message_ids(first("in-reply-to"))
    root = references[0] if references else (replied_to[0] if replied_to else own)
    newest = list(dict.fromkeys([*reversed(references), *replied_to]))
    ids = list(dict.fromkeys(i for i in [root, own, *newest] if i))[:MAX_THREAD_IDS]
    conversation = response.get(key.encode()) if key else None
    return ThreadSeed(
        own, root, ids, first("subject"), conversation if isinstance(conversation, int) else None
    )


def header_tests(seed: ThreadSeed) -> list[Query]:
    """What finds the seed's ancestors (by Message-ID) and replies (by References and In-Reply-To): any
    one of them."""
    tests: list[Query] = [Header("Message-ID", i) for i in seed.ids]
    if seed.root_id:
        tests.append(Header("References", seed.root_id))
    return tests + [Header("In-Reply-To", i) for i in seed.ids]


def thread_uids(session: ImapSession, seed: ThreadSeed, own_uid: int | None) -> tuple[list[int], bool]:
    """UIDs of the conversation in the selected mailbox, and whether the server threaded them.

    ``own_uid``: the message itself is in this mailbox; there, THREAD=REFERENCES (where advertised) over the
    header matches and the messages with the same base subject picks its thread. Where the seed carries
    the server's own conversation id, the server's search by it answers alone."""
    key = session.personality.thread_key()
    if key is not None and seed.conversation is not None:
        found = session.uid_search([key.encode("ascii"), seed.conversation])
        return sorted(set(found) | ({own_uid} if own_uid is not None else set())), True
    tests = header_tests(seed)
    subject = seed.base_subject
    if own_uid is not None and session.profile.threads_by_references:
        widened = tests + ([Contains("subject", subject)] if len(subject) >= 3 else [])
        if not widened:
            return [own_uid], True
        query = AnyOf(tuple(widened))
        charset = "UTF-8" if needs_utf8(query) else None
        for thread in session.uid_thread_references(search_keys(query), charset=charset):
            if own_uid in thread:
                return thread, True
        return [own_uid], True
    if not tests:  # no ids at all: an empty search would match every message
        return ([own_uid] if own_uid is not None else []), False
    found = session.uid_search(search_keys(AnyOf(tuple(tests))))
    return sorted(set(found) | ({own_uid} if own_uid is not None else set())), False


def thread_mailboxes(session: ImapSession, boxes: list[MailboxInfo], own: str, seed: ThreadSeed) -> list[str]:
    """Where a conversation lives: the message's own mailbox, INBOX and Sent (special-use, else by name);
    where the server names conversations, the mailboxes a search of every one covers (Gmail: All Mail)."""
    directory = MailboxDirectory(boxes)
    if seed.conversation is not None:
        return session.personality.every_mailbox(directory)
    inbox = [name for name in [directory.inbox()] if name is not None]
    return list(dict.fromkeys([own, *inbox, *directory.with_role(SENT)]))
