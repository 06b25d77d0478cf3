"""A search hit's sender warnings: what its From, Reply-To and Sender tell (``mime.authentication.
sender_warnings`` without a verdict), the same whether the server's FETCH answer or the local index's row
made the summary, bounded however hostile the headers, absent from ordinary mail, and valid against the
search tool's published schema in both shapes."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from mail_imap_mcp.envelope import Meta, SuccessEnvelope, ToolResult
from mail_imap_mcp.envelope.schemas import envelope_output_schema
from mail_imap_mcp.imap.fetch import SUMMARY_HEADERS, summary_record
from mail_imap_mcp.index.document import INDEX_HEADERS, indexed_message
from mail_imap_mcp.index.store import Hit, pack_texts, unpack_doc
from mail_imap_mcp.index.summaries import summary_of
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.mail.records import SummaryRecord
from mail_imap_mcp.mime.authentication import sender_warnings
from mail_imap_mcp.mime.summary import MAX_WARNING_CHARS, summarise
from mail_imap_mcp.presentation.search_page import (
    COMPACT_UNTRUSTED,
    PageFound,
    compact_search_result,
    search_result,
)
from mail_imap_mcp.tools.registry import TOOLS
from tests.support.clients.envelope_client import validate

ARRIVED = datetime(2026, 11, 20, 9, 30, tzinfo=UTC)

#: From, Reply-To and Sender headers, and the codes a hit says of them.
CASES = [
    ("Alice <alice@example.com>", None, None, []),
    ('"alice@example.com" <ALICE@example.com>', "Alice <alice@EXAMPLE.com>", None, []),
    ("Zoë Ünal <zoe@example.de>", "help@support.example.de", "zoe@example.de", []),
    ('"support@paypal.com" <help@evil.example>', None, None, ["display_name_is_other_address"]),
    ("service\uff20paypal.com <help@evil.example>", None, None, ["display_name_is_other_address"]),
    ("Bank <bank@xn--bnk-qla.example>", None, None, ["punycode_domain"]),
    ("Bank <bank@xn--pple-43d.com>", None, None, ["punycode_domain", "mixed_script_domain"]),
    ("Bank <bank@bank.example>, Evil <evil@evil.example>", None, None, ["multiple_from_addresses"]),
    ("Bank <bank@bank.example>", None, "mailer@evil.example", ["sender_differs_from_from"]),
    ("CEO <ceo@company.example>", "CEO <ceo.private@gmail.example>", None, ["reply_to_other_domain"]),
    (
        '"it@bank.example" <bank@xn--pple-43d.com>, x@evil.example',
        "r@elsewhere.example",
        "s@evil.example",
        [
            "display_name_is_other_address",
            "multiple_from_addresses",
            "sender_differs_from_from",
            "punycode_domain",
            "mixed_script_domain",
            "reply_to_other_domain",
        ],
    ),
]


def headers_with(from_: str | list[str], reply_to: str | None = None, sender: str | None = None) -> str:
    lines = [f"From: {value}" for value in ([from_] if isinstance(from_, str) else from_)]
    lines += [f"Reply-To: {reply_to}"] * bool(reply_to) + [f"Sender: {sender}"] * bool(sender)
    return "\r\n".join([*lines, "To: me@example.org", "Subject: The heating", "", ""])


@pytest.mark.parametrize(("from_", "reply_to", "sender", "expected"), CASES)
def test_a_hit_warns_as_the_message_does_but_of_authentication(
    from_: str, reply_to: str | None, sender: str | None, expected: list[str]
) -> None:
    found = summarise({"from": [from_], "reply-to": [reply_to or ""], "sender": [sender or ""]})
    assert [w.code for w in found.sender_warnings] == expected
    # The same facts, in the same words and order, as imap_get_message's without its verdict.
    headers = {
        "from": [from_],
        "reply-to": [reply_to] if reply_to else [],
        "sender": [sender] if sender else [],
    }
    assert list(found.sender_warnings) == sender_warnings(headers)


def fetch_answer(header: str, body: str = "Hello.\r\n") -> dict[bytes, Any]:
    """A server's answer to a search's FETCH (no BODYSTRUCTURE: the headers tell the type)."""
    return {
        b"FLAGS": (b"\\Seen",),
        b"INTERNALDATE": ARRIVED,
        b"RFC822.SIZE": 400,
        f"BODY[HEADER.FIELDS ({SUMMARY_HEADERS})]<0>".encode(): header.encode(),
        f"BODY[HEADER.FIELDS ({INDEX_HEADERS})]<0>".encode(): header.encode(),
        b"BODY[TEXT]<0>": body.encode(),
    }


def both_paths(header: str) -> tuple[SummaryRecord, SummaryRecord]:
    """The summary of one message made from the server's FETCH answer and from the index's row of it."""
    answer = fetch_answer(header)
    ref = MessageRef("default", "INBOX", 7, 42)
    served = summary_record(ref, answer, None, None)
    row = indexed_message(42, answer)
    texts, kept = unpack_doc(pack_texts(row.texts, row.kept))  # as a store keeps them
    hit = Hit("INBOX", 7, 42, 0.0, row.sent, tuple(texts), row.flags, row.size, row.has_attachment, kept=kept)
    return served, summary_of("default", hit, tag="", own=frozenset(), snippet_chars=0, words=[])


@pytest.mark.parametrize(("from_", "reply_to", "sender", "expected"), CASES)
def test_the_server_and_the_index_give_a_hit_the_same_warnings(
    from_: str, reply_to: str | None, sender: str | None, expected: list[str]
) -> None:
    served, indexed = both_paths(headers_with(from_, reply_to, sender))
    assert [w.code for w in served.sender_warnings] == expected
    assert served.sender_warnings == indexed.sender_warnings


def test_two_from_fields_warn_on_both_paths() -> None:
    served, indexed = both_paths(headers_with(["Bank <bank@bank.example>", "Evil <evil@evil.example>"]))
    assert [w.code for w in served.sender_warnings] == ["multiple_from_addresses"]
    assert served.sender_warnings == indexed.sender_warnings


def test_hostile_headers_of_a_megabyte_make_few_short_warnings_on_both_paths() -> None:
    # A display name padded with another address, a 300-character mailbox on a punycode domain, then
    # 50,000 more addresses: about 1 MiB; a Reply-To and a Sender of 5,000 addresses each.
    name = "it@bank.example " * 600
    others = ", ".join(f"x{i}@evil.example" for i in range(50_000))
    hostile = f'"{name}" <{"a" * 300}@xn--pple-43d.com>, {others}'
    assert len(hostile) > 1_000_000
    few = ", ".join(f"x{i}@evil.example" for i in range(5_000))
    served, indexed = both_paths(
        headers_with(hostile, f"{few}, r@elsewhere.example", f"s@other.example, {few}")
    )
    assert served.sender_warnings == indexed.sender_warnings
    assert len(served.sender_warnings) == 6
    assert all(len(w.message) <= MAX_WARNING_CHARS + 1 for w in served.sender_warnings), served


def test_a_row_kept_before_reply_to_and_sender_were_warns_of_its_from() -> None:
    answer = fetch_answer(headers_with('"it@bank.example" <x@evil.example>', "r@elsewhere.example"))
    row = indexed_message(42, answer)
    texts, kept = unpack_doc(pack_texts(row.texts, row.kept))
    assert (texts, kept) == (list(row.texts), ("r@elsewhere.example", ""))
    assert unpack_doc(pack_texts(row.texts)) == (list(row.texts), None)  # a row of before: its texts alone
    old = Hit("INBOX", 7, 42, 0.0, row.sent, tuple(texts))
    summary = summary_of("default", old, tag="", own=frozenset(), snippet_chars=0, words=[])
    assert [w.code for w in summary.sender_warnings] == ["display_name_is_other_address"]


def test_a_summary_of_ordinary_mail_has_no_warnings() -> None:
    assert summarise({"from": ["Alice <alice@example.com>"]}).sender_warnings == ()
    assert summarise({}).sender_warnings == ()


def page(*froms: str) -> PageFound:
    messages = [
        summary_record(MessageRef("default", "INBOX", 7, uid), fetch_answer(headers_with(f)), None, None)
        for uid, f in enumerate(froms, start=1)
    ]
    return PageFound("INBOX", "INBOX", len(messages), 0, len(messages), messages, None, [], [])


def envelope(result: ToolResult[Any]) -> dict[str, Any]:
    """The answer as the client gets it, validated against the search tool's published output schema."""
    (spec,) = [spec for spec in TOOLS if spec.name == "imap_search_messages"]
    meta = Meta(request_id="r", now_utc="2026-11-28T09:00:00.000Z", duration_ms=0, warnings=result.warnings)
    payload = SuccessEnvelope[Any](summary=result.summary, data=result.data, meta=meta).model_dump(
        mode="json", by_alias=True
    )
    validate(envelope_output_schema(spec.data_model, *spec.other_data_models), payload)
    return payload


