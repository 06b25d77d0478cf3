"""Deterministic, realistic RFC 5322 test messages.

Everything here returns message ``bytes`` with CRLF line endings, ready for IMAP APPEND or
``Dovecot.seed()``. Output depends only on the arguments (and ``seed``), never on the clock or on global
random state, so tests can rebuild the exact bytes they seeded.

* ``make_message(i)`` / ``corpus(n, seed)`` -- a varied mailbox: senders from a pool (several with
  non-ASCII display names), ASCII and RFC 2047-encoded subjects, ``Date`` headers spread over two years,
  threads (``Re:`` with ``In-Reply-To``/``References``), plain text (7bit, quoted-printable, base64),
  multipart/alternative with HTML, HTML-only, and small PDF/PNG attachments (some with RFC 2231 non-ASCII
  filenames). The first body line is a distinctive ASCII sentence containing ``ref <NNNNNN>``.
  ``corpus`` is fast (about 100,000 messages per second or two): MIME skeletons are rendered once with
  the ``email`` package and only the per-message fields are spliced in.
* Special builders: ``plain_message``, ``non_ascii_message``, ``html_only_message``,
  ``large_attachment_message`` and ``malformed_message`` (see ``MALFORMED_KINDS``).
* ``crlf(msg)``: an ``EmailMessage`` as bytes with CRLF line ends; ``inner_message()``: a message to forward.
* ``describe(i, seed)`` returns the facts (``MessageFacts``) of corpus message ``i`` for assertions.
"""

from __future__ import annotations

import base64
import datetime as dt
import functools
import hashlib
import html
import random
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from email import policy
from email.message import EmailMessage
from email.utils import format_datetime

__all__ = [
    "DATE_END",
    "DATE_START",
    "MALFORMED_KINDS",
    "RECIPIENT",
    "SENDERS",
    "MessageFacts",
    "corpus",
    "describe",
    "html_only_message",
    "large_attachment_message",
    "make_message",
    "malformed_message",
    "message_id",
    "non_ascii_message",
    "plain_message",
]

_POLICY = policy.SMTP  # CRLF line endings, RFC 2047/2231 encoding of non-ASCII

#: Dates of generated messages fall in [DATE_START, DATE_END).
DATE_START = dt.datetime(2023, 1, 2, 8, 0, tzinfo=dt.UTC)
DATE_END = dt.datetime(2025, 1, 1, 0, 0, tzinfo=dt.UTC)
_SPAN_SECONDS = (DATE_END - DATE_START).total_seconds()

#: The mailbox owner; every generated message is addressed to it.
RECIPIENT = ("Test User", "user@example.org")

#: (display name, address) pool for From; "" means a bare address.
SENDERS: tuple[tuple[str, str], ...] = (
    ("Alice Johnson", "alice.johnson@example.com"),
    ("Bob Smith", "bob@example.net"),
    ("Jürgen Müller", "juergen.mueller@example.de"),
    ("李雷", "li.lei@example.cn"),
    ("Zoë Saldaña", "zoe@example.com"),
    ("François Dupont", "f.dupont@example.fr"),
    ("Søren Østergaard", "soren@example.dk"),
    ("Иван Петров", "ivan.petrov@example.ru"),
    ("山田太郎", "taro.yamada@example.jp"),
    ("José García", "jose.garcia@example.es"),
    ("Ayşe Yılmaz", "ayse@example.com.tr"),
    ("O'Brien, Pat", "pat.obrien@example.ie"),
    ("GitHub", "notifications@github.example"),
    ("", "noreply@billing.example.com"),
    ("Acme Corp | Newsletter", "news@acme.example"),
    ("Carol Nguyen", "carol.nguyen@example.org"),
    ("Dmitri Volkov", "dvolkov@example.com"),
    ("Priya Raman", "priya@example.in"),
    ("Chloé Martin", "chloe.martin@example.fr"),
    ("韩梅梅", "han.meimei@example.cn"),
    ("Emma Wilson", "emma.w@example.co.uk"),
    ("IT Helpdesk", "helpdesk@corp.example"),
    ("Lars Ångström", "lars@example.se"),
    ("Mia Schröder", "mia.schroeder@example.at"),
)

