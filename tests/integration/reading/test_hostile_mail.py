"""Hostile mail: every malformed or unusual message parses into a valid envelope, and stays inert.

Three sources of mail:

* ``tests/data/hostile/*.eml``: hand-written known edge cases (listed in ``tests/data/README.md``):
  broken MIME boundaries, missing and duplicate headers, bad charsets and transfer encodings, invalid
  RFC 2047/2231, NUL and control characters, 8-bit headers, odd line endings, HTML with scripts, event
  handlers, remote resources, mutation-XSS patterns and hidden text.
* ``giant_messages()``: edge cases too big to keep as files, built in code (multipart nesting 120 and
  1000 deep, 3000 parts, a 300 KB header line, 5000 recipients, 20,000 header lines, a 2 MB HTML line).
* ``hostile_messages()``: a Hypothesis strategy composing all of the above at random (recursive MIME
  trees with wrong or missing boundaries, hostile header fragments, mismatched charsets and encodings,
  hostile HTML, deep nesting, huge lines, bare LF/CR, truncation). ``GENERATED_MESSAGES`` per run.

Every message is seeded into a real Dovecot, listed page by page with imap_search_messages and read
with imap_get_message (text, markdown and html) through the in-process MCP client, which validates each
envelope against the tool's outputSchema. On top of that every read must be clean: no control characters
or bidi overrides where they could fool a reader or a terminal, bounded field sizes, ``body_html`` with
no script, event handler or remote resource (checked by parsing it), no hidden text from a rendered
HTML part, and no flag changed anywhere in the mailbox. The pure functions (``parse_full_message``,
``parse_bodystructure`` via imapclient's response parser, ``snippet_from_prefix``, the HTML converters)
are also driven directly by Hypothesis for breadth.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import quopri
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from imapclient.exceptions import ProtocolError
from imapclient.response_parser import parse_fetch_response

from mail_imap_mcp.content.html import html_to_markdown, html_to_text, sanitize_html
from mail_imap_mcp.imap.bodystructure import parse_bodystructure, top_level_boundary
from mail_imap_mcp.mime import Part, parse_full_message, snippet_from_prefix
from tests.support.accounts import account_settings
from tests.support.clients.envelope_client import EnvelopeClient, uid_of
from tests.support.clients.in_process import make_config, open_client
from tests.support.mail.mail_state import flag_snapshot
from tests.support.servers.dovecot import Dovecot

pytestmark = pytest.mark.anyio

DATA = Path(__file__).parents[2] / "data" / "hostile"
#: Generated messages pushed through the server per run (MIM_HOSTILE_MESSAGES overrides it). Enough
#: for every family of damage to show up many times (``FAMILIES``, asserted), small enough for ~20 s.
GENERATED_MESSAGES = int(os.environ.get("MIM_HOSTILE_MESSAGES", "500"))
#: Examples for each direct property test of the pure functions.
PURE_EXAMPLES = int(os.environ.get("MIM_HOSTILE_PURE_EXAMPLES", "600"))
#: Half as many for the BODYSTRUCTURE property, whose drawing costs the most: 300 reach every line
#: transition of imap/bodystructure.py, mime/parts.py and imapclient's response parser that 600 reach
#: (580 against 575, counted with a settrace tracer); 150 missed 4. The HTML property needs its 600.
BODYSTRUCTURE_EXAMPLES = PURE_EXAMPLES // 2
HYPOTHESIS = settings(
    deadline=None,
    database=None,
    derandomize=True,  # the same examples every run: a failure reproduces, the run time is stable
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
FORMATS = ("text", "markdown", "html")
BODY_MAX_CHARS = 20_000
HIDDEN = "HIDDENMARK"  # text that hostile HTML hides from the reader; it must never become visible

# ---------------------------------------------------------------------------------------------------
# What a clean read looks like
# ---------------------------------------------------------------------------------------------------

_LINE_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")
#: File names also lose bidi embedding/override/isolate controls ("invoice\u202egpj.exe").
_FILENAME_BAD = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069/\\]")
_BODY_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_SECTION = re.compile(r"^[1-9][0-9]*(\.[1-9][0-9]*)*$")
#: What sanitised HTML may contain: formatting tags and inert attributes, links to http(s)/mailto only.
INERT_TAGS = frozenset(
    {
        "a",
        "abbr",
        "address",
        "article",
        "aside",
        "b",
        "blockquote",
        "br",
        "caption",
        "center",
        "cite",
        "code",
        "dd",
        "del",
        "div",
        "dl",
        "dt",
        "em",
        "figcaption",
        "figure",
        "footer",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hr",
        "i",
        "img",
        "ins",
        "kbd",
        "li",
        "mark",
        "ol",
        "p",
        "pre",
        "q",
        "s",
        "samp",
        "section",
        "small",
        "span",
        "strike",
        "strong",
        "sub",
        "sup",
        "table",
        "tbody",
        "td",
        "tfoot",
        "th",
        "thead",
        "tr",
        "tt",
        "u",
        "ul",
        "var",
    }
)
INERT_ATTRIBUTES = frozenset(
    {"href", "rel", "title", "lang", "dir", "alt", "width", "height", "start", "colspan", "rowspan"}
    | {"align", "valign", "scope"}
)
_SAFE_URL = re.compile(r"^(https?://|mailto:)", re.IGNORECASE)
_ACTIVE_TAG = re.compile(
    r"<\s*/?\s*(script|style|iframe|frame|object|embed|applet|svg|math|link|meta|base|form|input|button|"
    r"textarea|video|audio|source|picture|image|use|noscript|template|xmp|plaintext|marquee|isindex)\b",
    re.IGNORECASE,
)


class _TagCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, attrs))

    handle_startendtag = handle_starttag


def assert_inert_html(html: str) -> None:
    """No script, event handler, style or remote resource: only allowlisted tags and attributes."""
    match = _ACTIVE_TAG.search(html)
    assert match is None, (
        f"active element in body_html: {html[max(0, match.start() - 80) : match.end() + 80]!r}"
    )
    collector = _TagCollector()
    collector.feed(html)
    collector.close()
    for tag, attrs in collector.found:
        assert tag in INERT_TAGS, f"tag <{tag}> survived sanitising"
        for name, value in attrs:
            assert name in INERT_ATTRIBUTES, f"attribute {name}={value!r} survived on <{tag}>"
            if name == "href":
                assert value is not None and _SAFE_URL.match(value.strip()), f"unsafe link target {value!r}"


def assert_clean_read(message: dict[str, Any], body_format: str, *, context: str) -> None:
    """Invariants of one imap_get_message result beyond the schema."""
    for name in ("subject", "from", "to", "cc", "snippet"):
        value = message[name]
        if value is not None:
            assert not _LINE_CONTROL.search(value), f"{context}: control character in {name}: {value[:200]!r}"
            assert len(value) <= 2001, f"{context}: {name} is {len(value)} characters long"
    for name, value in message["headers"].items():
        assert not _LINE_CONTROL.search(name), f"{context}: header name {name!r}"
        assert not _LINE_CONTROL.search(value.replace("\n", " ")), (
            f"{context}: header {name}: {value[:200]!r}"
        )
        assert len(value) <= 4000
    for attachment in message["attachments"]:
        assert _SECTION.match(attachment["part_id"]), attachment
        assert not re.search(r"\s", attachment["content_type"]), attachment
        for key in ("filename", "content_type", "content_id"):
            value = attachment[key]
            assert value is None or not _LINE_CONTROL.search(value), f"{context}: {key} {value!r}"
        name = attachment["filename"]
        assert name is None or (not _FILENAME_BAD.search(name) and name not in (".", "..")), name
    body_field = f"body_{body_format}"
    for other in FORMATS:
        if other != body_format:
            assert message[f"body_{other}"] is None
    body = message[body_field]
    assert isinstance(body, str), f"{context}: {body_field} is {body!r}"
    assert len(body) <= BODY_MAX_CHARS
    assert not _BODY_CONTROL.search(body), f"{context}: control character in the body: {body[:300]!r}"
    if body_format == "html":
        assert_inert_html(body)
    if message["body_source"] == "text/html":
        assert HIDDEN not in body, f"{context}: hidden HTML text became visible: {body[:500]!r}"


# ---------------------------------------------------------------------------------------------------
# Reading a whole mailbox through the server
# ---------------------------------------------------------------------------------------------------


@dataclass
class MailboxRead:
    """Everything the tools returned for one mailbox."""

    pages: int = 0
    summaries: dict[int, dict[str, Any]] = field(default_factory=dict)
    reads: dict[tuple[int, str], dict[str, Any]] = field(default_factory=dict)
    raw_windows: dict[int, dict[str, Any]] = field(default_factory=dict)
    failures: dict[tuple[int, str], str] = field(default_factory=dict)  # (uid, format or "raw") -> code
    issues: list[dict[str, Any]] = field(default_factory=list)
    flags_unchanged: bool = False


async def read_mailbox(
    dovecot: Dovecot,
    messages: list[bytes],
    *,
    page_size: int,
    formats_for: Callable[[int], tuple[str, ...]],
    raw_for: Callable[[int], bool] = lambda uid: False,
) -> MailboxRead:
    """Seed ``messages`` into a fresh user's INBOX (UID i+1 is message i) and read them all back."""
    user = dovecot.new_user()
    flags = ["\\Seen", "", "\\Flagged", "\\Seen \\Answered", "$Important"]
    dovecot.seed(user, "INBOX", messages, flags=lambda i: flags[i % len(flags)])
    before = flag_snapshot(dovecot, user)
    result = MailboxRead()
    config = make_config(
        {"default": account_settings(dovecot, user, command_timeout_s=30)}, max_body_chars=BODY_MAX_CHARS
    )
    async for mcp in open_client(config):
        await _read_all(mcp, result, len(messages), page_size, formats_for, raw_for)
    result.flags_unchanged = flag_snapshot(dovecot, user) == before
    return result


