"""The words of a query the search cannot take (:mod:`mail_imap_mcp.query`): malformed, too complex for
IMAP SEARCH, or testing attachments where the server's search cannot be combined with it. Each names the
``query`` argument (a search by meaning the index cannot answer now: ``about`` or ``like``). The failure registry (:mod:`.failures`) says each with these."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mail_imap_mcp.envelope import ErrorCode, ToolFailure
from mail_imap_mcp.meaning.errors import MeaningFilterRefused, MeaningNotReady
from mail_imap_mcp.presentation.call import Call
from mail_imap_mcp.query import QuerySyntaxError, QueryTooComplex
from mail_imap_mcp.query.imap import GmailOnly, NotSearchable
from mail_imap_mcp.query.sieve import NotSayableInSieve
from mail_imap_mcp.query.structure import MixedStructure


def _malformed(exc: QuerySyntaxError, call: Call | None) -> ToolFailure:
    return ToolFailure.invalid_input(
        "query",
        f'{exc}. The language: words, "phrases", OR, -term, (groups) and operators such as from:, '
        "has:attachment, in:, is:unread, after:2024/01/31, newer_than:7d (docs/search.md).",
        position=exc.position + 1,
        expected=exc.expected,
    )


def _too_complex(exc: QueryTooComplex, call: Call | None) -> ToolFailure:
    return ToolFailure.invalid_input(
        "query", f"{exc}: use fewer OR groups of several terms each, or split it into several searches."
    )


def _structure(exc: MixedStructure | NotSearchable, call: Call | None) -> ToolFailure:
    return ToolFailure.invalid_input(
        "query",
        f"{exc}: without a local index the server searches everything else and the attachments are judged "
        "here afterwards. Search the two parts separately.",
    )


def _gmail_only(exc: GmailOnly, call: Call | None) -> ToolFailure:
    return ToolFailure.unsupported(
        "query",
        "label:, is:important and category: are Gmail's: only a server with Gmail's search (X-GM-EXT-1) "
        "answers them, and this one has none. Leave them out, or search a mailbox (in:) instead of a label.",
        "X-GM-EXT-1",
    )


def _not_sayable_in_sieve(exc: NotSayableInSieve, call: Call | None) -> ToolFailure:
    return ToolFailure.invalid_input(
        "query",
        f"a rule cannot test {exc.part!r}: {exc.reason}. Leave it out of the rule's condition.",
        part=exc.part,
    )


def _meaning_not_ready(exc: MeaningNotReady, call: Call | None) -> ToolFailure:
    given = "like" if call is not None and call.argument("like") is not None else "about"
    return ToolFailure(
        ErrorCode.UNAVAILABLE,
        f"Search by meaning ('{given}') cannot be answered now: {str(exc).rstrip('.')}. Search by words (query) meanwhile, "
        "or try again later.",
        details={"parameter": given},
        retryable=True,
    )


def _meaning_filter_refused(exc: MeaningFilterRefused, call: Call | None) -> ToolFailure:
    return meaning_filter_refused(
        exc.argument, "like" if call is not None and call.argument("like") else "about", str(exc)
    )


def meaning_filter_refused(argument: str, ranked_by: str, why: str) -> ToolFailure:
    """``invalid_input`` naming ``argument``: a search ranked by meaning (``ranked_by``: ``about`` or
    ``like``) is the local index's alone, and it cannot answer that filter (``why``)."""
    return ToolFailure.invalid_input(
        argument,
        f"'{ranked_by}' ranks the local index's mail, and the index cannot answer this filter: {why}.",
        conflicts_with=ranked_by,
    )


#: The registry's lines of queries the search cannot take.
QUERY_FAILURES: Mapping[type[BaseException], Callable[[Any, Call | None], ToolFailure]] = {
    QuerySyntaxError: _malformed,
    QueryTooComplex: _too_complex,
    MixedStructure: _structure,
    NotSearchable: _structure,
    GmailOnly: _gmail_only,
    NotSayableInSieve: _not_sayable_in_sieve,
    MeaningNotReady: _meaning_not_ready,
    MeaningFilterRefused: _meaning_filter_refused,
}