# Subject bases; the per-message reference number is appended in ASCII ("..., Punkt 004711").
_SUBJECTS: tuple[str, ...] = (
    "Quarterly report",
    "Meeting notes",
    "Invoice",
    "Your order has shipped, order",
    "Project kickoff agenda, item",
    "Server maintenance window, change",
    "Lunch on Friday? Poll",
    "[acme/widgets] Pull request",
    "Weekly digest, issue",
    "Password reset request, ticket",
    "Besprechung nächste Woche, Punkt",
    "Rechnung für März, Nr.",
    "Grüße aus München, Teil",
    "Compte rendu de la réunion, n°",
    "Réservation confirmée, dossier",
    "关于下周会议的安排 编号",
    "季度报告 第",
    "Отчёт за квартал, номер",
    "お見積もりのご依頼 番号",
    "Café ☕ und Kuchen 🍰, Runde",
    "Zoë's birthday 🎉 plan",
    "Budget draft v2, rev",
    "Travel itinerary, booking",
    "Security alert for your account, case",
)
_SUBJECT_PREFIXES = ("", "", "", "Re: ", "Re: ", "Fwd: ", "AW: ", "WG: ")

_OPENERS = (
    "Quick update on",
    "Following up on",
    "Please review",
    "A reminder about",
    "Notes from",
    "Some thoughts on",
    "A question about",
    "Heads-up regarding",
    "Good news about",
    "Status of",
)
_ADJECTIVES = (
    "amber",
    "brisk",
    "cobalt",
    "dusty",
    "electric",
    "frosty",
    "granite",
    "hollow",
    "ivory",
    "jade",
    "lunar",
    "misty",
    "northern",
    "quiet",
    "rusty",
    "silent",
    "velvet",
    "wandering",
)
_NOUNS = (
    "harbour project",
    "budget draft",
    "onboarding plan",
    "lighthouse",
    "database migration",
    "quarterly review",
    "garden party",
    "release checklist",
    "vendor contract",
    "hiring pipeline",
    "office move",
    "API redesign",
    "marketing campaign",
    "support backlog",
)

# Body continuation paragraphs; the first line (ASCII sentence) always precedes these.
_PARAGRAPHS: dict[str, str] = {
    "en": (
        "I went through the numbers again this morning and everything lines up with what we\n"
        "discussed last week. The only open point is the timeline for the second phase; could\n"
        "you confirm whether the end of the month still works for your team?\n\n"
        "Let me know if anything is unclear.\n"
    ),
    "de": (
        "ich habe mir die Unterlagen noch einmal angesehen. Die Änderungen für das Büro in Köln\n"
        "sind eingearbeitet, nur die Größe der Räume müssen wir noch prüfen. Schöne Grüße an\n"
        "das ganze Team und bis nächste Woche!\n"
    ),
    "fr": (
        "Voici le résumé de la réunion de jeudi : le budget est validé, le calendrier reste à\n"
        "préciser. Merci de me répondre avant vendredi, et n'hésitez pas si vous avez des\n"
        "questions. À bientôt !\n"
    ),
    "zh": "附件是本季度的报告，请在周五之前审阅并回复意见。\n如果有任何问题，请随时与我联系。谢谢！\n",
    "ja": "お世話になっております。先日の件について、資料を添付いたしますのでご確認ください。\nよろしくお願いいたします。\n",
    "ru": "Добрый день! Отправляю обновлённый отчёт за квартал. Пожалуйста, посмотрите\nцифры в разделе «Итоги» и дайте знать, если что-то не сходится.\n",
    "emoji": "Thanks again for the great work 🎉🚀 -- see you at the offsite ☀️.\nCheers!\n",
}
_LANGS = tuple(_PARAGRAPHS)