async def _read_all(
    mcp: EnvelopeClient,
    result: MailboxRead,
    count: int,
    page_size: int,
    formats_for: Callable[[int], tuple[str, ...]],
    raw_for: Callable[[int], bool],
) -> None:
    arguments: dict[str, Any] = {"limit": page_size, "snippet_chars": 500}
    while True:
        page = await mcp.ok("imap_search_messages", arguments)
        result.pages += 1
        assert page["total"] == count
        result.issues += page.get("issues", [])
        for summary in page["messages"]:
            assert uid_of(summary) not in result.summaries, "a message was listed twice"
            result.summaries[uid_of(summary)] = summary
        if "next_cursor" not in page:
            break
        arguments = {"limit": page_size, "snippet_chars": 500, "cursor": page["next_cursor"]}
    for uid, summary in sorted(result.summaries.items()):
        for body_format in formats_for(uid):
            envelope = await mcp.call(
                "imap_get_message",
                {
                    "message_id": summary["message_id"],
                    "body_format": body_format,
                    "include_all_headers": True,
                    "body_max_chars": BODY_MAX_CHARS,
                    "fields": "full",
                },
            )
            if envelope["success"]:
                result.reads[uid, body_format] = envelope["data"]["message"]
            else:
                result.failures[uid, body_format] = envelope["error"]["code"]
        if raw_for(uid):
            envelope = await mcp.call("imap_get_message_raw", {"message_id": summary["message_id"]})
            if envelope["success"]:
                result.raw_windows[uid] = envelope["data"]
            else:
                result.failures[uid, "raw"] = envelope["error"]["code"]


def assert_only_empty_messages_failed(result: MailboxRead, messages: list[bytes]) -> None:
    """A 0-byte message reads as not_found: Dovecot answers FETCH for it exactly as for a message
    another session has just expunged (RFC822.SIZE 0, no content), which fetch.py reports as gone.
    Every other message must read successfully."""
    for (uid, what), code in result.failures.items():
        assert messages[uid - 1] == b"" and code == "not_found", (uid, what, code, messages[uid - 1][:300])


def assert_clean_summary(summary: dict[str, Any], *, context: str) -> None:
    for name in ("subject", "from", "to", "cc", "snippet"):
        value = summary.get(name)
        if value is not None:
            assert not _LINE_CONTROL.search(value), f"{context}: control character in {name}: {value[:200]!r}"
            assert len(value) <= 2001, f"{context}: {name} is {len(value)} characters long"


