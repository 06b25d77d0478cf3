"""One message read by id and rendered (services/message_read.py) on mail kept in memory
(tests/support/mail/memory_mail.py): the body in the format asked for and cut to its length (and said so),
what ``new_text_only`` leaves out, the snippet, and whose authentication results count."""

from __future__ import annotations

from dataclasses import replace

import pytest

from mail_imap_mcp.mail.errors import MessageGone, UidValidityChanged
from mail_imap_mcp.mail.ids import MessageRef
from mail_imap_mcp.mail.reading import MAX_LISTED_ATTACHMENTS, ReadOptions
from mail_imap_mcp.mail.roles import INBOX
from mail_imap_mcp.mime.authentication import TrustedServers
from mail_imap_mcp.services.message_read import MessageRead, read_checked
from tests.support.mail.memory_mail import MemoryMail

TEXT = ReadOptions(10_000, "text", False, False, 100_000)  # body chars, format, headers, all, part bytes
HEAD = "From: Ann <ann@example.org>\r\nTo: <bob@example.org>\r\nSubject: Plans\r\nMessage-ID: <p@example.org>\r\n"
REPLY_BODY = "Sounds good.\r\n\r\n-- \r\nAnn\r\n\r\nOn Monday Bob wrote:\r\n> Shall we?\r\n> Yes.\r\n"


def plain(body: str, extra: str = "") -> bytes:
    return f"{HEAD}{extra}Content-Type: text/plain; charset=utf-8\r\n\r\n{body}".encode()


def alternative(text: str, html: str) -> bytes:
    return (
        f"{HEAD}MIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary=alt\r\n\r\n"
        f"--alt\r\nContent-Type: text/plain\r\n\r\n{text}\r\n--alt\r\nContent-Type: text/html\r\n\r\n{html}\r\n"
        "--alt--\r\n"
    ).encode()


def read(raw: bytes, options: ReadOptions = TEXT) -> tuple[MessageRead, list[str]]:
    mail = MemoryMail()
    made = mail.append(INBOX, raw)
    return read_checked(mail, MessageRef("default", INBOX, made.uidvalidity, made.uid), options)


def test_a_plain_message_reads_as_its_text_with_a_snippet() -> None:
    detail, warnings = read(plain("Hello Bob,\r\nsee you.\r\n"))
    assert (detail.body_text, detail.body_source, detail.body_truncated) == (
        "Hello Bob,\nsee you.\n",
        "text/plain",
        False,
    )
    assert (detail.snippet, detail.subject, detail.from_, warnings) == (
        "Hello Bob, see you.",
        "Plans",
        "Ann <ann@example.org>",
        [],
    )


def test_a_body_longer_than_asked_is_cut_and_says_how_to_read_on() -> None:
    detail, warnings = read(plain("x" * 500), replace(TEXT, body_max_chars=100))
    assert (len(detail.body), detail.body_truncated) == (100, True)
    assert len(warnings) == 1 and "Body truncated to 100 characters" in warnings[0]


def test_new_text_only_leaves_out_the_quoted_reply_and_the_signature() -> None:
    detail, _ = read(plain(REPLY_BODY), replace(TEXT, new_text_only=True))
    assert detail.body.strip() == "Sounds good."
    assert detail.body_omitted == ["quoted_reply", "signature"]


def test_without_new_text_only_everything_the_sender_wrote_is_kept() -> None:
    detail, _ = read(plain(REPLY_BODY))
    assert "> Shall we?" in detail.body and detail.body_omitted == []


def test_the_snippet_is_the_new_text_of_the_body() -> None:
    detail, _ = read(plain(REPLY_BODY))
    assert detail.snippet == "Sounds good."


def test_html_is_asked_for_and_sanitised() -> None:
    detail, _ = read(
        alternative("Plain words", "<p>Rich <b>words</b><script>x()</script></p>"),
        replace(TEXT, body_format="html"),
    )
    assert detail.body_source == "text/html" and detail.body_html is not None
    assert "<b>words</b>" in detail.body_html and "script" not in detail.body_html
    assert (detail.body_text, detail.snippet) == (None, None)