_SIGNATURES = ("--\r\nSent from my phone\r\n", "-- \r\nBest regards\r\n", "")

# Tokens spliced into pre-rendered skeletons. Letters only, so 7bit and quoted-printable keep them intact.
_TOKEN_RE = re.compile(rb"QZX([A-Z0-9]+)QZX")
_LINE1 = "QZXLINE1QZX"
_BOUNDARY = "QZXBNDQZX"
_B64 = "QZXB64QZX"


def _pdf_bytes(label: str, size: int = 1800) -> bytes:
    """Deterministic PDF-looking bytes (valid header/trailer, binary filler)."""
    head = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n"
    filler = hashlib.shake_256(label.encode()).digest(max(0, size - len(head) - 40))
    return head + b"stream\n" + filler + b"\nendstream\n%%EOF\n"


# 1x1 transparent PNG
_PNG_BYTES = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
_ATTACHMENT_NAMES = (
    "invoice.pdf",
    "Rechnung_März_2024.pdf",
    "报告.pdf",
    "résumé final (v2).pdf",
    "Q3 report.pdf",
    "Отчёт.pdf",
)

# kind -> weight
_KINDS: tuple[tuple[str, int], ...] = (
    ("plain", 30),
    ("plain-qp", 15),
    ("plain-b64", 5),
    ("alternative", 25),
    ("alternative-attachment", 7),
    ("plain-attachment", 10),
    ("plain-image", 3),
    ("html-only", 5),
)
_KIND_NAMES = tuple(k for k, _ in _KINDS)
_KIND_WEIGHTS = tuple(w for _, w in _KINDS)
_CUM_WEIGHTS = tuple(sum(_KIND_WEIGHTS[: i + 1]) for i in range(len(_KIND_WEIGHTS)))
_TZ_OFFSETS = (0, 0, 60, 60, 120, -300, -480, 480, 330, 540, -240)


@dataclass(frozen=True)
class MessageFacts:
    """What ``make_message`` put into a message (for test assertions)."""

    index: int
    from_name: str
    from_addr: str
    subject: str
    date: dt.datetime
    message_id: str
    first_line: str
    kind: str
    lang: str
    attachment: str | None
    in_reply_to: str | None


def message_id(i: int, seed: int = 0) -> str:
    """Message-ID (with angle brackets) of corpus message ``i``."""
    token = hashlib.blake2b(f"{seed}:{i}".encode(), digest_size=6).hexdigest()
    return f"<{token}.{i}@mailgen.example>"


def _ref(i: int) -> str:
    return f"{i:06d}"


@functools.cache
def _fold(name: str, value: str) -> bytes:
    """One header, RFC 2047-encoded and folded by the email package (cached: folding is slow)."""
    folded: str = _POLICY.header_factory(name, value).fold(policy=_POLICY)
    return folded.encode("ascii")


@functools.cache
def _address(name: str, addr: str) -> str:
    if not name:
        return addr
    if any(c in name for c in ',.;:"()<>[]@\\|'):
        escaped = name.replace("\\", "\\\\").replace('"', '\\"')
        return f'"{escaped}" <{addr}>'
    return f"{name} <{addr}>"


def _pick_kind(rng: random.Random) -> str:
    x = rng.random() * _CUM_WEIGHTS[-1]
    for name, cum in zip(_KIND_NAMES, _CUM_WEIGHTS, strict=True):
        if x < cum:
            return name
    return _KIND_NAMES[-1]


