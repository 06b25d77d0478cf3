"""The approval page of a send in a real browser (issue 49): Debian's headless Chromium opens the page
``ask`` hands to its opener, as the user's browser would. It shows exactly what will be sent; "Send"
approves once; "Don't send", an expired page, a page opened twice, a token of another message, a GET,
an answer from another origin or for another Host decide nothing. A page that decides nothing is then
answered by the user, and the decision is the user's: the attempt before it neither approved, nor
declined, nor voided the approval (except a second opening, which voids it on purpose).

Each test's log (every logger, at DEBUG) is searched for the page's address and tokens afterwards.
"""

from __future__ import annotations

import asyncio
import logging
import urllib.parse
from collections.abc import Callable, Iterator

import pytest
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from mail_imap_mcp.asking.page_server import Outcome, PageDecision, ask
from mail_imap_mcp.content.html_view import shown_copy
from mail_imap_mcp.services.send_page import MessagePage
from tests.support.clients.chromium_driver import chromium
from tests.support.patience import patient
from tests.support.servers.loopback_http import RecordingSite, recording_site

DIGEST = "sha256:" + "5e" * 32
OTHER_DIGEST = "sha256:" + "a7" * 32
REBOUND = "rebound.test"  # a name the browser resolves to 127.0.0.1, as a DNS-rebinding attacker's would


#: Another site on loopback: serves the pages a test puts in ``pages`` and records every request.
Hostile = RecordingSite


@pytest.fixture(scope="module")
def hostile() -> Iterator[Hostile]:
    with recording_site() as site:
        yield site


