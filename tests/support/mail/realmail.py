"""A realistic mailbox: newsletters, notifications, and replies with quoted text and signatures.

``mailgen`` covers encodings and MIME structures; this corpus looks like the INBOX of a person at
work, so that byte counts of search results (scripts/token-report) and the new-text extraction
(content/quotes.py) are measured on what agents actually read: replies whose body is mostly the
quoted thread and a signature (English, German, French, Spanish, Outlook-style headers), HTML
newsletters with long sender names and List-Unsubscribe, notification mail, invoices with a PDF.
Deterministic for a given seed.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import format_datetime, formataddr

OWNER = ("Ana Lima", "ana.lima@example.org")
PEOPLE = [
    ("Bob Smith", "bob.smith@acme-corp.example"),
    ("Jürgen Müller", "j.mueller@beispiel-gmbh.example"),
    ("Claire Dubois", "claire.dubois@exemple.example"),
    ("María García", "maria.garcia@ejemplo.example"),
    ("Priya Raman", "priya@startup.example"),
    ("Tom O'Neil", "tom.oneil@acme-corp.example"),
    ("Sven Lindqvist", "sven@exempel.example"),
]
NEWSLETTERS = [
    ("This Week in Rust", "newsletter@this-week-in-rust.example", "This Week in Rust {n}: {topic}"),
    ("The Pragmatic Engineer", "pragmatic@substack.example", "The Pulse #{n}: {topic}"),
    ("Python Weekly", "no-reply@pythonweekly.example", "Python Weekly - Issue {n}"),
    ("GitHub", "noreply@github.example", "[GitHub] A third-party OAuth application has been added"),
]
TOPICS = [
    "async closures are stable",
    "what the layoffs mean for hiring",
    "a faster borrow checker",
    "observability on a budget",
    "the state of WebAssembly",
]
PROJECTS = [
    "Q3 budget",
    "vendor contract renewal",
    "offsite agenda",
    "migration to Postgres 17",
    "hiring plan",
]
NEW_TEXT = [
    "Fine by me if we move the review to Thursday; I'll bring the revised numbers and the two options "
    "we discussed.",
    "Thanks, that works. Could you send the signed copy to legal before Friday? They need it for the audit.",
    "I had a look: the second option is cheaper over three years, but only if we commit to the volume "
    "tier. Let's discuss tomorrow.",
    "Quick update: the staging migration finished overnight, no errors. Production is scheduled for "
    "Saturday 06:00.",
    "Sorry for the delay. Attached is the draft; the numbers in section 3 are still provisional.",
]
QUOTED = [
    "Hi all,\n\nplease find below the plan for next quarter. We need a decision on the budget by the end "
    "of the month, otherwise the vendor will not hold the price.\n\nKey points:\n- headcount stays flat\n"
    "- tooling budget +10%\n- travel frozen until January\n\nLet me know if anything is missing.",
    "Hello,\n\ncan you confirm the dates for the offsite? The venue needs a final headcount and the "
    "dietary requirements by Wednesday.\n\nThanks!",
]
SIGNATURES = [
    "-- \n{name}\nHead of Operations | ACME Corp\n+1 555 0100 | www.acme-corp.example\n"
    "This e-mail and any attachments are confidential.",
    "-- \n{name}\nSent from my phone",
    "-- \nMit freundlichen Grüßen\n{name}\nBeispiel GmbH · Musterstraße 1 · 10115 Berlin\n"
    "Geschäftsführer: Max Mustermann · HRB 12345",
]


@dataclass
class Realistic:
    """One generated message and the text a reader would call new in it (for the tests)."""

    raw: bytes
    kind: str
    new_text: str


def _wire(msg: EmailMessage) -> bytes:
    """The message as it travels: CRLF line ends (Cyrus refuses bare newlines in APPEND)."""
    return msg.as_bytes(policy=msg.policy.clone(linesep="\r\n"))


def _addr(person: tuple[str, str]) -> str:
    return formataddr(person)


def _base(
    sender: tuple[str, str], to: list[tuple[str, str]], subject: str, date: dt.datetime, msgid: str
) -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = _addr(sender)
    msg["To"] = ", ".join(_addr(p) for p in to)
    msg["Subject"] = subject
    msg["Date"] = format_datetime(date)
    msg["Message-ID"] = msgid
    return msg


def _attribution(kind: str, who: tuple[str, str], when: dt.datetime) -> str:
    name, email = who
    if kind == "de":
        return f"Am {when:%d.%m.%Y} um {when:%H:%M} schrieb {name} <{email}>:"
    if kind == "fr":
        return f"Le mar. {when:%d} nov. {when:%Y} à {when:%H:%M}, {name} <{email}> a écrit :"
    if kind == "es":
        return f"El mar, {when:%d} nov {when:%Y} a las {when:%H:%M}, {name} (<{email}>) escribió:"
    return f"On Tue, {when:%d} Nov {when:%Y} at {when:%H:%M}, {name} <{email}> wrote:"


def _quote(text: str) -> str:
    return "\n".join(">" + (" " + line if line else "") for line in text.splitlines())


def _reply(rng: random.Random, i: int, date: dt.datetime) -> Realistic:
    sender = rng.choice(PEOPLE)
    other = rng.choice([p for p in PEOPLE if p != sender])
    project = rng.choice(PROJECTS)
    new = rng.choice(NEW_TEXT)
    greeting = f"Hi {OWNER[0].split()[0]},\n\n"
    style = rng.choice(["en", "en", "de", "fr", "es", "outlook"])
    earlier = date - dt.timedelta(hours=rng.randint(2, 50))
    quoted = rng.choice(QUOTED)
    if style == "outlook":
        history = (
            "-----Original Message-----\n"
            f"From: {other[0]} <{other[1]}>\n"
            f"Sent: Tuesday, {earlier:%B %d, %Y %I:%M %p}\n"
            f"To: {OWNER[0]} <{OWNER[1]}>\n"
            f"Subject: {project}\n\n{quoted}"
        )
    else:
        history = f"{_attribution(style, other, earlier)}\n{_quote(quoted)}"
    signature = rng.choice(SIGNATURES).format(name=sender[0])
    body = f"{greeting}{new}\n\nBest,\n{sender[0].split()[0]}\n\n{signature}\n\n{history}\n"
    if style == "outlook":  # Outlook puts the history below the signature-less text
        body = f"{greeting}{new}\n\nBest,\n{sender[0].split()[0]}\n\n{history}\n"
    to = [OWNER] + ([other] if rng.random() < 0.5 else [])
    msg = _base(sender, to, f"Re: {project}", date, f"<reply-{i}@realistic.example>")
    if rng.random() < 0.4:
        msg["Cc"] = _addr(rng.choice(PEOPLE))
    msg["In-Reply-To"] = f"<thread-{i}@realistic.example>"
    msg["References"] = f"<root-{i}@realistic.example> <thread-{i}@realistic.example>"
    msg.set_content(body)
    return Realistic(_wire(msg), f"reply-{style}", f"{greeting}{new}\n\nBest,\n{sender[0].split()[0]}")


def _newsletter(rng: random.Random, i: int, date: dt.datetime) -> Realistic:
    name, email, subject = rng.choice(NEWSLETTERS)
    topic = rng.choice(TOPICS)
    subject = subject.format(n=500 + i, topic=topic)
    items = "\n".join(
        f"* {rng.choice(TOPICS).capitalize()}: https://links.example/{i}/{k}?utm_source=newsletter"
        for k in range(12)
    )
    text = (
        f"Hello and welcome to another issue! This week: {topic}, plus the usual links.\n\n{items}\n\n"
        "You are receiving this because you subscribed. Unsubscribe: https://links.example/unsub\n"
    )
    html_items = "".join(
        f"<li><a href='https://links.example/{i}/{k}'>{rng.choice(TOPICS)}</a></li>" for k in range(12)
    )
    html = (
        "<html><body><table width='600'><tr><td><img src='https://img.example/logo.png' alt='logo'>"
        f"<h1>{subject}</h1><p>Hello and welcome to another issue! This week: {topic}, plus the usual "
        f"links.</p><ul>{html_items}</ul><p style='font-size:10px'>Unsubscribe</p></td></tr></table>"
        "</body></html>"
    )
    msg = _base((name, email), [OWNER], subject, date, f"<news-{i}@realistic.example>")
    msg["List-Unsubscribe"] = "<https://links.example/unsub>, <mailto:unsub@links.example>"
    msg["List-ID"] = f"{name} <list.{email.split('@')[1]}>"
    msg.set_content(text)
    msg.add_alternative(html, subtype="html")
    return Realistic(_wire(msg), "newsletter", text)


def _notification(rng: random.Random, i: int, date: dt.datetime) -> Realistic:
    actor = rng.choice(PEOPLE)
    number = 1000 + i
    subject = f"Re: [acme/platform] Fix flaky integration test on CI (PR #{number})"
    new = f"@{OWNER[0].split()[0].lower()} I rebased on main; the timeout was the DNS lookup, now mocked."
    body = (
        f"{new}\n\n"
        f"On Mon, {date:%d} Nov {date:%Y} at 09:14, {OWNER[0]} wrote:\n"
        "> Still failing on the arm64 runner, see the last job.\n\n"
        "—\nReply to this email directly, view it on GitHub:\n"
        f"https://github.example/acme/platform/pull/{number}#issuecomment-{9000 + i}\n"
        "You are receiving this because you were mentioned.\n"
    )
    msg = _base(
        (actor[0], "notifications@github.example"),
        [("acme/platform", "platform@noreply.github.example")],
        subject,
        date,
        f"<acme/platform/pull/{number}/c{i}@github.example>",
    )
    msg["Cc"] = f"{_addr(OWNER)}, Mention <mention@noreply.github.example>"
    msg.set_content(body)
    return Realistic(_wire(msg), "notification", new)


def _invoice(rng: random.Random, i: int, date: dt.datetime) -> Realistic:
    text = (
        f"Dear customer,\n\nplease find attached invoice INV-2026-{i:04d} for November, due in 30 days.\n\n"
        "Kind regards,\nAccounts Receivable\nHosting Provider Ltd\n"
    )
    msg = _base(
        ("Hosting Provider Billing", "billing@hosting-provider.example"),
        [OWNER],
        f"Your invoice INV-2026-{i:04d} is available",
        date,
        f"<invoice-{i}@realistic.example>",
    )
    msg.set_content(text)
    pdf = b"%PDF-1.4\n" + bytes(rng.getrandbits(8) for _ in range(2400)) + b"\n%%EOF\n"
    msg.add_attachment(pdf, maintype="application", subtype="pdf", filename=f"INV-2026-{i:04d}.pdf")
    return Realistic(_wire(msg), "invoice", text)


def _new_thread(rng: random.Random, i: int, date: dt.datetime) -> Realistic:
    sender = rng.choice(PEOPLE)
    project = rng.choice(PROJECTS)
    text = f"Hi {OWNER[0].split()[0]},\n\n{rng.choice(QUOTED).split(chr(10), 2)[2]}\n\nThanks,\n{sender[0]}\n"
    others = rng.sample([p for p in PEOPLE if p != sender], 2)
    msg = _base(sender, [OWNER, *others], project.capitalize(), date, f"<thread-{i}@realistic.example>")
    msg.set_content(text)
    return Realistic(_wire(msg), "new-thread", text)


KINDS: list[tuple[Callable[[random.Random, int, dt.datetime], Realistic], int]] = [
    (_reply, 8),
    (_newsletter, 5),
    (_notification, 3),
    (_invoice, 1),
    (_new_thread, 3),
]


def realistic_corpus(n: int, seed: int = 0) -> Iterator[Realistic]:
    """``n`` messages, oldest first (seed them in this order: the newest gets the highest UID)."""
    rng = random.Random(seed)
    makers = [maker for maker, weight in KINDS for _ in range(weight)]
    start = dt.datetime(2026, 11, 1, 8, 0, tzinfo=dt.UTC)
    for i in range(n):
        date = start + dt.timedelta(hours=i * 5, minutes=rng.randint(0, 59))
        yield rng.choice(makers)(rng, i, date)


def realistic_flags(index: int) -> str:
    """Most mail read; every fourth unread, every eleventh flagged, every sixth answered."""
    flags = [] if index % 4 == 0 else ["\\Seen"]
    if index % 11 == 0:
        flags.append("\\Flagged")
    if index % 6 == 0:
        flags.append("\\Answered")
    return " ".join(flags)
