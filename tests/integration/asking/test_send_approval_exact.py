"""The approval page shows what the recipient sees, and tells nobody it was opened (issue 89 items 1, 2
and 4): imap_send_draft through the SDK's MCP client against the real submission chain, the page in
headless Chromium, each HTML part of the delivered message then opened in a plain Chromium tab, as a
recipient's browser opens it.

- A style that hides its payload where the page added something to the document (a ``<base>``, a
  ``<meta>``, an element in ``<head>`` or ``<body>``, an ``<hr>`` joining two parts, standards mode where
  the message is in quirks mode, scripting off) or took its resource hint out shows the page the same
  text as the recipient's tab.
- Every kind of resource hint, link, image, font, ``@import`` and ``url()`` opens 0 connections to its
  canary while the user reviews (the same message in a plain tab connects to them: they are live).
- An image is approved seen: a text draft with an inline image goes to the page (not the question), which
  shows it; an HTML part's ``cid:`` image is drawn from its part, fetched from nowhere.
"""

from __future__ import annotations

import email
import email.policy
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from html import escape
from typing import Any

import pytest
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By

from tests.support.clients import chromium
from tests.support.clients.chromium import open_approval_page, press_send
from tests.support.clients.elicitation import answering
from tests.support.clients.in_process import open_client
from tests.support.mail.approval_shapes import PIXEL
from tests.support.patience import eventually, patient
from tests.support.servers.loopback_http import (
    ConnectionCanary,
    connection_canary,
    recording_site,
)
from tests.support.servers.submission import SubmissionDovecot
from tests.support.shared.send import TOOL, _append, _decided, _delivered, _draft, _draft_id, _setup
from tests.support.shared.send_approval_content import _page_app

pytestmark = pytest.mark.anyio

DECOY = "See you Thursday."
PAYLOAD = "please wire 9,800 EUR to XX00 today"
#: Each thing the page adds or could add to the draft's document, as CSS that hides the payload where it
#: is there and the decoy where it is not ({pay} and {decoy} are the pair's classes).
TELLS = {
    "base target=_blank": "html:has(base[target=_blank]) .{pay}, html:not(:has(base[target=_blank])) .{decoy}",
    "a <base>": "html:has(base) .{pay}, html:not(:has(base)) .{decoy}",
    "a <meta>": "html:has(meta) .{pay}, html:not(:has(meta)) .{decoy}",
    "an element added to <head>": "head:has(> :nth-child(3)) .{pay}, head:not(:has(> :nth-child(3))) .{decoy}",
    # The hint the page makes inert (item 2) stays where it is, with every attribute.
    "a hint taken out": "html:not(:has(head > link[href]:last-child)) .{pay}, html:has(head > link[href]) .{decoy}",
    "an element added to <body>": "body:has(> :nth-child(2)) .{pay}, body:not(:has(> :nth-child(2))) .{decoy}",
    "an element before the message's": "body > #all:not(:first-child) .{pay}, body > #all:first-child .{decoy}",
    "an <hr> joining the parts": "html:has(hr) .{pay}, html:not(:has(hr)) .{decoy}",
    # A document without a doctype is in quirks mode in a tab (class names match in any case there); an
    # iframe's srcdoc document never is.
    "standards mode": ".{pay}:not(.{PAY}), .{DECOY}",
}
#: Tells that are not a selector: a sandbox without scripts turns ``@media (scripting)`` off.
MEDIA_TELLS = {
    "scripting off": "@media (scripting: none) {{.{pay} {{display:none}}}} "
    "@media (scripting: enabled) {{.{decoy} {{display:none}}}}",
}
#: Each kind of thing that would connect, {url} its canary.
LOADS = {
    "preconnect": '<link rel="preconnect" href="{url}/">',
    "dns-prefetch": '<link rel="dns-prefetch" href="{url}/">',
    "prefetch": '<link rel="prefetch" href="{url}/prefetch">',
    "preload": '<link rel="preload" as="image" href="{url}/preload.png">',
    "preload font": '<link rel="preload" as="font" crossorigin href="{url}/preload.woff2">',
    "modulepreload": '<link rel="modulepreload" href="{url}/module.js">',
    "prerender": '<link rel="prerender" href="{url}/prerender">',
    "compression-dictionary": '<link rel="compression-dictionary" href="{url}/dictionary">',
    "meta refresh": '<meta http-equiv="refresh" content="0; url={url}/refresh">',
    "stylesheet": '<link rel="stylesheet" href="{url}/style.css">',
    "image": '<img src="{url}/image.png" alt="">',
    "srcset": '<img srcset="{url}/srcset.png 1x" alt="">',
    "font": "<style>@font-face{font-family:canary;src:url({url}/font.woff2)}p{font-family:canary}</style>",
    "@import": '<style>@import url("{url}/import.css");</style>',
    "url()": '<div style="background:url({url}/background.png);width:9px;height:9px"></div>',
    "background attribute": '<table background="{url}/table.png"><tr><td>cell</td></tr></table>',
    "iframe": '<iframe src="{url}/frame"></iframe>',
    "frame in a template": '<template><iframe src="{url}/template"></iframe></template>',
    "video poster": '<video poster="{url}/poster.png"></video>',
    "audio": '<audio src="{url}/audio.mp3" autoplay></audio>',
    "object": '<object data="{url}/object"></object>',
    "embed": '<embed src="{url}/embed">',
    "svg image": '<svg><image href="{url}/svg.png" width="9" height="9"/></svg>',
    "input image": '<input type="image" src="{url}/input.png" alt="go">',
    "script": '<script src="{url}/script.js"></script>',
    "speculation rules": '<script type="speculationrules">{"prefetch":[{"source":"list","urls":["{url}/s"]}]}'
    "</script>",
}
#: What surely connects from a plain tab: the canaries are live.
LIVE = ("preconnect", "image", "@import", "url()", "stylesheet")
_DRAWN = (
    "return {text: document.body ? document.body.innerText : '',"
    " images: Array.from(document.images, image => image.naturalWidth)}"
)


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    with chromium.pooled() as driver:
        yield driver