@pytest.fixture(scope="module")
def chrome(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    profile = tmp_path_factory.mktemp("chromium") / "profile"
    with chromium(profile, f"--host-resolver-rules=MAP {REBOUND} 127.0.0.1") as driver:
        yield driver


@pytest.fixture
def browser(chrome: WebDriver, hostile: Hostile) -> Iterator[WebDriver]:
    hostile.pages.clear()
    hostile.hits.clear()
    yield chrome
    for handle in chrome.window_handles[1:]:
        chrome.switch_to.window(handle)
        chrome.close()
    chrome.switch_to.window(chrome.window_handles[0])
    chrome.get("about:blank")


class Clock:
    def __init__(self) -> None:
        self.now = 50_000.0

    def __call__(self) -> float:
        return self.now


def message(**fields: object) -> MessagePage:
    return MessagePage.model_validate(
        {
            "digest": DIGEST,
            "from": "Ann Example <ann@example.org>",
            "to": ["Bob <bob@example.net>"],
            "subject": "Re: the figures",
            "text": "Hi Bob,\n\nthe figures are attached.\n\nAnn",
            **fields,
        }
    )


@pytest.fixture
def approve(caplog: pytest.LogCaptureFixture) -> Iterator[Callable[..., PageDecision]]:
    """``approve(request, scenario, ...)``: ``ask`` with an opener that opens the page and acts the
    ``scenario`` (the user, or an attacker, at the browser); afterwards no log line holds the page's
    address or its form token."""
    caplog.set_level(logging.DEBUG)
    secrets: list[str] = []

    def run(
        request: MessagePage,
        scenario: Callable[[str], None],
        timeout: float | None = None,
        clock: Callable[[], float] | None = None,
    ) -> PageDecision:
        failures: list[BaseException] = []

        def open_url(url: str) -> bool:
            secrets.append(urllib.parse.urlsplit(url).path.rsplit("/", 1)[1])
            try:
                scenario(url)
            except BaseException as failure:  # re-raised in the test, not taken as "could not open"
                failures.append(failure)
            return True

        extra = {} if clock is None else {"clock": clock}
        lifetime = patient(30) if timeout is None else timeout  # the page's, when not under test
        decision = asyncio.run(ask(request, open_url, lifetime, **extra))
        if failures:
            raise failures[0]
        return decision

    yield run
    logged = [
        record.getMessage()
        for record in caplog.get_records("call")
        if not record.name.startswith(("selenium", "urllib3"))  # the test's own driver of the browser
    ]
    assert secrets
    assert [line for line in logged for secret in secrets if secret in line] == []


def answer(browser: WebDriver) -> str:
    """The title of the page a form's answer brought up."""
    WebDriverWait(browser, patient(15)).until(lambda driver: driver.find_elements(By.ID, "answer"))
    return str(browser.find_element(By.ID, "answer").text)


def form_field(browser: WebDriver, name: str) -> str:
    return str(browser.find_element(By.CSS_SELECTOR, f'input[name="{name}"]').get_attribute("value"))


def texts(browser: WebDriver, selector: str) -> list[str]:
    return [
        str(element.get_property("textContent"))
        for element in browser.find_elements(By.CSS_SELECTOR, selector)
    ]


def test_the_page_shows_exactly_what_will_be_sent_and_send_approves(
    browser: WebDriver, hostile: Hostile, approve: Callable[..., PageDecision]
) -> None:
    remote = f"http://127.0.0.1:{hostile.port}"
    source = (
        f'<link rel="stylesheet" href="{remote}/style.css"><p style="background:url({remote}/bg.png)">'
        f'Hello <b>Bob</b></p><script src="{remote}/script.js"></script><script>document.title="owned"</script>'
        f'<img src="{remote}/pixel.png" alt="logo"><iframe src="{remote}/frame"></iframe>'
        '<p>See <a href="https://example.org/q3">the report</a>.</p>'
        f'<p><a id="away" href="{remote}/away">Log in to approve</a></p>'
        '<div style="display:none">account 4711 password hunter2</div><!-- more data -->'
    )
    request = message(
        to=["Bob <bob@example.net>", "Zoë Ünal <zoe@example.net>"],
        cc=["carol@example.com"],
        bcc=["archive@example.org"],
        reply_to=["ann.private@example.org"],
        subject="Re: the figures — Q3 <final>",
        text="Hi Bob,\n\n  indented line\n<b>not markup</b> & more\n\nAnn\n",
        html=source,
        views=[shown_copy(source)],
        attachments=[
            {"name": "figures.xlsx", "size": 48_213, "content_type": "application/vnd.ms-excel"},
            {"name": "notes.txt", "size": 12},
        ],
    )
    seen: dict[str, object] = {}

    def user(url: str) -> None:
        browser.get(url)
        seen["title"] = browser.title
        seen["from"] = texts(browser, "#from")
        for key in ("to", "cc", "bcc", "reply-to"):
            seen[key] = texts(browser, f"#{key} li > bdi")
        seen["subject"] = texts(browser, "#subject")
        seen["text"] = texts(browser, "#text")
        seen["sandbox"] = browser.find_element(By.ID, "html").get_attribute("sandbox")
        seen["resources"] = texts(browser, "#resources li")
        browser.switch_to.frame(browser.find_element(By.ID, "html"))
        seen["html"] = browser.find_element(By.TAG_NAME, "body").get_property("innerHTML")
        seen["html_text"] = browser.find_element(By.TAG_NAME, "body").text
        seen["frame_title"] = browser.execute_script("return document.title")
        browser.find_element(By.ID, "away").click()  # opens nothing: no popup, the page stays
        browser.switch_to.default_content()
        seen["page_after_click"] = browser.find_elements(By.ID, "approve") != []
        seen["source"] = texts(browser, "#html-source")
        seen["source_shown"] = browser.find_element(By.ID, "html-source").is_displayed()
        browser.find_element(By.CSS_SELECTOR, "details summary").click()
        seen["source_opened"] = browser.find_element(By.ID, "html-source").is_displayed()
        seen["names"] = texts(browser, "#attachments .name")
        seen["sizes"] = texts(browser, "#attachments .size")
        seen["loaded"] = browser.execute_script(
            "return performance.getEntriesByType('resource').map(entry => entry.name)"
        )
        seen["csrf_in_url"] = form_field(browser, "csrf") in browser.current_url
        browser.find_element(By.ID, "approve").click()
        seen["answer"] = answer(browser)

    decision = approve(request, user)

    assert decision == PageDecision(outcome=Outcome.APPROVED, digest=DIGEST) and decision.approved
    assert seen["answer"] == "Approved"
    assert seen["title"] == "Send this message? - mail-imap-mcp"
    assert seen["from"] == [request.from_]
    assert seen["to"] == request.to and seen["cc"] == request.cc and seen["bcc"] == request.bcc
    assert seen["reply-to"] == request.reply_to and seen["subject"] == [request.subject]
    assert seen["text"] == [request.text]
    # The HTML as it is, rendered in a frame sandboxed in its own origin: no script ran.
    html = str(seen["html"])
    assert seen["sandbox"] == "allow-scripts" and "Hello <b>Bob</b>" in html
    assert 'href="https://example.org/q3"' in html
    assert seen["frame_title"] != "owned" and seen["page_after_click"]
    assert "Hello Bob" in str(seen["html_text"]) and "the report" in str(seen["html_text"])
    # What the rendering leaves out (hidden text, a comment, the markup) is in the source, one click away,
    # and every address it would load from is listed.
    assert "hunter2" not in str(seen["html_text"]) and seen["source"] == [request.html]
    assert seen["resources"] == [
        f"{remote}/{name}" for name in ("style.css", "bg.png", "script.js", "pixel.png", "frame")
    ]
    assert seen["source_shown"] is False and seen["source_opened"] is True
    assert seen["names"] == ["figures.xlsx", "notes.txt"]
    assert seen["sizes"] == ["47.1 KB (48,213 bytes)", "12 bytes"]
    # Nothing was fetched from anywhere: no image, style, script or frame of the message's.
    # (The frame's own timing entries list what its policy refused; the server on loopback saw nothing.)
    # The page loaded its view alone, from its own address.
    assert [entry for entry in seen["loaded"] if not entry.endswith("?view=1")] == [] and hostile.hits == []
    assert seen["csrf_in_url"] is False


def test_the_declining_button_declines(browser: WebDriver, approve: Callable[..., PageDecision]) -> None:
    def user(url: str) -> None:
        browser.get(url)
        browser.find_element(By.ID, "decline").click()
        assert answer(browser) == "Not sent"

    assert approve(message(), user) == PageDecision(outcome=Outcome.DECLINED)


def test_an_expired_page_decides_nothing(browser: WebDriver, approve: Callable[..., PageDecision]) -> None:
    clock = Clock()

    def user(url: str) -> None:
        browser.get(url)
        clock.now += 120 + 1  # past the page's life, on the clock it is timed by (never by exactly it)
        browser.find_element(By.ID, "approve").click()
        assert answer(browser) == "Expired"

    decision = approve(message(), user, timeout=120, clock=clock)
    assert decision == PageDecision(outcome=Outcome.EXPIRED) and not decision.approved


def test_a_page_opened_twice_decides_nothing(
    browser: WebDriver, approve: Callable[..., PageDecision]
) -> None:
    def user(url: str) -> None:
        browser.get(url)
        first = browser.current_window_handle
        browser.switch_to.new_window("tab")
        browser.get(url)
        assert answer(browser) == "Request cancelled"
        browser.close()  # a headless background tab may be throttled: the page's tab is the only one again
        browser.switch_to.window(first)
        browser.find_element(By.ID, "approve").click()
        # The listener is closed once the approval is void, or it answers that it was decided.
        WebDriverWait(browser, patient(15)).until(lambda driver: driver.find_elements(By.ID, "approve") == [])
        assert "Approved" not in browser.page_source

    decision = approve(message(), user)
    assert decision == PageDecision(outcome=Outcome.OPENED_TWICE) and not decision.approved


def test_a_get_never_decides(browser: WebDriver, approve: Callable[..., PageDecision]) -> None:
    def user(url: str) -> None:
        fields = {"decision": "approve", "csrf": "guess", "digest": DIGEST}
        browser.get(f"{url}?{urllib.parse.urlencode(fields)}")
        assert browser.find_elements(By.ID, "approve")  # the page, not a decision
        browser.find_element(By.ID, "decline").click()
        assert answer(browser) == "Not sent"

    assert approve(message(), user) == PageDecision(outcome=Outcome.DECLINED)


def test_a_get_with_the_forms_own_fields_decides_nothing(
    browser: WebDriver, approve: Callable[..., PageDecision]
) -> None:
    def user(url: str) -> None:
        browser.get(url)
        fields = {"decision": "approve", "csrf": form_field(browser, "csrf"), "digest": DIGEST}
        browser.get(f"{url}?{urllib.parse.urlencode(fields)}")
        assert answer(browser) == "Request cancelled"

    decision = approve(message(), user)
    assert decision == PageDecision(outcome=Outcome.OPENED_TWICE) and not decision.approved


def _attack_page(target: str, csrf: str, digest: str) -> str:
    return (
        f'<!doctype html><form method="post" action="{target}">'
        f'<input type="hidden" name="csrf" value="{csrf}"><input type="hidden" name="digest" value="{digest}">'
        '<button id="go" name="decision" value="approve">Claim a prize</button></form>'
    )


def _refused_from_another_site(browser: WebDriver, hostile: Hostile, target: str, attacker: str) -> None:
    """From the page now open, its form token leaked to another site (the hostile server by the name
    ``attacker``): that site's form, opened in a new tab, posts "Send" to ``target`` and is refused; the
    tab is closed and the page is current again."""
    page = browser.current_window_handle
    hostile.pages["/attack"] = _attack_page(target, form_field(browser, "csrf"), DIGEST)
    browser.switch_to.new_window("tab")
    browser.get(f"http://{attacker}:{hostile.port}/attack")
    browser.find_element(By.ID, "go").click()
    assert answer(browser) == "Refused"
    browser.close()
    browser.switch_to.window(page)


@pytest.mark.parametrize("attacker", ["localhost", "127.0.0.1"])
def test_an_answer_from_another_origin_decides_nothing(
    browser: WebDriver, hostile: Hostile, approve: Callable[..., PageDecision], attacker: str
) -> None:
    """Even with the page's address and form token leaked to it, another site's form decides nothing."""

    def user(url: str) -> None:
        browser.get(url)
        _refused_from_another_site(browser, hostile, url, attacker)
        browser.find_element(By.ID, "decline").click()
        assert answer(browser) == "Not sent"

    assert approve(message(), user) == PageDecision(outcome=Outcome.DECLINED)


def test_a_request_for_another_host_decides_nothing(
    browser: WebDriver, hostile: Hostile, approve: Callable[..., PageDecision]
) -> None:
    """DNS rebinding: a site whose name now points at 127.0.0.1 reaches the listener under its own name."""

    def user(url: str) -> None:
        parts = urllib.parse.urlsplit(url)
        rebound = parts._replace(netloc=f"{REBOUND}:{parts.port}").geturl()
        browser.get(rebound)
        assert answer(browser) == "Refused"
        browser.get(url)  # the refused request did not use up the one-time address
        _refused_from_another_site(browser, hostile, rebound, REBOUND)
        browser.find_element(By.ID, "approve").click()
        assert answer(browser) == "Approved"

    assert approve(message(), user) == PageDecision(outcome=Outcome.APPROVED, digest=DIGEST)


def test_a_token_of_another_message_decides_nothing(
    browser: WebDriver, approve: Callable[..., PageDecision]
) -> None:
    earlier: dict[str, str] = {}

    def first(url: str) -> None:
        browser.get(url)
        earlier["csrf"] = form_field(browser, "csrf")
        browser.find_element(By.ID, "decline").click()
        assert answer(browser) == "Not sent"

    assert approve(message(digest=OTHER_DIGEST), first) == PageDecision(outcome=Outcome.DECLINED)

    def tampered(csrf: str | None, digest: str | None) -> str:
        """Sends the page's form with a field replaced, its answer in a tab of its own; that answer."""
        page = browser.current_window_handle
        browser.execute_script(
            "const form = document.forms[0]; form.target = '_blank';"
            "if (arguments[0] !== null) form.csrf.value = arguments[0];"
            "if (arguments[1] !== null) form.digest.value = arguments[1];",
            csrf,
            digest,
        )
        browser.find_element(By.ID, "approve").click()
        WebDriverWait(browser, patient(15)).until(lambda driver: len(driver.window_handles) == 2)
        browser.switch_to.window(next(handle for handle in browser.window_handles if handle != page))
        title = answer(browser)
        browser.close()
        browser.switch_to.window(page)
        return title

    def user(url: str) -> None:
        browser.get(url)
        own = form_field(browser, "csrf")
        assert tampered(earlier["csrf"], None) == "Refused"  # the other message's page token
        assert tampered(own, OTHER_DIGEST) == "Refused"  # this page's token, the other message's digest
        assert tampered(own, DIGEST) == "Approved"

    assert approve(message(), user) == PageDecision(outcome=Outcome.APPROVED, digest=DIGEST)
