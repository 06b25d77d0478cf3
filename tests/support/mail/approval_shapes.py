"""Drafts that send more than a text rendering of them shows (issue 78 item 1): each is a harmless text
part with an HTML alternative, plus one thing a recipient's mail program may show, or that leaves unseen:
text a style adds, an embedded image without alt text, a hidden element, a comment, a title, a script, a
remote image, a header field the question does not show, a MIME preamble or epilogue. Each carries the
same sentence (:data:`SECRET`) where only that thing holds it (an image is itself what is hidden). Shared by the pure and the end-to-end tests.
"""

from __future__ import annotations

from dataclasses import dataclass

#: What each shape hides from a text rendering.
SECRET = "Before Friday wire 9,800 EUR to DE89 3704 0044 0532 0130 00."
HARMLESS = "Thanks for lunch, see you soon."
#: A red 1x1 PNG.
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
_PLAIN_HTML = f"<p>{HARMLESS}</p>"


@dataclass(frozen=True)
class Shape:
    """One way a draft sends what the question's text does not show."""

    #: The HTML part (``{canary}`` stands for a loopback address nobody may fetch).
    html: str = _PLAIN_HTML
    #: Header lines added to the draft's.
    headers: str = ""
    preamble: str = ""
    epilogue: str = ""
    #: What the route's reason says (``page_only``).
    reason: str = ""
    #: What only the page shows (in its view or its source), the question's text never.
    hidden: str = SECRET


SHAPES: dict[str, Shape] = {
    "css-added text": Shape(
        html=f'<style>p::before{{content:"{SECRET} "}}</style>{_PLAIN_HTML}', reason="a <style> element"
    ),
    "data image without alt": Shape(
        html=f'{_PLAIN_HTML}<img id="pixel" src="data:image/png;base64,{PIXEL}" width="40" height="20">',
        reason="an <img> element",
        hidden=PIXEL,
    ),
    "display:none": Shape(
        html=f'{_PLAIN_HTML}<div style="display:none" id="hidden">{SECRET}</div>',
        reason="an attribute style= on <div>",
    ),
    "comment": Shape(html=f"{_PLAIN_HTML}<!-- {SECRET} -->", reason="a comment"),
    "title": Shape(
        html=f"<html><head><title>{SECRET}</title></head><body>{_PLAIN_HTML}</body></html>",
        reason="a <title> element",
    ),
    "script": Shape(
        html=f'{_PLAIN_HTML}<script>document.body.append("{SECRET}")</script>', reason="a <script> element"
    ),
    "remote image": Shape(
        html=f'{_PLAIN_HTML}<img src="{{canary}}/pixel.png?wire" alt="">',
        reason="an <img> element",
        hidden="/pixel.png?wire",
    ),
    "X-Note header": Shape(
        headers=f"X-Note: {SECRET}\r\n", reason="a header field the question does not show (X-Note)"
    ),
    "preamble": Shape(preamble=SECRET, reason="(the MIME preamble of the message)"),
    "epilogue": Shape(epilogue=SECRET, reason="(the MIME epilogue of the message)"),
}


def shaped(head: str, shape: Shape, canary: str = "http://127.0.0.1:9") -> bytes:
    """A draft of the header lines ``head`` (From, To, Subject..., each ending in CRLF) in ``shape``."""
    html = shape.html.replace("{canary}", canary)
    return (
        f"{head}{shape.headers}MIME-Version: 1.0\r\n"
        'Content-Type: multipart/alternative; boundary="alt"\r\n\r\n'
        + (f"{shape.preamble}\r\n" if shape.preamble else "")
        + f"--alt\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{HARMLESS}\r\n"
        f"--alt\r\nContent-Type: text/html; charset=utf-8\r\n\r\n{html}\r\n--alt--\r\n"
        + (f"{shape.epilogue}\r\n" if shape.epilogue else "")
    ).encode()
