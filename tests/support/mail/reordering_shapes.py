"""Drafts whose text a recipient's program draws in another order than it is written (issue 89 item 3): a
table whose ``<tfoot>`` comes first, whose ``<thead>`` comes last or whose ``<caption>`` follows its rows,
and a bidirectional control in the HTML, the text, the subject or the sender's name. Each says in its
written order that lunch was 40 EUR, where a browser draws the amount to pay first or reversed; its text
part holds every word of its HTML (a question would otherwise not ask anyway). Shared by the pure and the
end-to-end tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from email.header import Header

LUNCH = "Lunch 40 EUR"
TOTAL = "Total 9800 EUR"
#: What a browser draws "Pay 9800 EUR" (the override reverses the digits).
PAY = "Pay \u202e0089\u202c EUR"


@dataclass(frozen=True)
class Reordering:
    """One way a draft's text is drawn in another order than it is written."""

    #: The text/plain part.
    text: str = f"{LUNCH}\n{TOTAL}"
    #: The text/html alternative, if any.
    html: str | None = None
    subject: str = "Lunch"
    #: The From header's display name.
    name: str = "Alice"
    #: What the route's reason says (``page_only``).
    reason: str = ""


def _row(text: str) -> str:
    return f"<tr><td>{text}</td></tr>"


REORDERINGS: dict[str, Reordering] = {
    "tfoot first": Reordering(
        html=f"<table><tfoot>{_row(TOTAL)}</tfoot>{_row(LUNCH)}</table>",
        text=f"{TOTAL}\n{LUNCH}",
        reason="holds a <tfoot> before rows of its table, which a browser draws below them",
    ),
    "thead last": Reordering(
        html=f"<table>{_row(LUNCH)}<thead>{_row(TOTAL)}</thead></table>",
        reason="holds a <thead> after rows of its table, which a browser draws above them",
    ),
    "caption after rows": Reordering(
        html=f"<table>{_row(LUNCH)}<caption>{TOTAL}</caption></table>",
        reason="holds a <caption> after the start of its table, which a browser draws above the table",
    ),
    "bidi in the HTML": Reordering(
        html="<p>Pay &#x202e;0089&#x202c; EUR</p>",
        text="Pay 0089 EUR",
        reason="characters that reorder it as it is drawn (U+202E in HTML part as a mail program shows it)",
    ),
    "bidi in the text": Reordering(text=PAY, reason="(U+202E in Text)"),
    "bidi in the subject": Reordering(subject=PAY, reason="(U+202E in Subject)"),
    "bidi in the sender's name": Reordering(name="Alice \u2067Bank", reason="(U+2067 in From)"),
}

#: A table in its drawing order (caption, head, rows, foot) and no reordering character: the question asks.
IN_ORDER = Reordering(
    html=f"<table><caption>Lunch</caption><thead>{_row(LUNCH)}</thead><tbody>{_row('and')}</tbody>"
    f"<tfoot>{_row(TOTAL)}</tfoot></table>",
    text=f"Lunch\n{LUNCH}\nand\n{TOTAL}",
)


def drafted(sender: str, to: str, shape: Reordering, message_id: str = "<r1@example.org>") -> bytes:
    """A draft from ``sender`` to ``to`` in ``shape``."""
    head = (
        f"From: {Header(shape.name, 'utf-8').encode()} <{sender}>\r\nTo: {to}\r\n"
        f"Subject: {Header(shape.subject, 'utf-8').encode()}\r\nMessage-ID: {message_id}\r\n"
        "Date: Mon, 02 Jan 2023 10:00:00 +0000\r\nMIME-Version: 1.0\r\n"
    )
    text = shape.text.replace("\n", "\r\n")
    if shape.html is None:
        return f"{head}Content-Type: text/plain; charset=utf-8\r\n\r\n{text}\r\n".encode()
    return (
        f'{head}Content-Type: multipart/alternative; boundary="alt"\r\n\r\n'
        f"--alt\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{text}\r\n"
        f"--alt\r\nContent-Type: text/html; charset=utf-8\r\n\r\n{shape.html}\r\n--alt--\r\n"
    ).encode()
