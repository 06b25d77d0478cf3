"""A real browser at the sign-in and at a send's approval: Debian's Chromium, headless, driven through its
chromedriver by selenium (scripts/_bootstrap.sh installs ``chromium`` and ``chromium-driver``).

At the sign-in it opens the authorization URL, signs in on node-oidc-provider's login page, consents (or
presses "Cancel") on its consent page, and follows the provider's redirect to the application's loopback
listener, whose page it waits for. At a send's approval page it reads the page and presses "Send" or
"Don't send", and waits for the page's answer.

Acts for the ``BROWSER`` command the server opens (:func:`relayed_browser`: the command hands the address
to the test process, whose Chromium, kept for the process, opens it). For the sign-in, with
``OIDC_TEST_LOGIN`` (the user to sign in as), ``OIDC_TEST_DECLINE=1`` (cancel on the consent page) and
``OIDC_TEST_DONE`` (a file it writes the loopback page's text to when done) in the command's environment;
for an approval page, with ``APPROVAL_TEST_PRESS`` (``send`` or ``decline``) and ``APPROVAL_TEST_DONE``
(a file it writes the page's text, then the answer's, to). With ``BROWSER_TEST_WAIT_FOR`` (a file) the
command hands nothing on until that file exists: a test holds the user's browser back until another
program has tried the address first. It needs nothing of the project, only selenium.
"""

from __future__ import annotations

import atexit
import json
import os
import shlex
import shutil
import socket
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, suppress
from pathlib import Path
from typing import Any

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
#: Every test's Chromium (this script's and tests/support/clients/chromium_driver.py's): headless, and talking to
#: nothing but the pages a test opens: no GPU, no QUIC, no first-run page, no background requests, updates
#: or sync. Chromium's sandbox needs a non-root user (and often user namespaces a container lacks), so it
#: is off: the pages a test opens are its own.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)
WAIT_S = 60.0


def installed() -> bool:
    return Path(CHROMIUM).is_file() and Path(CHROMEDRIVER).is_file()


def _browser(profile: str) -> webdriver.Chrome:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    os.environ.setdefault("SE_OFFLINE", "true")  # selenium must not look for drivers on the network
    # The browser outlives the test it started in: a home of its own (not that test's HOME), and no D-Bus
    # session of that test's (its keychain's: Chromium aborts when that bus goes).
    home = Path(profile) / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = {name: value for name, value in os.environ.items() if name != "DBUS_SESSION_BUS_ADDRESS"}
    service = Service(executable_path=CHROMEDRIVER, env={**env, "HOME": str(home)})
    driver = webdriver.Chrome(options=options, service=service)
    driver.set_page_load_timeout(WAIT_S)
    return driver


def sign_in(url: str, login: str, decline: bool = False) -> str:
    """Sign in as ``login`` at ``url`` and consent (or cancel) in headless Chromium; the text of the page
    the provider's redirect led to (the application's loopback listener's)."""
    with _BROWSERS.one() as driver:
        # Every site's cookies gone (the provider's session of an earlier sign-in): a new user's browser.
        driver.execute_cdp_cmd("Network.clearBrowserCookies", {})
        driver.get(url)  # the application's launch address forwards to the provider's
        wait = WebDriverWait(driver, WAIT_S)
        wait.until(lambda d: d.find_elements(By.NAME, "login"))
        issuer = "{0.scheme}://{0.netloc}".format(urllib.parse.urlsplit(driver.current_url))
        driver.find_element(By.NAME, "login").send_keys(login)
        driver.find_element(By.NAME, "password").send_keys("any")
        driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "input[name=prompt][value=consent]"))
        if decline:
            driver.find_element(By.LINK_TEXT, "[ Cancel ]").click()
        else:
            driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        wait.until(lambda d: not d.current_url.startswith(issuer) and d.find_elements(By.TAG_NAME, "body"))
        return str(driver.find_element(By.TAG_NAME, "body").text)