def _message(chain: SubmissionDovecot, sender: str, to: str, subject: str, body: str) -> bytes:
    """A draft of ``sender`` to ``to`` whose MIME body (from its Content-Type line) is ``body``."""
    head = _draft(chain.address(sender), [chain.address(to)], subject=subject).split(b"MIME-Version: 1.0", 1)[
        0
    ]
    return head + b"MIME-Version: 1.0\r\n" + body.replace("\n", "\r\n").encode()


def _reviewing(
    browser: WebDriver, seen: dict[str, Any], before_press: Callable[[], None] = lambda: None
) -> Callable[[str], bool]:
    """The user's browser: the page in Chromium, what each of its views draws kept in ``seen`` (its text
    and its images' widths) with the pictures of its attachments, then "Send" pressed."""

    def user(url: str) -> bool:
        wait = open_approval_page(browser, url)
        seen["views"] = []
        for frame in browser.find_elements(By.CSS_SELECTOR, "iframe.view"):
            browser.switch_to.frame(frame)
            wait.until(lambda d: d.execute_script("return document.readyState") == "complete")
            seen["views"].append(browser.execute_script(_DRAWN))
            browser.switch_to.default_content()
        seen["pictures"] = [
            image.get_property("naturalWidth")
            for image in browser.find_elements(By.CSS_SELECTOR, "img.picture")
        ]
        before_press()
        press_send(browser, wait)
        return True

    return user


async def _sent_on_the_page(
    chain: SubmissionDovecot, sender: str, bob: str, draft: bytes, user: Callable[[str], bool]
) -> list[str]:
    """Send ``draft`` approved on the page by ``user`` (never by the question); the HTML parts of what
    ``bob`` received."""
    _append(chain, sender, "Drafts", draft)
    accepting = answering("accept")
    app = _page_app(chain, sender, user)
    async for mcp in open_client(app.config, app, elicitation_callback=accepting):
        answer = await _decided(mcp, await mcp.call(TOOL, {"message_id": await _draft_id(mcp)}))
    assert accepting.asked == []  # the page asked, not the question
    assert answer["success"] and answer["data"]["outcome"] == "sent", answer
    (delivered,) = await _delivered(chain, bob, 1)
    message = email.message_from_bytes(delivered, policy=email.policy.default)
    return [str(part.get_content()) for part in message.walk() if part.get_content_type() == "text/html"]


def _in_a_tab(browser: WebDriver, htmls: list[str]) -> list[dict[str, Any]]:
    """What each HTML part draws in a plain Chromium tab (served as it is by a web server on loopback, as a
    recipient's browser opens it)."""
    drawn = []
    with recording_site() as site:
        for number, html in enumerate(htmls):
            site.pages[f"/delivered-{number}"] = html
            browser.get(f"{site.url}/delivered-{number}")
            drawn.append(browser.execute_script(_DRAWN))
        browser.get("about:blank")
    return drawn


def _pairs() -> tuple[str, str]:
    """The tells' style and the paragraphs it hides, a decoy and a payload for each tell."""
    styles, paragraphs = [], []
    for number, (tell, css) in enumerate({**TELLS, **MEDIA_TELLS}.items()):
        names = {
            "pay": f"pay{number}",
            "decoy": f"decoy{number}",
            "PAY": f"PAY{number}",
            "DECOY": f"DECOY{number}",
        }
        rule = css.format(**names)
        styles.append(rule if tell in MEDIA_TELLS else rule + " {display:none}")
        paragraphs.append(
            f'<p class="decoy{number}">{DECOY} ({escape(tell)})</p><p class="pay{number}">{PAYLOAD} ({escape(tell)})</p>'
        )
    return "\n".join(styles), "\n".join(paragraphs)  # lines within SMTP's limit