def _html_body(lang: str) -> str:
    paragraphs = "".join(
        f"<p>{html.escape(p).replace(chr(10), '<br>' + chr(10))}</p>\n"
        for p in _PARAGRAPHS[lang].split("\n\n")
    )
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">\n'
        "<style>body { font-family: Arial, sans-serif; } .muted { color: #888; }</style>\n"
        "</head><body>\n"
        f"<p>{_LINE1}</p>\n"
        f"{paragraphs}"
        '<p class="muted">View this in your <a href="https://www.example.com/view?id=1">browser</a>.'
        "</p>\n"
        '<img src="https://tracker.example.com/open.gif" width="1" height="1" alt="">\n'
        "</body></html>\n"
    )


def _text_part(msg: EmailMessage, lang: str, cte: str, subtype: str = "plain") -> None:
    if subtype == "html":
        msg.set_content(_html_body(lang), subtype="html", cte=cte)
    elif cte == "base64":
        # Encoded per message (the first line changes); the skeleton carries a token.
        msg.set_content(_B64, cte="7bit")
        msg.replace_header("Content-Transfer-Encoding", "base64")
    else:
        msg.set_content(f"{_LINE1}\n\n{_PARAGRAPHS[lang]}", cte=cte)


@dataclass(frozen=True)
class _Skeleton:
    segments: tuple[bytes | str, ...]  # bytes literals and token names
    b64_rest: bytes  # body text following the first line (for base64 parts)


@functools.cache
def _skeleton(kind: str, lang: str, attachment: str | None) -> _Skeleton:
    """Render the MIME structure for (kind, lang, attachment) once, with tokens for per-message parts."""
    ascii_only = _PARAGRAPHS[lang].isascii()
    cte = "7bit" if ascii_only else "quoted-printable"
    msg = EmailMessage()
    if kind == "plain":
        _text_part(msg, lang, "7bit")
    elif kind == "plain-qp":
        _text_part(msg, lang, "quoted-printable")
    elif kind == "plain-b64":
        _text_part(msg, lang, "base64")
    elif kind == "html-only":
        _text_part(msg, lang, cte, "html")
    elif kind in ("alternative", "alternative-attachment"):
        _text_part(msg, lang, cte)
        msg.add_alternative(_html_body(lang), subtype="html", cte=cte)
        if kind == "alternative-attachment":
            msg.add_attachment(
                _pdf_bytes(attachment or ""), maintype="application", subtype="pdf", filename=attachment
            )
    elif kind == "plain-attachment":
        _text_part(msg, lang, cte)
        msg.add_attachment(
            _pdf_bytes(attachment or ""), maintype="application", subtype="pdf", filename=attachment
        )
    elif kind == "plain-image":
        _text_part(msg, lang, cte)
        msg.add_attachment(_PNG_BYTES, maintype="image", subtype="png", filename="pixel.png")
    else:  # pragma: no cover - internal table
        raise ValueError(kind)
    for depth, part in enumerate(p for p in msg.walk() if p.is_multipart()):
        part.set_boundary(f"----=_Part_{_BOUNDARY}_{depth}")
    rendered = msg.as_bytes(policy=_POLICY)
    segments: list[bytes | str] = []
    pos = 0
    for match in _TOKEN_RE.finditer(rendered):
        segments.append(rendered[pos : match.start()])
        segments.append(match.group(1).decode())
        pos = match.end()
    segments.append(rendered[pos:])
    rest = f"\n{_PARAGRAPHS[lang]}".replace("\n", "\r\n").encode()
    return _Skeleton(tuple(segments), rest)