# ---------------------------------------------------------------------------------------------------
# The hand-written corpus and the giants
# ---------------------------------------------------------------------------------------------------


def _nested(depth: int) -> bytes:
    parts = [b"From: deep@example.com\r\nSubject: multipart nested %d deep\r\n" % depth]
    parts += [
        b'Content-Type: multipart/mixed; boundary="d%d"\r\n\r\n--d%d\r\n' % (i, i) for i in range(depth)
    ]
    parts.append(b"Content-Type: text/plain\r\n\r\ninnermost text\r\n")
    parts += [b"--d%d--\r\n" % i for i in reversed(range(depth))]
    return b"".join(parts)


def giant_messages() -> dict[str, bytes]:
    """Edge cases too large to keep as files."""
    many = [
        b"From: many@example.com\r\nSubject: 3000 parts\r\nContent-Type: multipart/mixed; boundary=m\r\n\r\n"
    ]
    many += [b"--m\r\nContent-Type: text/plain\r\n\r\npart %d\r\n" % i for i in range(3000)]
    many.append(b"--m--\r\n")
    return {
        "giant-nested-120": _nested(120),
        "giant-nested-1000": _nested(1000),
        "giant-3000-parts": b"".join(many),
        "giant-subject-300k": b"From: big@example.com\r\nSubject: "
        + b"A" * 300_000
        + b"\r\nContent-Type: text/plain\r\n\r\nbody after a huge subject\r\n",
        "giant-5000-recipients": b"From: big@example.com\r\nTo: "
        + b", ".join(b"r%d@example.com" % i for i in range(5000))
        + b"\r\nSubject: 5000 recipients\r\n\r\nbody\r\n",
        "giant-20000-headers": b"From: big@example.com\r\nSubject: 20000 header lines\r\n"
        + b"X-Spam: x\r\n" * 20_000
        + b"\r\nbody after many headers\r\n",
        "giant-2mb-html-line": b"From: big@example.com\r\nSubject: one 2 MB line\r\nContent-Type: text/html\r\n\r\n<p>"
        + b"word " * 400_000
        + b"</p>\r\n",
    }


def hand_written_corpus() -> dict[str, bytes]:
    files = sorted(DATA.glob("*.eml"))
    assert len(files) >= 45, "the hand-written corpus is missing"
    return {path.stem: path.read_bytes() for path in files}


def named_corpus() -> dict[str, bytes]:
    return {**hand_written_corpus(), **giant_messages()}


_CORPUS_READ: dict[str, Any] = {}


async def corpus_read(dovecot: Dovecot) -> tuple[list[str], MailboxRead]:
    """The hand-written corpus plus the giants, read once per session in every format (cached)."""
    if not _CORPUS_READ:
        named = named_corpus()
        names = list(named)
        result = await read_mailbox(
            dovecot,
            list(named.values()),
            page_size=7,  # several pages, so the cursor is exercised on hostile summaries too
            formats_for=lambda uid: FORMATS,
            raw_for=lambda uid: True,
        )
        _CORPUS_READ["value"] = (names, result)
    value: tuple[list[str], MailboxRead] = _CORPUS_READ["value"]
    return value


def by_name(names: list[str], result: MailboxRead, name: str, body_format: str = "text") -> dict[str, Any]:
    return result.reads[names.index(name) + 1, body_format]


@pytest.mark.slow
async def test_every_hand_written_and_giant_message_reads_as_a_clean_envelope_in_every_format(
    dovecot: Dovecot,
) -> None:
    names, result = await corpus_read(dovecot)
    assert sorted(result.summaries) == list(range(1, len(names) + 1)), "search must list every message once"
    assert result.pages >= len(names) // 7
    assert not result.issues, result.issues
    messages = [named_corpus()[name] for name in names]
    assert_only_empty_messages_failed(result, messages)
    assert len(result.failures) == 4  # empty-message.eml: three formats and the raw window
    for uid, summary in result.summaries.items():
        assert_clean_summary(summary, context=names[uid - 1])
        for body_format in FORMATS:
            if (uid, body_format) in result.reads:
                read = result.reads[uid, body_format]
                assert_clean_read(read, body_format, context=f"{names[uid - 1]}/{body_format}")
        if uid in result.raw_windows:
            window = result.raw_windows[uid]
            assert window["returned_bytes"] == min(window["total_size_bytes"], 16_384)
    assert result.flags_unchanged, "reading the corpus changed flags"


async def test_html_bodies_keep_no_script_event_handler_or_remote_resource(dovecot: Dovecot) -> None:
    names, result = await corpus_read(dovecot)
    html_files = [n for n in names if n.startswith("html-") or "utf7" in n]
    assert len(html_files) >= 9
    for name in html_files:
        message = by_name(names, result, name, "html")
        assert message["body_source"] == "text/html", name
        body = message["body_html"]
        assert_inert_html(body)
        needles = ["<script", "onerror", "onload", "javascript:", "vbscript:", "data:", "url("]
        if name != "html-link-spoofing":  # its https link to evil.example is an ordinary link
            needles.append("evil.example")
        for needle in needles:
            assert needle not in body.lower(), f"{name}: {needle!r} survived in {body[:400]!r}"
    remote = by_name(names, result, "html-remote-resources", "html")["body_html"]
    assert '<a href="https://example.com/keep" rel="noopener noreferrer nofollow">' in remote
    assert 'alt="tracking pixel alt"' in remote
    # A link whose text differs from its target shows the real target in text; javascript: shows nothing.
    spoofed = by_name(names, result, "html-link-spoofing")["body_text"]
    assert (
        spoofed
        == "Pay here: https://bank.example/pay (https://evil.example/pay)\n\nhttps://bank.example/safe"
    )
    scripts = by_name(names, result, "html-scripts", "markdown")["body_markdown"]
    assert "[safe link](https://example.com/ok)" in scripts
    assert not re.search(r"\]\((?!https?:|mailto:)", scripts), "a markdown link with an unsafe scheme"


async def test_text_hidden_from_the_reader_reaches_no_body_format_and_no_snippet(dovecot: Dovecot) -> None:
    names, result = await corpus_read(dovecot)
    summary = result.summaries[names.index("html-hidden-text") + 1]
    assert summary["snippet"] == "Visible text for the reader. Visible again."
    for body_format in FORMATS:
        body = by_name(names, result, "html-hidden-text", body_format)[f"body_{body_format}"]
        assert "Visible text for the reader." in body and "Visible again." in body
        assert HIDDEN not in body