def test_both_shapes_carry_the_warnings_where_there_are_some_and_stay_valid() -> None:
    found = page("Alice <alice@example.com>", '"support@paypal.com" <help@evil.example>')
    compact = envelope(compact_search_result(found, by_date=False))["data"]
    ordinary, crafted = compact["messages"]
    assert "sender_warnings" not in ordinary
    assert [w["code"] for w in crafted["sender_warnings"]] == ["display_name_is_other_address"]
    assert compact["untrusted_content"] == f"{COMPACT_UNTRUSTED},sender_warnings"
    full = envelope(
        search_result({}, found, account_id="default", mailboxes=["INBOX"], by_date=False, has_more=False)
    )
    ordinary, crafted = full["data"]["messages"]
    assert "sender_warnings" not in ordinary
    assert crafted["sender_warnings"] == compact["messages"][1]["sender_warnings"]
    assert "messages[].sender_warnings" in full["data"]["untrusted_content"]["fields"]


def test_a_page_of_ordinary_mail_does_not_grow() -> None:
    found = page("Alice <alice@example.com>", "Bob <bob@example.org>")
    compact = envelope(compact_search_result(found, by_date=False))["data"]
    assert compact["untrusted_content"] == COMPACT_UNTRUSTED
    assert "sender_warnings" not in json.dumps(compact)


def test_a_row_of_a_message_without_reply_to_and_sender_is_told_from_a_row_kept_before_them() -> None:
    row = indexed_message(42, fetch_answer(headers_with("Alice <alice@example.com>")))
    assert row.kept == ("", "")
    assert unpack_doc(pack_texts(row.texts, row.kept)) == (list(row.texts), ("", ""))
    assert unpack_doc(pack_texts(row.texts, None))[1] is None
