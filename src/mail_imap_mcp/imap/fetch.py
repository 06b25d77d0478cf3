"""Bounded fetches: message summaries for a page, one message's readable body, raw byte windows.

Everything uses ``BODY.PEEK`` (never sets ``\\Seen``) and partial fetches: a summary reads the
header fields plus the first few KiB of the body; a message read looks at BODYSTRUCTURE first
and fetches only the text part it needs, capped, so a 30 MB attachment costs nothing. A
BODYSTRUCTURE that is unusable or contradicts the message's own Content-Type header is not
followed: the message's first bytes are fetched (capped) and parsed locally instead.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from mail_imap_mcp import mime
from mail_imap_mcp.envelope import Issue
from mail_imap_mcp.imap.bodystructure import parse_bodystructure, structure_mismatch, top_level_boundary
from mail_imap_mcp.imap.errors import ConnectionLost, message_failure
from mail_imap_mcp.imap.session import ImapSession
from mail_imap_mcp.imap.summary_cache import SummaryKey, with_flags
from mail_imap_mcp.mail.backend import MAX_HEADER_BYTES as MAX_HEADER_BYTES  # the backends' one bound
from mail_imap_mcp.mail.errors import UidValidityChanged
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.mail.pages import gone_meanwhile
from mail_imap_mcp.mail.records import SummaryRecord
from mail_imap_mcp.mime.summary import attachment_names, cut_snippet, first, iso_utc, summarise

log = logging.getLogger("mail_imap_mcp.imap")

# Reply-To/Sender: for the summary's sender warnings (16 bytes more a command and a message's answer, and
# the two header lines where a message has them); Content-Type/-Transfer-Encoding: to check the server's
# BODYSTRUCTURE and to read the snippet without it.
SUMMARY_HEADERS = "DATE FROM TO CC SUBJECT MESSAGE-ID REPLY-TO SENDER CONTENT-TYPE CONTENT-TRANSFER-ENCODING"
SNIPPET_PREFIX_BYTES = 6144
# Summary header fields are read up to this size: a 300 KB Subject must not travel for a list view.
SUMMARY_HEADER_BYTES = 32 * 1024
# A page gives up isolating broken messages after this many server hang-ups.
MAX_RECONNECTS_PER_PAGE = 3


def find_item(response: dict[bytes, Any], prefix: bytes) -> Any:
    """Fetch data by key prefix: servers echo section names with varying spacing and origins."""
    size = len(prefix)
    for key, value in response.items():
        # Only the key's start is upper-cased (as a whole, a BODY[HEADER.FIELDS (...)] key is long).
        if isinstance(key, bytes) and key[:size].upper() == prefix:
            return value
    return None


def expunged(response: dict[bytes, Any]) -> bool:
    # A message expunged by another session stays visible to ours until the server reports the
    # expunge; meanwhile Dovecot answers FETCH with flags only (no size, no content).
    return not response.get(b"RFC822.SIZE") and not any(
        isinstance(k, bytes) and k.startswith(b"BODY[") and v for k, v in response.items()
    )


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def summary_record(
    ref: MessageRef,
    response: dict[bytes, Any],
    parts: list[mime.Part] | None,
    snippet: str | None,
    headers: dict[str, list[str]] | None = None,
    own: frozenset[str] = frozenset(),
) -> SummaryRecord:
    """The summary of one FETCH response (``headers``: the header block, when already parsed; ``own``:
    the account's addresses, which the short recipients call 'me'), built by :func:`mail_imap_mcp.mime.summarise`."""
    if headers is None:
        headers = mime.parse_header_block(find_item(response, b"BODY[HEADER") or b"")
    found = summarise(headers, arrived=response.get(b"INTERNALDATE"), parts=parts, snippet=snippet, own=own)
    uri = ref.message_uri
    return SummaryRecord(
        message_id=ref.message_id,
        message_uri=uri,
        message_raw_uri=uri + "/raw",  # as ref.message_raw_uri, without quoting the mailbox again
        mailbox=ref.mailbox,
        uidvalidity=ref.uidvalidity,
        uid=ref.uid,
        date=found.date,
        from_=found.from_,
        to=found.to,
        cc=found.cc,
        subject=found.subject,
        flags=_flags(response),
        size_bytes=int(response.get(b"RFC822.SIZE") or 0),
        has_attachments=found.has_attachments,
        snippet=found.snippet,
        short_recipients=found.short_recipients,
        header_message_id=found.header_message_id,
        sender_warnings=found.sender_warnings,
        arrived=iso_utc(response.get(b"INTERNALDATE")),
        attachment_names=found.attachment_names,
    )


@dataclass
class SummaryBatch:
    messages: list[SummaryRecord] = field(default_factory=list)
    issues: list[Issue] = field(default_factory=list)

    def add_issue(self, ref: MessageRef, code: str, stage: str, message: str, *, retryable: bool) -> None:
        self.issues.append(ref.issue(code, stage, message, retryable=retryable))


def _bodystructure(response: dict[bytes, Any]) -> list[mime.Part] | None:
    structure = response.get(b"BODYSTRUCTURE")
    if structure is None:
        return None
    try:
        parts: list[mime.Part] = parse_bodystructure(structure)
        return parts
    except ValueError:
        return None


def trusted_structure(
    response: dict[bytes, Any], headers: dict[str, list[str]]
) -> tuple[list[mime.Part] | None, str | None]:
    """The BODYSTRUCTURE's parts, or None with the reason when it contradicts the message's headers.

    Courier describes every message without MIME-Version as text/plain, and a server may list a
    multipart without parts: reading along such a structure would show HTML as raw markup (no
    hidden-text removal) and miss attachments. None without a reason: the structure is unusable.
    """
    parts = _bodystructure(response)
    if parts is None:
        return None, None
    doubt: str | None = structure_mismatch(
        response.get(b"BODYSTRUCTURE"), first(headers, "content-type"), parts
    )
    return (None, doubt) if doubt else (parts, None)


def _flags(response: dict[bytes, Any]) -> list[str]:
    return [_text(flag) for flag in response.get(b"FLAGS", ())]


#: What a page asks for messages whose summary is kept: their content cannot have changed, their flags
#: can. The size tells a message expunged elsewhere but not yet reported (see expunged) from a live one.
KEPT_ITEMS = ["FLAGS", "RFC822.SIZE"]


def summary_items(snippet_chars: int, extra: Sequence[str] = ()) -> list[str]:
    """FETCH items of one search-result summary: metadata, capped header fields, a body prefix, and
    the ``extra`` items of the server's personality (Gmail: its labels)."""
    items = [
        "FLAGS",
        "INTERNALDATE",
        "RFC822.SIZE",
        "BODYSTRUCTURE",
        f"BODY.PEEK[HEADER.FIELDS ({SUMMARY_HEADERS})]<0.{SUMMARY_HEADER_BYTES}>",
    ]
    if snippet_chars > 0:
        items.append(f"BODY.PEEK[TEXT]<0.{SNIPPET_PREFIX_BYTES}>")
    return [*items, *extra]


# FETCH items of imap_get_message's first command; the text part follows in a second one.
MESSAGE_ITEMS = [
    "FLAGS",
    "INTERNALDATE",
    "RFC822.SIZE",
    "BODYSTRUCTURE",
    f"BODY.PEEK[HEADER]<0.{MAX_HEADER_BYTES}>",
]


def fetch_summaries(
    session: ImapSession,
    *,
    account_id: str,
    tag: str,
    mailbox: str,
    uidvalidity: int,
    uids: list[int],
    snippet_chars: int,
    raw_window_bytes: int,
    fetched: tuple[SummaryRequests, dict[int, dict[bytes, Any]]] | None = None,
) -> SummaryBatch:
    """Summaries for ``uids`` in the given order; a message that fails becomes an issue, not an error.

    Messages whose summary the session's cache keeps are not fetched and parsed again: only their
    flags are, in a second ``UID FETCH`` sent with the first (one round trip for both). A message whose
    BODYSTRUCTURE cannot be trusted is read as imap_get_message reads it, from the first
    ``raw_window_bytes`` of its source (one more round trip, only then), so both agree on its attachments.
    ``fetched``: the :func:`summary_requests` of ``uids`` and their answers, already read (with other
    mailboxes' requests, in the same round trip). ``tag``: the caller's in the messages' ids
    (:func:`~mail_imap_mcp.mail.ids.user_tag`).
    """
    cache = session.summary_cache

    def ref_of(uid: int) -> MessageRef:
        return MessageRef(account_id, mailbox, uidvalidity, uid, tag)

    plan, responses = fetched or (summary_requests(session, mailbox, uidvalidity, uids, snippet_chars), None)
    kept = plan.kept
    full = summary_items(snippet_chars, session.personality.summary_items)
    kept_items = [*KEPT_ITEMS, *session.personality.summary_items]
    batch = SummaryBatch()
    try:
        if responses is None:
            responses = session.fetch_each(plan.requests)
    except Exception as exc:
        if message_failure(exc) is None:
            raise
        # One unreadable message can fail the whole command, or make the server hang up;
        # fetch one by one to isolate it and keep the rest of the page.
        items_of = {uid: kept_items if uid in kept else full for uid in uids}
        responses = _fetch_one_by_one(session, batch, mailbox, uidvalidity, uids, items_of, ref_of, exc)
    failed = {issue.uid for issue in batch.issues}
    own = session.own_addresses
    untrusted: dict[int, SummaryRecord] = {}
    for uid in uids:
        ref = ref_of(uid)
        response = responses.get(uid)
        if response is None or expunged(response):
            if uid not in failed:
                batch.issues.append(gone_meanwhile(ref))
            continue
        if uid in kept:
            personality = session.personality
            batch.messages.append(
                replace(
                    with_flags(kept[uid], _flags(response)),
                    labels=personality.labels_of(response),
                    identity=personality.identity_of(response),
                )
            )
            continue
        try:
            headers = mime.parse_header_block(find_item(response, b"BODY[HEADER") or b"")
            parts, _ = trusted_structure(response, headers)
            snippet = None
            if snippet_chars > 0:
                snippet = _snippet(response, parts, snippet_chars, headers)
            summary = summary_record(ref, response, parts, snippet, headers, own)
            summary.labels = session.personality.labels_of(response)
            summary.identity = session.personality.identity_of(response)
            batch.messages.append(summary)
            if parts is None:
                untrusted[uid] = summary
            else:
                cache.put(SummaryKey(mailbox, uidvalidity, uid, snippet_chars), summary)
        except Exception as exc:  # a hostile message must not sink the page
            log.warning("uid=%s summary failed", uid, exc_info=True)
            batch.add_issue(
                ref,
                "parse_failed",
                "parse_headers",
                f"UID {uid}: could not parse this message ({type(exc).__name__})",
                retryable=False,
            )
    if untrusted:
        if fetched is not None:  # read with other mailboxes: one of them may be the selected one now
            session.examine_ahead(mailbox, uidvalidity=uidvalidity)
        sizes = {uid: int(responses[uid].get(b"RFC822.SIZE") or 0) for uid in untrusted}
        _attachments_from_source(session, untrusted, sizes, raw_window_bytes)
        for uid, summary in untrusted.items():
            cache.put(SummaryKey(mailbox, uidvalidity, uid, snippet_chars), summary)
    return batch


@dataclass
class SummaryRequests:
    """What :func:`fetch_summaries` asks for: the summaries the cache keeps (by UID), and the ``UID FETCH``
    requests (UIDs, items): the others in full, the kept ones' flags (empty requests left out)."""

    kept: dict[int, SummaryRecord]
    requests: list[tuple[list[int], list[str]]]


def summary_requests(
    session: ImapSession, mailbox: str, uidvalidity: int, uids: list[int], snippet_chars: int
) -> SummaryRequests:
    """The summaries kept among ``uids`` and what to fetch for the others (:class:`SummaryRequests`)."""
    cache = session.summary_cache
    extra = session.personality.summary_items
    kept: dict[int, SummaryRecord] = {}
    for uid in uids:
        found = cache.get(SummaryKey(mailbox, uidvalidity, uid, snippet_chars))
        if found is not None:
            kept[uid] = found
    requests = [
        ([uid for uid in uids if uid not in kept], summary_items(snippet_chars, extra)),
        ([uid for uid in uids if uid in kept], [*KEPT_ITEMS, *extra]),
    ]
    return SummaryRequests(kept, [(wanted, items) for wanted, items in requests if wanted])


def _attachments_from_source(
    session: ImapSession, summaries: dict[int, SummaryRecord], sizes: dict[int, int], window: int
) -> None:
    """Sets ``has_attachments`` and ``attachment_names`` of ``summaries`` (by UID) from their own MIME structure, parsed from the
    first ``window`` bytes of each source as imap_get_message does when BODYSTRUCTURE is not trusted.

    The sources are fetched in as few commands as keep each answer within about ``window`` bytes. A
    message the server no longer returns keeps what its BODYSTRUCTURE said.
    """
    groups: list[list[int]] = [[]]
    held = 0
    for uid in summaries:
        expected = min(sizes[uid], window)
        if groups[-1] and held + expected > window:
            groups.append([])
            held = 0
        groups[-1].append(uid)
        held += expected
    for group in groups:
        fetched = session.fetch(group, [f"BODY.PEEK[]<0.{window}>"])
        for uid in group:
            source = find_item(fetched.get(uid, {}), b"BODY[]")
            if source is not None:
                attachments = mime.parse_full_message(source).attachments
                summaries[uid].has_attachments = bool(attachments)
                summaries[uid].attachment_names = attachment_names(attachments)


def _fetch_one_by_one(
    session: ImapSession,
    batch: SummaryBatch,
    mailbox: str,
    uidvalidity: int,
    uids: list[int],
    items_of: dict[int, list[str]],
    ref_of: Callable[[int], MessageRef],
    first_error: Exception,
) -> dict[int, dict[bytes, Any]]:
    responses: dict[int, dict[bytes, Any]] = {}
    reconnects = 0
    if isinstance(message_failure(first_error), ConnectionLost):
        _reopen(session, mailbox, uidvalidity)
    for uid in uids:
        try:
            responses.update(session.fetch([uid], items_of[uid]))
            continue
        except Exception as exc:
            failure = message_failure(exc)
            if failure is None:
                raise
            broken, error = isinstance(failure, ConnectionLost), exc
        ref = ref_of(uid)
        batch.add_issue(
            ref,
            "fetch_failed",
            "fetch_headers",
            f"UID {uid}: the server could not fetch this message ({_short(error)})",
            retryable=not broken,
        )
        if broken:
            reconnects += 1
            if reconnects > MAX_RECONNECTS_PER_PAGE:
                raise error
            _reopen(session, mailbox, uidvalidity)
    return responses


def _reopen(session: ImapSession, mailbox: str, uidvalidity: int) -> None:
    state = session.reopen(mailbox)
    if state.uidvalidity != uidvalidity:
        raise UidValidityChanged(uidvalidity, state.uidvalidity)


def _short(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    return text[:160]


def _snippet(
    response: dict[bytes, Any],
    parts: list[mime.Part] | None,
    snippet_chars: int,
    headers: dict[str, list[str]],
) -> str | None:
    prefix = find_item(response, b"BODY[TEXT]")
    if not prefix:
        return None
    if parts:
        text = mime.snippet_from_prefix(prefix, parts, boundary=_boundary(response))
    else:
        # No trustworthy BODYSTRUCTURE: the message's own headers say how to read the prefix.
        text = mime.snippet_from_prefix(
            prefix,
            [],
            header_content_type=first(headers, "content-type"),
            header_encoding=first(headers, "content-transfer-encoding"),
        )
    return cut_snippet(text or "", snippet_chars)  # snippet_from_prefix collapsed it


def _boundary(response: dict[bytes, Any]) -> str | None:
    structure = response.get(b"BODYSTRUCTURE")
    if structure is None:
        return None
    boundary: str | None = top_level_boundary(structure)
    return boundary