BROWSER_SHOWN = [
    "Start of the message.",
    "Shown after bang comment.",
    "Shown after abrupt comment.",
    "Shown after dashed comment.",
    "Shown despite hidden.",
    "Shown visible child.",
    "Shown input value.",
    "Shown object fallback.",
    "Shown summary.",
    "End of the message.",
]


async def test_html_is_read_as_browsers_read_it_in_every_format_and_the_snippet(dovecot: Dovecot) -> None:
    """Regression (issue 25): comments that end early, an author display on [hidden], a visible child of
    a hidden parent, input values and object fallback were dropped; CSS comments and escapes in
    display, near-zero opacity and a closed <details> body were shown."""
    names, result = await corpus_read(dovecot)
    summary = result.summaries[names.index("html-browser-parsing") + 1]
    assert summary["snippet"] == (
        "Start of the message. Shown after bang comment. Shown after abrupt comment.Shown after dashed "
        "comment. Shown despite hidden. Shown visible child. Field: Shown input value. Shown object "
        "fallback. Shown summary. End of the message."
    )
    for body_format in FORMATS:
        body = by_name(names, result, "html-browser-parsing", body_format)[f"body_{body_format}"]
        for shown in BROWSER_SHOWN:
            assert shown in body, (body_format, shown, body)
        assert HIDDEN not in body, (body_format, body)


async def test_utf7_encoded_script_is_decoded_then_removed(dovecot: Dovecot) -> None:
    names, result = await corpus_read(dovecot)
    assert (
        by_name(names, result, "charset-utf7-html-script", "html")["body_html"]
        == "<p>visible utf-7 text</p><img>"
    )
    assert by_name(names, result, "charset-utf7-html-script")["body_text"] == "visible utf-7 text"


async def test_terminal_escape_sequences_never_reach_the_output(dovecot: Dovecot) -> None:
    """Regression: ESC/BEL (an OSC 8 hyperlink) in a Content-ID, and ESC[2J/BEL in a text body, came
    through BODYSTRUCTURE and the body decoder unchanged into content_id, body_text and the snippet."""
    names, result = await corpus_read(dovecot)
    message = by_name(names, result, "control-characters")
    (image,) = message["attachments"]
    assert image["content_id"] == "]8;;http://evil.examplelink]8;;"
    assert message["body_text"] == "body [2J with controls"
    assert message["from"] == "[31mRed[0m <ctl@example.com>"
    summary = result.summaries[names.index("control-characters") + 1]
    assert summary["snippet"] == "body [2J with controls"
    nul = by_name(names, result, "nul-bytes")
    assert all("\x00" not in json.dumps(v) for v in nul.values())


async def test_attachment_names_lose_paths_bidi_overrides_and_line_breaks(dovecot: Dovecot) -> None:
    """Regression: a U+202E RIGHT-TO-LEFT OVERRIDE in a file name ("invoice\\u202egpj.exe", shown as
    "invoiceexe.jpg") was passed through; it is now removed with the other bidi controls."""
    names, result = await corpus_read(dovecot)
    attachments = by_name(names, result, "filename-traversal")["attachments"]
    assert [a["filename"] for a in attachments] == [
        "passwd",
        "evil.dll",
        "invoicegpj.exe",
        None,
        "n" * 2000 + ".txt",
        "enc  oded.sh",
    ]
    assert [a["part_id"] for a in attachments] == ["2", "3", "4", "5", "6", "7"]


async def test_encoded_word_header_injection_yields_single_line_values(dovecot: Dovecot) -> None:
    names, result = await corpus_read(dovecot)
    message = by_name(names, result, "rfc2047-header-injection")
    assert message["subject"] == "line1  X-Injected: yesNUL[31mANSI"
    assert "X-Injected" not in message["headers"] and "Bcc" not in message["headers"]
    assert message["to"] == '"quoted" <fake@evil.example> <real@example.org>'


async def test_huge_header_line_is_bounded_in_search_results_and_reads(dovecot: Dovecot) -> None:
    """Regression: a 300 KB Subject came back whole in every summary (a page of such mail was 6 MB)."""
    names, result = await corpus_read(dovecot)
    uid = names.index("giant-subject-300k") + 1
    for message in (result.summaries[uid], result.reads[uid, "text"]):
        assert message["subject"] == "A" * 2000 + "…"
    assert result.reads[uid, "text"]["headers"]["Subject"] == "A" * 4000
    assert result.reads[uid, "text"]["body_text"] == "body after a huge subject\n"
    recipients = result.reads[names.index("giant-5000-recipients") + 1, "text"]["to"]
    assert recipients.endswith(" (+4980 more)") and len(recipients) < 2001


async def test_deep_nesting_and_thousands_of_parts_still_show_their_text(dovecot: Dovecot) -> None:
    names, result = await corpus_read(dovecot)
    assert by_name(names, result, "giant-nested-120")["body_text"] == "innermost text"
    assert by_name(names, result, "giant-3000-parts")["body_text"] == "part 0"
    # Dovecot stops descending at its nesting limit; the envelope is still valid, the body empty.
    assert by_name(names, result, "giant-nested-1000")["body_text"] == ""
    huge = by_name(names, result, "giant-2mb-html-line")
    assert huge["body_truncated"] is True and len(huge["body_text"]) <= BODY_MAX_CHARS


# ---------------------------------------------------------------------------------------------------
# Generated mail
# ---------------------------------------------------------------------------------------------------