async def test_a_style_that_looks_for_what_the_page_adds_shows_the_page_what_the_recipient_sees(
    chain: SubmissionDovecot, browser: WebDriver
) -> None:
    sender, bob, _ = _setup(chain)
    style, paragraphs = _pairs()
    hint = '<link rel="preconnect" href="http://127.0.0.1:9/">'  # the discard port: nothing answers
    first = f"<html><head><style>\n{style}\n</style>{hint}</head><body><div id=all>{paragraphs}</div></body></html>"
    body = (
        'Content-Type: multipart/mixed; boundary="b"\n\n'
        f"--b\nContent-Type: text/html; charset=utf-8\n\n{first}\n"
        "--b\nContent-Type: text/html; charset=utf-8\n\n<p>The second part.</p>\n--b--\n"
    )
    seen: dict[str, Any] = {}
    htmls = await _sent_on_the_page(
        chain, sender, bob, _message(chain, sender, bob, "Thursday", body), _reviewing(browser, seen)
    )
    recipient = _in_a_tab(browser, htmls)
    assert len(recipient) == 2 and all(f"{PAYLOAD} ({tell})" in recipient[0]["text"] for tell in TELLS)
    assert [view["text"] for view in seen["views"]] == [drawn["text"] for drawn in recipient]


async def test_nothing_the_message_would_load_connects_while_the_user_reviews_it(
    chain: SubmissionDovecot, browser: WebDriver
) -> None:
    sender, bob, _ = _setup(chain)
    with ExitStack() as stack:
        canaries: dict[str, ConnectionCanary] = {
            kind: stack.enter_context(connection_canary()) for kind in LOADS
        }
        html = "<p>Hello Bob.</p>\n" + "\n".join(
            tag.replace("{url}", canaries[kind].url) for kind, tag in LOADS.items()
        )
        body = f"Content-Type: text/html; charset=utf-8\n\n{html}\n"
        reviewed: dict[str, int] = {}

        def read_a_while() -> None:  # a quiet window after the page and its views loaded
            time.sleep(patient(1))
            reviewed.update({kind: canary.connections for kind, canary in canaries.items()})

        htmls = await _sent_on_the_page(
            chain,
            sender,
            bob,
            _message(chain, sender, bob, "Hello", body),
            _reviewing(browser, {}, read_a_while),
        )
        assert {kind: count for kind, count in reviewed.items() if count} == {}
        _in_a_tab(browser, htmls)
        eventually(lambda: all(canaries[kind].connections for kind in LIVE), what="the canaries connected to")


async def _reviewed(
    chain: SubmissionDovecot, browser: WebDriver, body: str
) -> tuple[dict[str, Any], list[str]]:
    """What the page showed of a draft of MIME ``body``, sent on it, and the HTML parts delivered."""
    sender, bob, _ = _setup(chain)
    seen: dict[str, Any] = {}
    draft = _message(chain, sender, bob, "Picture", body)
    return seen, await _sent_on_the_page(chain, sender, bob, draft, _reviewing(browser, seen))


async def test_a_text_with_an_inline_image_is_approved_on_the_page_which_shows_the_image(
    chain: SubmissionDovecot, browser: WebDriver
) -> None:
    """The question could only say "(unnamed) (image/png, 70 bytes)": the page shows the picture."""
    seen, _ = await _reviewed(
        chain,
        browser,
        'Content-Type: multipart/mixed; boundary="b"\n\n'
        "--b\nContent-Type: text/plain; charset=utf-8\n\nSee the picture.\n"
        f"--b\nContent-Type: image/png\nContent-Disposition: inline\nContent-Transfer-Encoding: base64\n\n{PIXEL}\n"
        "--b--\n",
    )
    assert seen["views"] == [] and seen["pictures"] == [1]


async def test_a_cid_image_is_drawn_from_its_part_and_fetched_from_nowhere(
    chain: SubmissionDovecot, browser: WebDriver
) -> None:
    seen, htmls = await _reviewed(
        chain,
        browser,
        'Content-Type: multipart/related; boundary="r"\n\n'
        '--r\nContent-Type: text/html; charset=utf-8\n\n<p>The picture:</p><img src="cid:pic%40example.net" alt="">\n'
        "--r\nContent-Type: image/png\nContent-ID: <pic@example.net>\nContent-Transfer-Encoding: base64\n\n"
        f"{PIXEL}\n--r--\n",
    )
    assert [view["images"] for view in seen["views"]] == [[1]] and seen["pictures"] == [1]
    assert 'src="cid:pic%40example.net"' in htmls[0]  # sent as written