def _facts(i: int, rng: random.Random, seed: int, date: dt.datetime | None) -> MessageFacts:
    name, addr = SENDERS[rng.randrange(len(SENDERS))]
    prefix = _SUBJECT_PREFIXES[rng.randrange(len(_SUBJECT_PREFIXES))]
    base = _SUBJECTS[rng.randrange(len(_SUBJECTS))]
    kind = _pick_kind(rng)
    lang = _LANGS[rng.randrange(len(_LANGS))] if rng.random() < 0.45 else "en"
    if kind == "plain" and not _PARAGRAPHS[lang].isascii():
        lang = "en"  # "plain" is the 7bit kind
    attachment = None
    if kind in ("alternative-attachment", "plain-attachment"):
        attachment = _ATTACHMENT_NAMES[rng.randrange(len(_ATTACHMENT_NAMES))]
    if date is None:
        date = DATE_START + dt.timedelta(seconds=rng.random() * _SPAN_SECONDS)
    offset = _TZ_OFFSETS[rng.randrange(len(_TZ_OFFSETS))]
    date = date.astimezone(dt.timezone(dt.timedelta(minutes=offset))).replace(microsecond=0)
    first = (
        f"{_OPENERS[rng.randrange(len(_OPENERS))]} the {_ADJECTIVES[rng.randrange(len(_ADJECTIVES))]} "
        f"{_NOUNS[rng.randrange(len(_NOUNS))]}, ref {_ref(i)}."
    )
    in_reply_to = None
    if prefix.startswith(("Re", "AW")) and i > 0:
        in_reply_to = message_id(max(0, i - 1 - rng.randrange(5)), seed)
    return MessageFacts(
        index=i,
        from_name=name,
        from_addr=addr,
        subject=f"{prefix}{base} {_ref(i)}",
        date=date,
        message_id=message_id(i, seed),
        first_line=first,
        kind=kind,
        lang=lang,
        attachment=attachment,
        in_reply_to=in_reply_to,
    )


def _render(facts: MessageFacts, seed: int) -> bytes:
    subject_base = facts.subject[: -len(_ref(facts.index)) - 1]
    subject = _fold("Subject", subject_base)[:-2] + f" {_ref(facts.index)}\r\n".encode()
    head = [
        _fold("From", _address(facts.from_name, facts.from_addr)),
        _fold("To", _address(*RECIPIENT)),
        subject,
        f"Date: {format_datetime(facts.date)}\r\nMessage-ID: {facts.message_id}\r\n".encode(),
    ]
    if facts.in_reply_to:
        head.append(f"In-Reply-To: {facts.in_reply_to}\r\nReferences: {facts.in_reply_to}\r\n".encode())
    skeleton = _skeleton(facts.kind, facts.lang, facts.attachment)
    line1 = facts.first_line.encode()
    boundary = f"{seed:x}{facts.index:x}".encode()
    out = head
    for segment in skeleton.segments:
        if isinstance(segment, bytes):
            out.append(segment)
        elif segment == "LINE1":
            out.append(line1)
        elif segment == "BND":
            out.append(boundary)
        else:  # B64
            out.append(base64.encodebytes(line1 + b"\r\n" + skeleton.b64_rest).replace(b"\n", b"\r\n")[:-2])
    return b"".join(out)


def describe(i: int, *, seed: int = 0, n: int | None = None) -> MessageFacts:
    """Facts of ``make_message(i, seed=seed)`` (or of ``corpus(n, seed)``'s i-th message if ``n``)."""
    if n is None:
        return _facts(i, random.Random(f"{seed}:{i}"), seed, None)
    for facts in _corpus_facts(n, seed):
        if facts.index == i:
            return facts
    raise IndexError(i)


def make_message(
    i: int, *, rng: random.Random | None = None, seed: int = 0, date: dt.datetime | None = None
) -> bytes:
    """Realistic message number ``i`` (deterministic for a given ``i``/``seed``, or drawn from ``rng``).

    ``date`` fixes the Date header instant (otherwise random within ``DATE_START``..``DATE_END``).
    """
    if rng is None:
        rng = random.Random(f"{seed}:{i}")
    return _render(_facts(i, rng, seed, date), seed)


def _corpus_facts(n: int, seed: int) -> Iterator[MessageFacts]:
    rng = random.Random(seed)
    step = _SPAN_SECONDS / max(n, 1)
    for i in range(n):
        # Chronological like a real mailbox (with some jitter), spread over the whole span.
        when = DATE_START + dt.timedelta(seconds=(i + rng.random() * 0.9) * step)
        yield _facts(i, rng, seed, when)