CRLF = b"\r\n"
HEADER_NAMES = [
    b"From",
    b"To",
    b"Cc",
    b"Reply-To",
    b"Subject",
    b"Date",
    b"Message-ID",
    b"In-Reply-To",
    b"References",
    b"MIME-Version",
    b"Content-Type",
    b"Content-Transfer-Encoding",
    b"Content-Disposition",
    b"Content-ID",
    b"List-Unsubscribe",
    b"Received",
    b"SUBJECT",
    b"from",
    b"X-\xff\xfe",
    b"Bad Name",
    b" Folded-Start",
    b"Subj\x00ect",
    b"",
]
HEADER_FRAGMENTS = [
    b"=?utf-8?q?caf=C3=A9?=",
    b"=?utf-8?b?4pyTIOKckw==?=",
    b"=?iso-8859-1?q?=E4?=",
    b"=?x-unknown?q?abc?=",
    b"=?utf-8?z?bad?=",
    b"=?utf-8?q?unterminated",
    b"?=",
    b"=?",
    b"=?utf-8?b?!!!?=",
    b"=?utf-16?b?AAA?=",
    b"=?utf-7?q?+ADw-script+AD4-?=",
    b"=?utf-8?q?=0D=0AX-Injected:_1?=",
    b"=?utf-8?q?=00=1B[2J=07?=",
    b"=?utf-8?q?=E2=80=AEevil?=",
    b"\xe4\xf6\xfc",
    b"\xff\xfe",
    b"\x00",
    b"\x1b[31m",
    b"\x07",
    b"\r\n ",
    b"\r\n\t",
    b"\r\nX-Injected: yes",
    b"\n",
    b"\r",
    b'"',
    b"\\",
    b"<",
    b">",
    b"@",
    b",",
    b";",
    b":",
    b"(",
    b")",
    b"<a@example.com>",
    b'"Name, Q" <q@example.com>',
    b"undisclosed-recipients:;",
    b"group: a@b, c@d;",
    b"(comment (nested))",
    "日本語".encode(),
    "😀".encode(),
    "\u202e".encode(),
    "山田".encode("shift_jis"),
    b"Mon, 15 Jan 2024 10:00:00 +0000",
    b"Sun, 32 Foo 99999 25:61:00 +9999",
    b"text/html; charset=utf-8",
    b"multipart/mixed; boundary=",
    b"; name*=utf-8''%E6%8A%A5.pdf",
    b"; filename*0*=x'en'%ZZ; filename*2=gap",
    b'; filename="../../etc/passwd"',
    b"base64",
    b"quoted-printable",
]
LEAF_TYPES = [
    b"text/plain",
    b"text/plain",
    b"text/html",
    b"text/html",
    b"text/html",
    b"text/html",
    b"TEXT/HTML",
    b"text/enriched",
    b"application/octet-stream",
    b"application/pdf",
    b"image/png",
    b"message/rfc822",
    b"message/delivery-status",
    b"text",
    b"/",
    b"",
    b"text/plain/extra",
    b"text/\x1bhtml",
    b"multipart/mixed",
]
CHARSETS = [
    None,
    b"utf-8",
    b"UTF-8",
    b"us-ascii",
    b"iso-8859-1",
    b"windows-1252",
    b"utf-16",
    b"utf-16le",
    b"utf-7",
    b"iso-2022-jp",
    b"gb2312",
    b"shift_jis",
    b"koi8-r",
    b"x-unknown",
    b'""',
    b'"utf-8',
    b"rot13",
    b"hex",
    b"idna",
    b"unicode_escape",
    b"x" * 100,
]
ENCODINGS = [
    None,
    b"7bit",
    b"8bit",
    b"binary",
    b"base64",
    b"BASE64",
    b"quoted-printable",
    b"x-uuencode",
    b"bogus",
    b"",
]
BOUNDARIES = [
    b"b",
    b"b1",
    b"=_Part_0_123",
    b"x" * 100,
    b"with space",
    b"q'uote",
    b"a\x00b",
    "ü".encode(),
    b"--",
    b"",
]
HTML_FRAGMENTS = [
    "<p>",
    "</p>",
    "<b>",
    "</b>",
    "<br>",
    "<hr>",
    "<pre>",
    "</pre>",
    "<ul><li>",
    "<ol start=99999999999999999999><li>",
    "<blockquote>",
    "<h1>",
    "<table><tr><td colspan=1000000>",
    "</td></tr></table>",
    "<a href='https://example.com/x'>",
    "<a href=mailto:a@example.com>",
    "</a>",
    "<a href=\"javascript:alert('XSS')\">",
    "<A HREF=JAVASCRIPT:alert(1)>",
    "<a href=' jav&#x09;ascript:alert(1)'>",
    "<a href='&#x6a;avascript&colon;alert(1)'>",
    "<a href='data:text/html,<script>alert(1)</script>'>",
    "<a href='vbscript:x'>",
    '<a href="https://x.example" onclick="steal()">',
    "<img src='https://tracker.example/p.gif' alt='pixel'>",
    "<img src=x onerror=alert(1)>",
    "<img/src=x/onerror=alert(1)>",
    "<img srcset='https://e.example/a.png 1x' lowsrc=https://e.example/l.gif>",
    '<img src="data:image/png;base64,AAAA">',
    "<script>alert('XSS')</script>",
    "<script>",
    "</script>",
    "<scr<script>ipt>alert(1)</scr</script>ipt>",
    "<style>p{background:url(https://e.example/bg)}</style>",
    "<style>",
    "<iframe src='https://e.example'></iframe>",
    "<iframe srcdoc='<script>alert(1)</script>'>",
    "<svg onload=alert(1)><script>alert(1)</script></svg>",
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
    '<noscript><p title="</noscript><img src=x onerror=alert(1)>">',
    "<!--",
    "-->",
    "<![CDATA[",
    "]]>",
    "<base href='https://e.example/'>",
    "<link rel=stylesheet href='https://e.example/s.css'>",
    "<meta http-equiv=refresh content='0;url=https://e.example'>",
    "<form action='https://e.example'><input name=p><button formaction=https://e.example>go</button></form>",
    "<div style='background-image:url(https://e.example/i.png)'>",
    '<div style="x:expression(alert(1))" class=c id=i>',
    "</div>",
    "<table background='https://e.example/t.png'><tr><td background=https://e.example/d.png>",
    "<object data='https://e.example/o'></object>",
    "<embed src='https://e.example/e'>",
    "<video poster='https://e.example/p.png' src=https://e.example/v>",
    "<body onload=alert(1) background=https://e.example/b.png>",
    "<details open ontoggle=alert(1)>",
    "<marquee onstart=alert(1)>",
    "<svg><image href=https://e.example/i.png /><use xlink:href=https://e.example/u.svg#x /></svg>",
    "<xmp>",
    "<plaintext>",
    "<textarea>",
    "</textarea>",
    "<title>",
    "</title>",
    f"<p style='display:none'>{HIDDEN}</p>",
    f"<div hidden>{HIDDEN}</div>",
    f"<span style='visibility: hidden !important'>{HIDDEN}</span>",
    f"<div style='DISPLAY:NONE'><p>{HIDDEN} <b>nested</b></p></div>",
    f"<div style='opacity:0'>{HIDDEN}</div>",
    "&lt;script&gt;alert(1)&lt;/script&gt;",
    "&amp;",
    "&#0;",
    "&#x1b;[2J",
    "&#xD800;",
    "<",
    ">",
    '"',
    "'",
    "=",
    "\x00",
    "\x1b[2J",
    "\u202e",
    " onmouseover=alert(1) ",
]
PLAIN_FRAGMENTS = [
    "Hello",
    " ",
    "\n",
    "\r\n",
    "\r",
    "--b",
    "--b1--",
    "=?utf-8?q?x?=",
    "=",
    "=3D",
    "=ZZ",
    "\x00",
    "\x1b[2J",
    "\x07",
    "\x9b",
    "é",
    "日本",
    "😀",
    "\u202e",
    "From ",
    ".",
    "<p>not html</p>",
    "x" * 200,
]