def test_a_plain_body_asked_as_html_is_preformatted_and_escaped() -> None:
    detail, _ = read(plain("a < b & c\r\n"), replace(TEXT, body_format="html"))
    assert detail.body_source == "text/plain"
    assert detail.body_html is not None and "a &lt; b &amp; c" in detail.body_html


def test_markdown_comes_from_the_html_part() -> None:
    detail, _ = read(
        alternative("Plain words", "<p>Rich <b>words</b></p>"), replace(TEXT, body_format="markdown")
    )
    assert (detail.body_source, detail.body_markdown) == ("text/html", "Rich **words**")


def test_text_comes_from_the_plain_part_where_there_is_one() -> None:
    detail, _ = read(alternative("Plain words", "<p>Rich <b>words</b></p>"))
    assert (detail.body_source, detail.body_text) == ("text/plain", "Plain words")


def test_an_empty_plain_part_gives_way_to_the_html_one() -> None:
    detail, _ = read(alternative("  ", "<p>Only here</p>"))
    assert (detail.body_source, (detail.body_text or "").strip()) == ("text/html", "Only here")


def test_the_headers_asked_for_are_the_usual_ones_unless_all_are_asked() -> None:
    extra = "X-Mailer: Mutt\r\n"
    usual, _ = read(plain("Hi", extra), replace(TEXT, include_headers=True))
    every, _ = read(plain("Hi", extra), replace(TEXT, include_all_headers=True))
    assert "X-Mailer" not in usual.headers and usual.headers["Message-ID"] == "<p@example.org>"
    assert every.headers["X-Mailer"] == "Mutt"


def test_a_header_value_is_cut_at_its_limit() -> None:
    detail, _ = read(
        plain("Hi", f"X-Long: {'y' * 300}\r\n"),
        replace(TEXT, include_all_headers=True, max_header_value_chars=50),
    )
    assert detail.headers["X-Long"] == "y" * 50


AUTH = "Authentication-Results: mx.example.org; dkim=pass header.d=example.org; spf=pass\r\n"


def test_authentication_results_count_from_a_trusted_server_only() -> None:
    trusted, _ = read(
        plain("Hi", AUTH), replace(TEXT, trusted_servers=TrustedServers(frozenset({"mx.example.org"})))
    )
    untrusted, _ = read(plain("Hi", AUTH))
    assert trusted.authentication is not None and untrusted.authentication is None


def test_more_attachments_than_are_listed_are_said() -> None:
    count = MAX_LISTED_ATTACHMENTS + 3
    parts = "".join(
        f"--m\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=f{i}.bin\r\n\r\nx\r\n"
        for i in range(count)
    )
    raw = f"{HEAD}MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=m\r\n\r\n--m\r\nContent-Type: text/plain\r\n\r\nFiles.\r\n{parts}--m--\r\n"
    detail, warnings = read(raw.encode())
    assert len(detail.attachments) == MAX_LISTED_ATTACHMENTS and detail.has_attachments
    assert f"Only the first {MAX_LISTED_ATTACHMENTS} of {count} attachment parts are listed." in warnings


def test_a_message_gone_is_said_naming_it() -> None:
    mail = MemoryMail()
    made = mail.append(INBOX, plain("Hi"))
    mail.expunge(INBOX, [made.uid])
    ref = MessageRef("default", INBOX, made.uidvalidity, made.uid)
    with pytest.raises(MessageGone):
        read_checked(mail, ref, TEXT)


def test_an_id_of_a_mailbox_made_again_is_a_conflict() -> None:
    mail = MemoryMail({"Archive": None})
    made = mail.append("Archive", plain("Hi"))
    mail.delete("Archive")
    mail.create("Archive")
    with pytest.raises(UidValidityChanged):
        read_checked(mail, MessageRef("default", "Archive", made.uidvalidity, made.uid), TEXT)