def corpus(n: int, seed: int = 0) -> Iterator[bytes]:
    """``n`` varied messages in date order (deterministic per ``seed``); ~100k take a second or two."""
    for facts in _corpus_facts(n, seed):
        yield _render(facts, seed)


# ---------------------------------------------------------------------- single-purpose builders

_DEFAULT_DATE = dt.datetime(2024, 3, 14, 9, 26, 53, tzinfo=dt.timezone(dt.timedelta(hours=1)))


def _base_message(
    subject: str,
    *,
    from_: str,
    to: str,
    date: dt.datetime | str | None,
    message_id: str | None,
    headers: Mapping[str, str] | None = None,
) -> EmailMessage:
    msg = EmailMessage(policy=_POLICY)
    msg["From"] = from_
    msg["To"] = to
    msg["Subject"] = subject
    when = _DEFAULT_DATE if date is None else date
    msg["Date"] = when if isinstance(when, str) else format_datetime(when)
    if message_id is None:
        digest = hashlib.blake2b(f"{subject}|{from_}|{msg['Date']}".encode(), digest_size=8).hexdigest()
        message_id = f"<{digest}@mailgen.example>"
    msg["Message-ID"] = message_id
    for name, value in (headers or {}).items():
        msg[name] = value
    return msg


def plain_message(
    subject: str,
    body: str,
    *,
    from_: str = "Alice Johnson <alice.johnson@example.com>",
    to: str = "Test User <user@example.org>",
    date: dt.datetime | str | None = None,
    message_id: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> bytes:
    """A single-part text/plain message (UTF-8; quoted-printable if non-ASCII).

    ``date`` defaults to a fixed instant; ``message_id`` to one derived from subject/sender/date.
    """
    if headers:
        return _made_plain_message(subject, body, from_, to, date, message_id, headers)
    return _cached_plain_message(subject, body, from_, to, date, message_id)


def _made_plain_message(
    subject: str,
    body: str,
    from_: str,
    to: str,
    date: dt.datetime | str | None,
    message_id: str | None,
    headers: Mapping[str, str] | None = None,
) -> bytes:
    msg = _base_message(subject, from_=from_, to=to, date=date, message_id=message_id, headers=headers)
    msg.set_content(body, cte="7bit" if body.isascii() else "quoted-printable")
    return msg.as_bytes()


#: The messages without extra headers, made once per process: tests seed the same ones again and again,
#: and Python's email package took about 8% of the samples (py-spy) of eight integration modules.
_cached_plain_message = functools.lru_cache(maxsize=8192)(_made_plain_message)


def non_ascii_message(
    subject: str = "Grüße aus Köln – 東京 ✓ Zoë",
    from_name: str = "Jürgen Müller",
    *,
    from_addr: str = "juergen.mueller@example.de",
    body: str = "Schöne Grüße! Ça va? 你好，世界。Привет 👋\n",
    date: dt.datetime | str | None = None,
) -> bytes:
    """A text/plain message whose subject, sender name and body are non-ASCII (RFC 2047 headers)."""
    return plain_message(subject, body, from_=_address(from_name, from_addr), date=date)


def html_only_message(
    subject: str = "Your weekly newsletter",
    html_body: str | None = None,
    *,
    from_: str = "Acme Corp | Newsletter <news@acme.example>",
    date: dt.datetime | str | None = None,
) -> bytes:
    """A single-part text/html message (no text alternative) with style, link and tracking pixel."""
    if html_body is None:
        html_body = _html_body("en").replace(_LINE1, "Hello from the newsletter, ref html-only.")
    msg = _base_message(subject, from_=from_, to="Test User <user@example.org>", date=date, message_id=None)
    msg.set_content(html_body, subtype="html", cte="7bit" if html_body.isascii() else "quoted-printable")
    return msg.as_bytes()


@functools.lru_cache(maxsize=4)  # bytes: the same message for the same arguments, made once per process
def large_attachment_message(
    size_bytes: int,
    *,
    filename: str = "scan-2024.pdf",
    subject: str = "Large scan attached",
    seed: int = 0,
) -> bytes:
    """A short text/plain part followed by a ``size_bytes`` PDF-like attachment (base64, ~1.37x size).

    Built by splicing the base64 into an ``email``-rendered skeleton, so 25 MB takes well under a second.
    """
    if size_bytes < 32:
        raise ValueError("size_bytes must be at least 32")
    msg = _base_message(
        subject,
        from_="Scanner <scanner@corp.example>",
        to="Test User <user@example.org>",
        date=None,
        message_id=f"<large-{size_bytes}-{seed}@mailgen.example>",
    )
    msg.set_content(f"Please find the scanned document attached ({size_bytes} bytes).\n")
    marker = b"QZXLARGEATTACHMENTQZX"
    msg.add_attachment(marker, maintype="application", subtype="pdf", filename=filename)
    for part in msg.walk():
        if part.is_multipart():
            part.set_boundary(f"----=_Part_large_{seed}")
    rendered = msg.as_bytes()
    encoded_marker = base64.b64encode(marker)
    pos = rendered.rindex(encoded_marker)
    head, tail = rendered[:pos], rendered[pos + len(encoded_marker) :]
    pdf_head, pdf_tail = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", b"\n%%EOF\n"
    data = pdf_head + random.Random(seed).randbytes(size_bytes - len(pdf_head) - len(pdf_tail)) + pdf_tail
    payload = base64.encodebytes(data).replace(b"\n", b"\r\n")[:-2]
    return head + payload + tail


#: Kinds accepted by ``malformed_message``.
MALFORMED_KINDS = (
    "mixed",
    "bad-boundary",
    "bad-charset",
    "bad-base64",
    "raw-8bit-headers",
    "truncated",
    "no-body",
)


def malformed_message(kind: str = "mixed") -> bytes:
    """Broken-but-seen-in-the-wild bytes that a tolerant parser must survive (see ``MALFORMED_KINDS``).

    ``mixed`` combines most faults: raw 8-bit and broken encoded-word headers, duplicate and unparsable
    headers, a boundary that never appears, unknown/misdeclared charsets and invalid base64.
    """
    head = (
        b"From: =?utf-8?q?Broken_Sender?= <broken@example.com>\r\n"
        b"To: user@example.org\r\n"
        b"Date: Mon, 15 Jan 2024 10:00:00 +0000\r\n"
        b"Message-ID: <malformed-" + kind.encode() + b"@mailgen.example>\r\n"
        b"MIME-Version: 1.0\r\n"
    )
    if kind == "bad-boundary":
        return head + (
            b"Subject: Bad boundary\r\n"
            b'Content-Type: multipart/mixed; boundary="AAA"\r\n\r\n'
            b"preamble\r\n--AAB\r\nContent-Type: text/plain\r\n\r\nPart with the wrong boundary.\r\n"
            b"--AAB\r\nContent-Type: text/html\r\n\r\n<p>never closed\r\n"
        )
    if kind == "bad-charset":
        return head + (
            b"Subject: Bad charset\r\n"
            b"Content-Type: multipart/alternative; boundary=b1\r\n\r\n"
            b"--b1\r\nContent-Type: text/plain; charset=x-no-such-charset\r\n"
            b"Content-Transfer-Encoding: 8bit\r\n\r\nUnknown charset: \xe4\xf6\xfc \xff\xfe\r\n"
            b"--b1\r\nContent-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n"
            b"<p>Latin-1 declared as UTF-8: Gr\xfc\xdfe \xe9t\xe9</p>\r\n"
            b"--b1--\r\n"
        )
    if kind == "bad-base64":
        return head + (
            b"Subject: Bad base64\r\n"
            b"Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\n"
            b"SGVsbG8gd29y!!!bGQ*\r\nnot base64 at all ===\r\nSGk\r\n"
        )
    if kind == "raw-8bit-headers":
        return head.replace(b"From: =?utf-8?q?Broken_Sender?=", "From: Jürgen Müller".encode()) + (
            b"Subject: Gr\xfc\xdfe =?utf-8?q?unterminated_encoded_word =?x-unknown?x?abc?= "
            + "李雷".encode()
            + b"\r\nSubject: duplicate subject\r\n"
            b"X-Folded-Badly: first line\r\n\tsecond line\r\n without colon line\r\n"
            b"Content-Type: text/plain\r\n\r\nBody after odd headers.\r\n"
        )
    if kind == "truncated":
        return head + (
            b"Subject: Truncated\r\n"
            b'Content-Type: multipart/mixed; boundary="cut"\r\n\r\n'
            b"--cut\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nThe message stops in the mid"
            b'dle of\r\n--cut\r\nContent-Type: application/pdf; name="x.pdf"\r\n'
            b"Content-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK"
        )
    if kind == "no-body":
        return head + b"Subject: Headers only, no separator line\r\nContent-Type: text/plain"
    if kind != "mixed":
        raise ValueError(f"unknown malformed kind {kind!r}; choose from {MALFORMED_KINDS}")
    return (
        b"From: J\xfcrgen \xfcberall <juergen@example.de>\r\n"
        b"To: undisclosed-recipients:;\r\n"
        b"Subject: =?utf-8?q?Mixed_faults?= =?iso-8859-1?b?broken?= \xe4\r\n"
        b"Subject: second Subject header\r\n"
        b"Date: Someday, 32 Foo 2024 25:61:00 +9999\r\n"
        b"Message-ID: no-angle-brackets@example.com\r\n"
        b"MIME-Version: 1.0\r\n"
        b'Content-Type: multipart/mixed; boundary="outer"; charset=\r\n\r\n'
        b"--outer\r\nContent-Type: multipart/alternative\r\n\r\n"
        b"(nested multipart without a boundary parameter)\r\n"
        b"--outer\r\nContent-Type: text/plain; charset=x-no-such-charset\r\n"
        b"Content-Transfer-Encoding: quoted-printable\r\n\r\nBad QP =ZZ and soft break =\r\nend \xe4\r\n"
        b"--outer\r\nContent-Type: application/pdf; name*=utf-8''%E6%8A%A5%E5%91%8A%ZZ.pdf\r\n"
        b"Content-Disposition: attachment; filename*0*=utf-8''bad%; filename*2=gap.pdf\r\n"
        b"Content-Transfer-Encoding: base64\r\n\r\nJVBERi0x!!LjQK====\r\n###\r\n"
        b"--outer\r\nContent-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: x-uuencode-ish\r\n\r\n"
        b"<p>unknown transfer encoding <b>unclosed\r\n"
        b"--outr--\r\n"
    )


def crlf(msg: EmailMessage) -> bytes:
    """The message as mail travels (CRLF line ends): Cyrus refuses bare newlines on APPEND."""
    return msg.as_bytes(policy=msg.policy.clone(linesep="\r\n"))


def inner_message() -> EmailMessage:
    """A small forwarded message (text body and a CSV attachment), to attach as message/rfc822."""
    inner = EmailMessage()
    inner["From"] = "Alice <alice@example.com>"
    inner["To"] = "bob@example.com"
    inner["Subject"] = "Forwarded: budget"
    inner["Date"] = "Tue, 04 Feb 2025 08:30:00 +0000"
    inner.set_content("The budget is 42 000 EUR.\n")
    inner.add_attachment(b"a,b\n1,2\n", maintype="text", subtype="csv", filename="numbers.csv")
    return inner