def _encode_text(text: str, charset: bytes | None) -> bytes:
    label = (charset or b"utf-8").strip(b'"').decode("latin-1")
    try:
        return text.encode(label, "replace")
    except (LookupError, TypeError, ValueError, UnicodeError):
        return text.encode("utf-8", "surrogatepass")


def _transfer_encode(data: bytes, encoding: bytes | None) -> bytes:
    name = (encoding or b"").lower()
    if name == b"base64":
        return base64.encodebytes(data)
    if name == b"quoted-printable":
        return quopri.encodestring(data)
    return data


# Strategies are built once, here, not inside the composites on each draw: that cost most of the
# generation time (the draws, and so the messages, are the same).
_HTML_TEXT, _PLAIN_TEXT = (
    st.lists(st.one_of(st.sampled_from(fragments), st.text(max_size=12)), min_size=1, max_size=30).map(
        "".join
    )
    for fragments in (HTML_FRAGMENTS, PLAIN_FRAGMENTS)
)
_RAW_PAYLOAD = st.binary(max_size=120)
_ONE_IN_4 = st.integers(0, 3)
_ONE_IN_6 = st.integers(0, 5)
_LEAF_HEADER_EXTRA = st.sampled_from(HEADER_FRAGMENTS[-8:-2])
_DISPOSITIONS = st.sampled_from([b"attachment", b"inline", b"bogus", b""])


@st.composite
def mime_leaf(draw: st.DrawFn) -> bytes:
    content_type = draw(st.sampled_from(LEAF_TYPES))
    charset = draw(st.sampled_from(CHARSETS))
    encoding = draw(st.sampled_from(ENCODINGS))
    text = draw(_HTML_TEXT if b"html" in content_type.lower() else _PLAIN_TEXT)
    payload = draw(st.one_of(st.just(_encode_text(text, charset)), _RAW_PAYLOAD))
    if draw(_ONE_IN_4):  # mostly encoded as declared; sometimes not at all
        payload = _transfer_encode(payload, encoding)
    header = b"Content-Type: " + content_type
    if charset is not None:
        header += b"; charset=" + charset
    if draw(st.booleans()):
        header += draw(_LEAF_HEADER_EXTRA)
    lines = [header]
    if encoding is not None:
        lines.append(b"Content-Transfer-Encoding: " + encoding)
    if draw(_ONE_IN_4) == 0:
        lines.append(b"Content-Disposition: " + draw(_DISPOSITIONS))
    if draw(_ONE_IN_6) == 0:
        lines.append(b"Content-ID: <" + draw(st.sampled_from(HEADER_FRAGMENTS)) + b">")
    return CRLF.join(lines) + CRLF + CRLF + payload


_SUBTYPES = st.sampled_from([b"mixed", b"alternative", b"related", b"digest", b"signed", b""])
_MULTIPART_MODES = st.sampled_from(["ok", "ok", "ok", "no-close", "wrong", "no-param", "nested-same"])


def mime_multipart(children: st.SearchStrategy[bytes]) -> st.SearchStrategy[bytes]:
    some_children = st.lists(children, max_size=4)

    @st.composite
    def build(draw: st.DrawFn) -> bytes:
        parts = draw(some_children)
        boundary = draw(st.sampled_from(BOUNDARIES))
        subtype = draw(_SUBTYPES)
        mode = draw(_MULTIPART_MODES)
        header = b"Content-Type: multipart/" + subtype
        if mode != "no-param":
            header += b'; boundary="' + boundary + b'"'
        used = b"other" if mode == "wrong" else boundary
        body = [draw(st.sampled_from([b"", b"preamble\r\n", b"--" + used + b"-not\r\n"]))]
        for part in parts:
            body.append(b"--" + used + CRLF + part + CRLF)
        if mode != "no-close":
            body.append(b"--" + used + b"--" + CRLF)
        body.append(draw(st.sampled_from([b"", b"epilogue\r\n", b"--" + used + b"\r\n"])))
        return header + CRLF + CRLF + b"".join(body)

    return build()


mime_entity = st.recursive(mime_leaf(), mime_multipart, max_leaves=6)


_HEADER_VALUE = st.lists(
    st.one_of(st.sampled_from(HEADER_FRAGMENTS), st.binary(max_size=10)), max_size=8
).map(b"".join)
_HEADER_COUNT = st.integers(0, 8)
_LONG_HEADER = st.sampled_from([0] * 18 + [5_000, 120_000])
_DEPTH = st.sampled_from([0] * 20 + [1, 2, 70, 130])
_LINE_ENDINGS = st.sampled_from(["crlf"] * 8 + ["lf", "cr", "mixed"])
_ONE_IN_10 = st.integers(0, 9)


