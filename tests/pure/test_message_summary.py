"""A message's summary from headers, flags and text alone (mime/summary.py): what a local index will
store and answer with, built as the FETCH path builds it."""

from __future__ import annotations

from datetime import UTC, datetime

from mail_imap_mcp.mime import parse_header_block, snippet_of, summarise
from mail_imap_mcp.mime.parts import make_part
from mail_imap_mcp.mime.summary import MAX_LISTED_ADDRESSES, MAX_SUMMARY_FIELD_CHARS, cut_snippet


def headers_of(raw: str) -> dict[str, list[str]]:
    return parse_header_block(raw.replace("\n", "\r\n").encode() + b"\r\n")


def test_a_summary_needs_no_server() -> None:
    headers = headers_of(
        "From: Ann <ann@example.org>\n"
        "To: me@example.com, Bob <bob@example.org>\n"
        "Cc: bob@example.org\n"
        "Subject: =?utf-8?q?Gr=C3=BC=C3=9Fe?=\n"
        "Date: Tue, 1 Apr 2025 10:00:00 +0200\n"
        "Message-ID: <a1@example.org>\n"
    )
    found = summarise(headers, own=frozenset({"me@example.com"}), snippet=snippet_of(" Hi \n\n there ", 50))
    assert found.date == "2025-04-01T08:00:00Z"
    assert found.from_ == "Ann <ann@example.org>"
    assert found.subject == "Grüße"
    assert found.short_recipients == "me +1"
    assert found.header_message_id == "<a1@example.org>"
    assert found.snippet == "Hi there"
    assert not found.has_attachments


def test_the_arrival_time_stands_in_for_a_missing_or_unreadable_date() -> None:
    arrived = datetime(2025, 5, 6, 7, 8, 9, tzinfo=UTC)
    assert summarise(headers_of("Subject: x\n"), arrived=arrived).date == "2025-05-06T07:08:09Z"
    assert summarise(headers_of("Date: not a date\n"), arrived=arrived).date == "2025-05-06T07:08:09Z"
    assert summarise(headers_of("Subject: x\n")).date is None


def test_every_field_is_bounded_and_says_so() -> None:
    many = ", ".join(f"u{i}@example.org" for i in range(MAX_LISTED_ADDRESSES + 5))
    found = summarise(headers_of(f"To: {many}\nSubject: {'s' * (MAX_SUMMARY_FIELD_CHARS + 10)}\n"))
    assert found.to is not None and found.to.endswith("(+5 more)")
    assert found.subject is not None and len(found.subject) == MAX_SUMMARY_FIELD_CHARS + 1
    assert found.subject.endswith("…")
    assert found.short_recipients == f"u0@example.org +{MAX_LISTED_ADDRESSES + 4}"


def test_attachments_are_read_from_the_structure_when_given() -> None:
    pdf = make_part("2", "application/pdf", {"name": "a.pdf"}, "base64", 900, "attachment", {}, None)
    text = make_part("1", "text/plain", {"charset": "utf-8"}, "7bit", 20, None, {}, None)
    assert summarise({}, parts=[text, pdf]).has_attachments
    assert not summarise({}, parts=[text]).has_attachments


def test_a_snippet_is_the_start_of_the_text_with_whitespace_collapsed() -> None:
    assert snippet_of("one\n\ttwo   three", 7) == "one two"
    assert snippet_of("   \n ", 10) is None
    assert snippet_of(None, 10) is None
    assert snippet_of("text", 0) is None


def test_a_snippet_of_collapsed_text_is_cut_without_collapsing_it_again() -> None:
    assert cut_snippet("one two three", 7) == snippet_of("one \n\t two three", 7) == "one two"
    assert cut_snippet("", 7) is None and cut_snippet("text", 0) is None