class _Browsers:
    """The process's idle approval browsers, each started once (about 0.8 CPU-seconds: most of a test of an
    approval page) and handed to one page at a time: a page that went wrong quits its browser, a page that
    went right leaves it blank, without cookies, for the next. All quit when the process ends."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[tuple[webdriver.Chrome, str]] = []
        self._all: list[tuple[webdriver.Chrome, str]] = []
        atexit.register(self.quit_all)

    @contextmanager
    def one(self) -> Iterator[webdriver.Chrome]:
        with self._lock:
            taken = self._idle.pop() if self._idle else None
        if taken is None:
            profile = tempfile.mkdtemp(prefix="chromium-profile-")
            taken = (_browser(profile), profile)
            with self._lock:
                self._all.append(taken)
        try:
            yield taken[0]
        except BaseException:
            self._quit(taken)
            raise
        try:
            taken[0].execute_cdp_cmd("Network.clearBrowserCookies", {})
            taken[0].get("about:blank")
        except Exception:
            self._quit(taken)
            return
        with self._lock:
            self._idle.append(taken)

    def _quit(self, taken: tuple[webdriver.Chrome, str]) -> None:
        with self._lock:
            if taken in self._all:
                self._all.remove(taken)
        with suppress(Exception):
            taken[0].quit()
        shutil.rmtree(taken[1], ignore_errors=True)

    def quit_all(self) -> None:
        with self._lock:
            left, self._idle = list(self._all), []
        for taken in left:
            self._quit(taken)


_BROWSERS = _Browsers()


def pooled() -> AbstractContextManager[webdriver.Chrome]:
    """One of the process's headless Chromium browsers (the approval pages'), for a test module that
    drives it itself; given back, blank, when it is done."""
    return _BROWSERS.one()


@contextmanager
def _opened(url: str) -> Iterator[tuple[webdriver.Chrome, str]]:
    """A headless Chromium of the process's showing the approval page at ``url``, and the page's text."""
    with _BROWSERS.one() as driver:
        driver.get(url)
        WebDriverWait(driver, WAIT_S).until(lambda d: d.find_elements(By.ID, "approve"))
        yield driver, str(driver.find_element(By.TAG_NAME, "body").text)


def _answer(driver: webdriver.Chrome) -> str:
    WebDriverWait(driver, WAIT_S).until(lambda d: d.find_elements(By.ID, "answer"))
    return str(driver.find_element(By.TAG_NAME, "body").text)


def open_approval_page(driver: webdriver.Chrome, url: str) -> WebDriverWait[webdriver.Chrome]:
    """Show the approval page at ``url`` in ``driver`` (a test's own Chromium) until its buttons are there;
    the patient wait, for what the test reads next."""
    driver.get(url)
    wait: WebDriverWait[webdriver.Chrome] = WebDriverWait(driver, WAIT_S)
    wait.until(lambda d: d.find_elements(By.ID, "approve"))
    return wait


def press_send(driver: webdriver.Chrome, wait: WebDriverWait[webdriver.Chrome]) -> None:
    """Press the page's "Send" in ``driver``, wait for the answer it brings up, and leave the page."""
    driver.find_element(By.ID, "approve").click()
    wait.until(lambda d: d.find_elements(By.ID, "answer"))
    driver.get("about:blank")


def answer_approval(url: str, press: str, before_press: Callable[[], None] | None = None) -> tuple[str, str]:
    """Open the approval page at ``url`` in headless Chromium and press ``press`` (``decline``: the declining
    button; anything else, ``send`` or ``approve``: the approving one), calling ``before_press`` first (what happens while the user reads, e.g.
    the page's time running out); the page's text and the text of the answer its form brought up."""
    with _opened(url) as (driver, shown):
        if before_press is not None:
            before_press()
        driver.find_element(By.ID, "decline" if press == "decline" else "approve").click()
        return shown, _answer(driver)


def sending_browser(seen: list[str]) -> Callable[[str], bool]:
    """A user's browser for ``approval_page``: each page opened in headless Chromium, its text kept in
    ``seen``, and "Send" pressed."""
    return pressing_browser("send", seen)


def pressing_browser(
    press: str, seen: list[str], before_press: Callable[[], None] | None = None
) -> Callable[[str], bool]:
    """A user's browser for ``approval_page``: each page opened in headless Chromium, its text kept in
    ``seen``, ``before_press`` called (what happens while the user reads), then ``press`` pressed
    (:func:`answer_approval`'s words)."""

    def browser(url: str) -> bool:
        shown, _ = answer_approval(url, press, before_press)
        seen.append(shown)
        return True

    return browser


def late_browser(
    clock: Any, lifetime_s: float, press: str, answers: list[tuple[str, str]]
) -> Callable[[str], bool]:
    """A user's browser that presses ``press`` only once the page's ``lifetime_s`` ran out on ``clock``
    (a :class:`~tests.support.fake_clock.FakeClock` the page is timed by; moved a second past it, never by
    exactly it), keeping each page's text and the answer it brought up in ``answers``."""

    def away() -> None:
        clock.now += lifetime_s + 1

    def browser(url: str) -> bool:
        answers.append(answer_approval(url, press, before_press=away))
        return True

    return browser


def reload_approval(url: str) -> tuple[str, str]:
    """Open the approval page at ``url`` in headless Chromium and reload it, as a user pressing F5 (or a
    restored tab) does; the page's text and the text the reload brought up."""
    with _opened(url) as (driver, shown):
        driver.refresh()
        return shown, _answer(driver)


def _write(path: str, text: str) -> None:
    Path(path + ".part").write_text(text)
    os.replace(path + ".part", path)


def act(url: str, env: Mapping[str, str]) -> None:
    """What the user does at ``url`` opened in their browser, as ``env``'s words say (module docstring)."""
    if "APPROVAL_TEST_PRESS" in env:
        time.sleep(float(env.get("APPROVAL_TEST_DELAY_S", "0")))  # the user comes to the page later
        page, answered = answer_approval(url, env["APPROVAL_TEST_PRESS"])
        _write(env["APPROVAL_TEST_DONE"], page + "\n--- answer ---\n" + answered)
        return
    shown = sign_in(url, env["OIDC_TEST_LOGIN"], decline=env.get("OIDC_TEST_DECLINE") == "1")
    if done := env.get("OIDC_TEST_DONE"):
        _write(done, shown)


class _Relay:
    """The test process's end of :mod:`tests.support.clients.browser_relay`: a Unix socket whose every
    connection brings an address for :func:`act`, answered ``done`` (or ``failed``) when it was."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._command: str | None = None

    def command(self) -> str:
        with self._lock:
            if self._command is None:
                directory = tempfile.mkdtemp(prefix="browser-relay-")
                path = os.path.join(directory, "relay.sock")
                listener = socket.socket(socket.AF_UNIX)
                listener.bind(path)
                listener.listen()
                threading.Thread(target=self._serve, args=(listener,), daemon=True).start()
                atexit.register(shutil.rmtree, directory, True)
                script = str(Path(__file__).with_name("browser_relay.py"))
                self._command = " ".join(shlex.quote(word) for word in (sys.executable, script, path)) + " %s"
            return self._command

    def _serve(self, listener: socket.socket) -> None:
        while True:
            connection, _ = listener.accept()
            threading.Thread(target=self._one, args=(connection,), daemon=True).start()

    @staticmethod
    def _one(connection: socket.socket) -> None:
        with connection:
            asked = json.loads(connection.makefile("rb").readline())
            try:
                act(asked["url"], asked["env"])
            except Exception as failed:  # the command fails, as the browser's own run did
                print(f"browser_relay: {failed!r}", file=sys.stderr)
                connection.sendall(b"failed\n")
                return
            connection.sendall(b"done\n")


_RELAY = _Relay()


def relayed_browser() -> str:
    """A ``BROWSER`` command (``%s``: the address) whose addresses this process's headless Chromium opens
    and acts on as the command's ``OIDC_TEST_*`` / ``APPROVAL_TEST_*`` environment says."""
    return _RELAY.command()