@st.composite
def hostile_messages(draw: st.DrawFn) -> bytes:
    """One hostile message: random top-level headers, a random MIME tree, then damage."""
    headers = [
        draw(st.sampled_from(HEADER_NAMES)) + b": " + draw(_HEADER_VALUE) for _ in range(draw(_HEADER_COUNT))
    ]
    long_header = draw(_LONG_HEADER)
    if long_header:
        headers.append(b"X-Long: " + b"A" * long_header)
    entity = draw(mime_entity)
    depth = draw(_DEPTH)
    for level in range(depth):
        boundary = b"n%d" % level
        entity = (
            (
                b"Content-Type: multipart/mixed; boundary="
                + boundary
                + CRLF
                + CRLF
                + b"--"
                + boundary
                + CRLF
                + entity
            )
            + CRLF
            + b"--"
            + boundary
            + b"--"
            + CRLF
        )
    message = b"".join(h + CRLF for h in headers) + entity
    endings = draw(_LINE_ENDINGS)
    if endings == "lf":
        message = message.replace(CRLF, b"\n")
    elif endings == "cr":
        message = message.replace(CRLF, b"\r")
    elif endings == "mixed":
        message = message.replace(CRLF, b"\n", draw(st.integers(0, 20)))
    if draw(_ONE_IN_10) == 0:  # cut short (in its second half: empty mail is a corpus file)
        message = message[: len(message) // 2 + draw(st.integers(0, len(message) - len(message) // 2))]
    return message


def check_pure_functions(message: bytes) -> None:
    """The parsing layer on its own: never raises, returns clean text."""
    parsed = parse_full_message(message)
    for name, values in parsed.headers.items():
        assert name == name.lower() and not _LINE_CONTROL.search(name)
        for value in values:
            assert not _LINE_CONTROL.search(value), (name, value[:200])
    for text in (parsed.text, parsed.html):
        assert text is None or not _BODY_CONTROL.search(text)
    for part in parsed.attachments:
        assert _SECTION.match(part.section) and part.size_bytes >= 0
        assert part.filename is None or not _FILENAME_BAD.search(part.filename)
    if parsed.html is not None:
        assert_inert_html(sanitize_html(parsed.html))
        assert not _BODY_CONTROL.search(html_to_text(parsed.html))
        markdown = html_to_markdown(parsed.html)
        assert HIDDEN not in markdown and HIDDEN not in html_to_text(parsed.html)


@functools.cache
def generate_messages(count: int) -> list[bytes]:
    """About ``count`` distinct hostile messages drawn by Hypothesis, each checked against the pure
    functions first (a failure there is shrunk and reported by Hypothesis). Derandomized, so the same
    messages every run (and computed once per process)."""
    drawn: dict[bytes, None] = {}

    @settings(HYPOTHESIS, max_examples=count + count // 5)  # different draws can give the same bytes
    @given(hostile_messages())
    def draw_one(message: bytes) -> None:
        check_pure_functions(message)
        drawn[message] = None

    draw_one()
    return list(drawn)[:count]


#: The families of damage ``hostile_messages`` draws, each recognised in the bytes it produced.
FAMILIES: dict[str, Callable[[bytes], bool]] = {
    "multipart": lambda m: b"multipart/" in m.lower(),
    "html": lambda m: b"html" in m.lower(),
    "nested 70 or 130 deep": lambda m: b"boundary=n69" in m,
    "header line of 5 KB or more": lambda m: b"X-Long: " + b"A" * 5_000 in m,
    "boundary that does not match": lambda m: b"--other" in m,
    "NUL bytes": lambda m: b"\x00" in m,
    "8-bit bytes": lambda m: any(byte > 0x7F for byte in m),
    "RFC 2047 words": lambda m: b"=?" in m,
    "bare LF line ends": lambda m: b"\n" in m and b"\r" not in m,
    "bare CR line ends": lambda m: b"\r" in m and b"\n" not in m,
    "base64 and quoted-printable parts": lambda m: (
        b"base64" in m.lower() and b"quoted-printable" in m.lower()
    ),
}


@pytest.mark.slow
def test_generated_messages_cover_every_family_of_damage() -> None:
    messages = generate_messages(GENERATED_MESSAGES)
    missing = [name for name, found in FAMILIES.items() if not any(found(m) for m in messages)]
    assert missing == [], f"{GENERATED_MESSAGES} generated messages lack: {missing}"


@pytest.mark.slow
async def test_generated_messages_read_as_clean_envelopes_through_the_server(dovecot: Dovecot) -> None:
    messages = generate_messages(GENERATED_MESSAGES)
    assert len(messages) >= GENERATED_MESSAGES * 0.9
    result = await read_mailbox(
        dovecot,
        messages,
        page_size=100,
        # One format per message in rotation, all three for every 25th; the raw tool on every 10th.
        formats_for=lambda uid: FORMATS if uid % 25 == 0 else (FORMATS[uid % 3],),
        raw_for=lambda uid: uid % 10 == 0,
    )
    assert sorted(result.summaries) == list(range(1, len(messages) + 1)), (
        "search must list every message once"
    )
    assert_only_empty_messages_failed(result, messages)
    for uid, summary in result.summaries.items():
        assert_clean_summary(summary, context=f"generated #{uid}: {messages[uid - 1][:300]!r}")
    for (uid, body_format), message in result.reads.items():
        assert_clean_read(message, body_format, context=f"generated #{uid}: {messages[uid - 1][:300]!r}")
    assert result.flags_unchanged, "reading generated mail changed flags"


# ---------------------------------------------------------------------------------------------------
# The pure functions, directly
# ---------------------------------------------------------------------------------------------------


def _quoted(data: bytes) -> bytes:
    return (
        b'"'
        + data.replace(b"\\", b"\\\\").replace(b'"', b'\\"').replace(b"\r", b"").replace(b"\n", b"")
        + b'"'
    )


BODYSTRUCTURE_WORDS = [
    b"TEXT",
    b"PLAIN",
    b"HTML",
    b"APPLICATION",
    b"OCTET-STREAM",
    b"MESSAGE",
    b"RFC822",
    b"MIXED",
    b"ALTERNATIVE",
    b"BASE64",
    b"7BIT",
    b"CHARSET",
    b"utf-8",
    b"x-bogus",
    b"NAME",
    b"FILENAME",
    b"filename*",
    b"boundary",
    b"attachment",
    b"inline",
    b"bogus",
    b"=?utf-8?q?a=2F..=5Cb?=",
    b"<cid\x1b]8;;x\x07>",
    b"\xe4\xf6",
    b"../../etc/passwd",
    "a\u202eb".encode(),
    b"",
]
_STRING_ATOMS = st.one_of(
    st.just(b"NIL"),
    st.sampled_from(BODYSTRUCTURE_WORDS).map(_quoted),
    st.binary(max_size=16).map(_quoted),
)
_NUMBERS = st.one_of(st.integers(0, 2**40), st.sampled_from([-1, 2**64])).map(lambda n: str(n).encode())
_SCALARS = st.one_of(_STRING_ATOMS, _NUMBERS)
#: A random value where a field belongs: a scalar or a shallow list (deeper garbage adds nothing here).
_NODE = st.one_of(
    _SCALARS,
    st.lists(
        st.one_of(_SCALARS, st.lists(_SCALARS, max_size=3).map(lambda xs: b"(" + b" ".join(xs) + b")")),
        max_size=4,
    ).map(lambda items: b"(" + b" ".join(items) + b")"),
)


def _usually(valid: st.SearchStrategy[bytes]) -> st.SearchStrategy[bytes]:
    """A field's value: valid three times in four, else any node."""
    return st.one_of(valid, valid, valid, _NODE)


_PARAMS = st.lists(_STRING_ATOMS, max_size=6).map(lambda xs: b"(" + b" ".join(xs) + b")")
_DISPOSITION = st.tuples(_STRING_ATOMS, st.one_of(st.just(b"NIL"), _PARAMS)).map(
    lambda t: b"(" + b" ".join(t) + b")"
)
# Built once, not in the composite on each draw (which cost most of this property's time): type,
# subtype, parameters, id, description, encoding, then the size.
_LEAF_FIELDS = [_usually(_STRING_ATOMS)] * 2 + [_usually(_PARAMS)] + [_usually(_STRING_ATOMS)] * 3
_LEAF_FIELDS.append(_usually(_NUMBERS))
_LEAF_EXTENSION = st.one_of(_NUMBERS, _STRING_ATOMS, _DISPOSITION, _NODE)
_EXTENSION_COUNT = st.integers(0, 6)


@st.composite
def _leaf_structure(draw: st.DrawFn) -> bytes:
    fields = [draw(strategy) for strategy in _LEAF_FIELDS]
    fields += [draw(_LEAF_EXTENSION) for _ in range(draw(_EXTENSION_COUNT))]
    return b"(" + b" ".join(fields) + b")"


def _multipart_structure(children: st.SearchStrategy[bytes]) -> st.SearchStrategy[bytes]:
    return st.tuples(st.lists(children, min_size=1, max_size=4), st.lists(_NODE, max_size=4)).map(
        lambda t: b"(" + b"".join(t[0]) + b" " + b" ".join(t[1]) + b")"
    )


BODYSTRUCTURES = st.recursive(_leaf_structure(), _multipart_structure, max_leaves=4)


def _clean_parts(parts: list[Part]) -> None:
    for part in parts:
        assert _SECTION.match(part.section), part
        assert part.size_bytes >= 0
        assert not re.search(r"[\s\x00-\x1f\x7f-\x9f]", part.content_type), part
        assert part.content_id is None or not _LINE_CONTROL.search(part.content_id), part
        assert part.filename is None or not _FILENAME_BAD.search(part.filename), part


@pytest.mark.slow
@settings(HYPOTHESIS, max_examples=BODYSTRUCTURE_EXAMPLES)
@given(BODYSTRUCTURES, st.binary(max_size=400), st.sampled_from([None, "b", "b1", "=_x"]))
def test_any_bodystructure_parses_into_clean_parts_or_value_error(
    structure: bytes, prefix: bytes, boundary: str | None
) -> None:
    try:
        response = parse_fetch_response([b"1 (UID 1 BODYSTRUCTURE " + structure + b")"])
    except (ProtocolError, ValueError, TypeError, IndexError):
        # imapclient refuses it (its BodyData.create raises TypeError/IndexError on some shapes
        # such as "(() NIL ...)"); servers generate BODYSTRUCTURE themselves, so this is server syntax.
        assume(False)
        return
    bodystructure = response[1][b"BODYSTRUCTURE"]
    try:
        parts = parse_bodystructure(bodystructure)
    except ValueError:
        parts = []
    _clean_parts(parts)
    sniffed = top_level_boundary(bodystructure)
    assert sniffed is None or isinstance(sniffed, str)
    snippet = snippet_from_prefix(
        b"--" + (boundary or "b").encode() + b"\r\n" + prefix, parts, boundary=boundary
    )
    assert snippet is None or not _LINE_CONTROL.search(snippet.replace(" ", ""))


HOSTILE_HTML = st.lists(st.one_of(st.sampled_from(HTML_FRAGMENTS), st.text(max_size=10)), max_size=40).map(
    "".join
)


@pytest.mark.slow
@settings(HYPOTHESIS, max_examples=PURE_EXAMPLES)
@given(HOSTILE_HTML)
def test_sanitized_html_never_keeps_script_event_handler_or_remote_resource(html: str) -> None:
    assert_inert_html(sanitize_html(html))
    for converted in (html_to_text(html), html_to_markdown(html)):
        assert HIDDEN not in converted or shown_by_html5(html)
        assert "\x00" not in converted


#: A bogus comment left open (``<!x``, ``<![CDATA[``, ``<?``, ``</`` before no letter): HTML5 ends it at the
#: next ``>``, whatever quotes come before it.
_OPEN_BOGUS_COMMENT = re.compile(r"<(?:!(?!--)|\?|/(?![A-Za-z>]))[^>]*\Z")


def shown_by_html5(html: str) -> bool:
    """Whether a hiding fragment's start tag is swallowed by a bogus comment opened just before it, so
    that a browser shows its text as every reader sees it (``<![CDATA[<p style='display:none'>X</p>``:
    outside SVG and MathML, HTML5 reads ``<![CDATA[`` as a bogus comment that ends inside the tag)."""
    starts = [m.start() for m in re.finditer(r"<(?:p|div|span) (?:style|hidden)", html)]
    return any(_OPEN_BOGUS_COMMENT.search(html[:start]) for start in starts)
