"""The approval page and its short answers, as HTML with the headers that keep them to themselves.

The page is generic: its words and body come from the request's renderer (:func:`review_page` shows any
review; a message to send has its own, ``services/send_page.py``). Everything from a request is escaped
(:func:`shown`, :func:`address`); a message's HTML is rendered only inside a sandboxed ``<iframe>``
(its own response, :data:`VIEW_HEADERS`: :func:`view_frame`; ``services/send_page.py``). The page's
Content-Security-Policy allows nothing but inline style, ``data:`` images, its own views' frames and a
form posted to itself: no script runs and nothing loads from anywhere.
Characters that change how text reads without being seen (direction overrides, control characters) are
shown as their code points, so an address cannot pass for another.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html import escape

from mail_imap_mcp.asking.review import Review

from .request import DIGEST_PATTERN, PageRequest, PageWords

__all__ = [
    "PAGE_HEADERS",
    "VIEW_HEADERS",
    "VIEW_POLICY",
    "ReviewPage",
    "address",
    "answer_page",
    "approval_page",
    "review_page",
    "shown",
    "view_frame",
]

_STYLE = (
    "body{font:15px/1.45 system-ui,sans-serif;margin:0;background:#f4f4f4;color:#111}"
    "main{max-width:52rem;margin:1.5rem auto;padding:1.5rem;background:#fff;border:1px solid #ccc}"
    "h1{font-size:1.4rem;margin:0 0 .5rem}h2{font-size:1.05rem;margin:1.2rem 0 .4rem}"
    "th{text-align:left;vertical-align:top;padding:.15rem .8rem .15rem 0;white-space:nowrap}"
    "td{padding:.15rem 0;overflow-wrap:anywhere}"
    "pre{white-space:pre-wrap;overflow-wrap:anywhere;font:14px/1.4 ui-monospace,monospace;margin:0}"
    ".body{border:1px solid #bbb;padding:.8rem;max-height:30rem;overflow:auto;background:#fcfcfc}"
    ".mark{background:#fd0;color:#000;font-size:.8em;padding:0 .15em}"
    ".buttons{margin-top:1.5rem;display:flex;gap:1rem}"
    "button{font-size:1.05rem;padding:.5rem 1.4rem;cursor:pointer}summary{cursor:pointer;margin:.6rem 0}"
    "#approve{background:#0a5;color:#fff;border:1px solid #084}#decline{background:#fff;border:1px solid #888}"
    ".note,.size,.type{color:#555;font-size:.9rem}ul.plain{list-style:none;margin:0;padding:0}"
    "iframe.view{width:100%;height:30rem;border:1px solid #bbb;background:#fff}"
)

#: Sent with every response but a view's: no script runs and nothing loads but inline style, ``data:``
#: images and the frames of its own views (:func:`view_frame`), it posts only to itself, no other page may
#: frame it, read it or get its address as a referrer, and nothing is cached.
PAGE_HEADERS: tuple[tuple[str, str], ...] = (
    (
        "Content-Security-Policy",
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-src 'self'; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    ),
    ("Content-Type", "text/html; charset=utf-8"),
    ("Cache-Control", "no-store"),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    # same-origin, not no-referrer: with no-referrer a browser sends "Origin: null" with the form's POST.
    ("Referrer-Policy", "same-origin"),
    ("Cross-Origin-Opener-Policy", "same-origin"),
    ("Cross-Origin-Resource-Policy", "same-origin"),
)

#: What a request's view (a message's HTML as a recipient's program shows it: :func:`view_frame`) is
#: served with: its document as it is, nothing added to it, so that its style cannot tell the page from a
#: recipient's program; its policy here, in the response: inline styles and ``data:`` images, no script
#: (scripting stays on in its sandbox, as in a mail reader's browser, so ``@media (scripting)`` and
#: ``<noscript>`` behave as there; the policy runs none), nothing loaded from anywhere, framed by the page
#: alone.
VIEW_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'self'; sandbox allow-scripts"
)
VIEW_HEADERS: tuple[tuple[str, str], ...] = (
    ("Content-Security-Policy", VIEW_POLICY),
    ("Content-Type", "text/html; charset=utf-8"),
    ("Cache-Control", "no-store"),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
)
#: The frame's sandbox: its own opaque origin (it reads nothing of the page), no form, popup, top
#: navigation or download; ``allow-scripts`` only so that its document is scripted as a browser tab's is
#: (the view's policy runs no script: :data:`VIEW_POLICY`).
VIEW_SANDBOX = "allow-scripts"


def view_frame(number: int, title: str, key: str = "") -> str:
    """The page's frame of view ``number`` of its request (:meth:`.request.PageRequest.view`), loaded from
    the page's own address (``?view=N``, which needs the page's secret path)."""
    ident = f' id="{escape(key, quote=True)}"' if key else ""
    return (
        f'<iframe{ident} class="view" sandbox="{VIEW_SANDBOX}" title="{escape(title, quote=True)}" '
        f'src="?view={number}"></iframe>'
    )


# Direction controls and invisible marks that reorder or hide what a reader sees.
_BIDI = frozenset(
    {0x061C, 0x200B, 0x200E, 0x200F, 0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0xFEFF}
)


def _hidden(char: str, keep_lines: bool) -> bool:
    code = ord(char)
    if keep_lines and char in "\n\t":
        return False
    return code < 0x20 or 0x7F <= code < 0xA0 or code in _BIDI


def shown(text: str, *, keep_lines: bool = False) -> str:
    """``text`` escaped, its invisible controls written out as marked code points."""
    out: list[str] = []
    for char in text.replace("\r\n", "\n") if keep_lines else text:
        if _hidden(char, keep_lines):
            out.append(f'<span class="mark">U+{ord(char):04X}</span>')
        else:
            out.append(escape(char, quote=True))
    return "".join(out)


_DOMAIN = re.compile(r"@([^\s<>@]+)>?\s*$")


def _domain_note(address: str) -> str:
    """For a domain written with non-ASCII letters, the name it is looked up by (``xn--...``): a look-alike
    of a familiar domain (a Cyrillic "а" in "exаmple.net") shows there."""
    found = _DOMAIN.search(address)
    if found is None or found.group(1).isascii():
        return ""
    try:
        ascii_name = found.group(1).encode("idna").decode("ascii")
    except UnicodeError:
        return ' <span class="mark idna">not a valid domain name</span>'
    return f' <span class="mark idna">domain {escape(ascii_name)}</span>'


def address(value: str, key: str = "") -> str:
    """An address shown escaped, in its own direction, with the name its domain is looked up by."""
    ident = f' id="{key}"' if key else ""
    return f"<bdi{ident}>{shown(value)}</bdi>{_domain_note(value)}"


def _document(title: str, body: str) -> str:
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body><main>{body}</main></body></html>"
    )


@dataclass(frozen=True)
class ReviewPage:
    """Any :class:`~.review.Review` on a page: each field's values one per line, each content whole with
    its lines; the renderer of whatever has no richer one (:data:`~.request.Renderer`)."""

    review: Review
    digest: str
    words: PageWords = field(default_factory=PageWords)

    def __post_init__(self) -> None:
        if not re.fullmatch(DIGEST_PATTERN, self.digest):
            raise ValueError("not a digest")

    def view(self, number: int) -> str | None:
        return None

    def body_html(self) -> str:
        rows = "".join(
            f"<tr><th>{shown(item.label)}</th><td>"
            + ("".join(f"<div>{shown(value)}</div>" for value in item.values) or shown(item.empty))
            + "</td></tr>"
            for item in self.review.fields
        )
        parts = [f"<p>{shown(self.review.title)}</p>", f"<table>{rows}</table>" if rows else ""]
        parts += [
            f'<h2>{shown(content.label)}</h2><div class="body"><pre>{shown(content.text, keep_lines=True)}'
            "</pre></div>"
            for content in self.review.contents
        ]
        return "".join(parts)


def review_page(review: Review, digest: str) -> ReviewPage:
    """:class:`ReviewPage` as a :data:`~.request.Renderer`."""
    return ReviewPage(review, digest)


def approval_page(request: PageRequest, csrf_token: str, ttl_s: float) -> str:
    """The page that asks: what ``request`` shows, and its approving and declining buttons."""
    words = request.words
    minutes = max(1, round(ttl_s / 60))
    parts = [
        f"<h1>{escape(words.heading)}</h1>",
        f'<p class="note">{words.note}</p>',
        request.body_html(),
        '<form method="post">'
        f'<input type="hidden" name="csrf" value="{escape(csrf_token, quote=True)}">'
        f'<input type="hidden" name="digest" value="{escape(request.digest, quote=True)}">'
        f'<div class="buttons"><button id="approve" type="submit" name="decision" value="approve">'
        f"{escape(words.approve)}</button>"
        f'<button id="decline" type="submit" name="decision" value="decline">{escape(words.decline, quote=False)}'
        "</button></div></form>"
        f'<p class="note" id="reload">This page answers once, and only for about {minutes} '
        f"minute{'s' if minutes != 1 else ''} after it was made. Reloading or reopening it (a restored tab "
        f"too) cancels the request: {words.nothing_happens}, your assistant is told the page was reopened (not "
        "that you declined), and it can show you a new page.</p>",
    ]
    return _document(f"{words.heading} - mail-imap-mcp", "".join(parts))


def answer_page(title: str, text: str) -> str:
    """A short page that says what happened (and, for a refusal, why)."""
    return _document(
        f"{title} - mail-imap-mcp", f'<h1 id="answer">{escape(title)}</h1><p id="why">{escape(text)}</p>'
    )
