"""Opening the user's own browser on a page they must visit (a sign-in; an approval page later), from a
server that runs on their machine.

:class:`BrowserOpener` is the one place that decides whether the server may open a browser and runs it:
only a server serving one local client over stdio may (:meth:`BrowserOpener.for_stdio`; over HTTP the
user sits elsewhere: :meth:`BrowserOpener.never`), only where a graphical browser can show the page
(Windows, macOS; elsewhere ``DISPLAY`` or ``WAYLAND_DISPLAY`` set), and at most once per key (an account's
sign-in) until that attempt ends (:meth:`~BrowserOpener.attempt_ended`) or expires (:data:`ATTEMPT_S`).
``BROWSER`` names the browser when set (the ``os.pathsep``-separated commands Python's webbrowser reads,
``%s`` standing for the URL), and is used without a display too, except for a console browser. The
browser runs detached, its standard streams kept away from the server's (over stdio they are the MCP
connection), and the URL is never logged.

A command line is readable by every user of the machine, so no secret may be on it. Where the owner of a
loopback connection is checked (:func:`.local_peer.checks_peers`, Linux), the address a caller hands over
is one that holds none (a listener's :data:`~.local_peer.LAUNCH_PATH`); elsewhere the URL is written to a
file only this user can read (:mod:`.redirect_file`) and the browser is given that file.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from .local_peer import checks_peers
from .redirect_file import write_redirect_file

#: How long one attempt keeps its key: the page is not opened again for it meanwhile.
ATTEMPT_S = 600.0
#: Browsers that draw in the terminal: over stdio, without a display, they have nowhere to show a page.
_CONSOLE_BROWSERS = frozenset({"www-browser", "links", "links2", "elinks", "lynx", "w3m"})
#: What opens a URL in the desktop's default browser, by platform (Windows: ``os.startfile``).
_DESKTOP_OPENERS = {"darwin": ("open",)}
_FREEDESKTOP_OPENERS = ("xdg-open", "gio", "sensible-browser")

#: Runs a browser command; whether it started.
Launch = Callable[[list[str]], bool]


class BrowserOpener:
    """Opens pages in the user's browser, once per key per attempt (thread-safe).

    ``allowed``: whether this server may open one at all (a stdio server on the user's machine);
    ``environ``, ``platform``, ``launch`` and ``clock`` default to this process's; ``peers_checked``
    to :func:`.local_peer.checks_peers`, and where it is false ``redirect_file`` writes the file that
    the browser is given instead of the URL.
    """

    def __init__(
        self,
        *,
        allowed: bool,
        environ: Mapping[str, str] | None = None,
        platform: str | None = None,
        launch: Launch | None = None,
        clock: Callable[[], float] = time.monotonic,
        attempt_s: float = ATTEMPT_S,
        peers_checked: bool | None = None,
        redirect_file: Callable[[str], Path] = write_redirect_file,
    ) -> None:
        self.allowed = allowed
        self._peers_checked = checks_peers() if peers_checked is None else peers_checked
        self._redirect_file = redirect_file
        self._environ = os.environ if environ is None else environ
        self._platform = sys.platform if platform is None else platform
        self._launch = launch or launch_detached
        self._clock = clock
        self._attempt_s = attempt_s
        self._opened: dict[str, float] = {}
        self._lock = threading.Lock()

    @classmethod
    def for_stdio(cls) -> BrowserOpener:
        """The opener of a server that one local client started over stdio."""
        return cls(allowed=True)

    @classmethod
    def for_terminal(cls) -> BrowserOpener:
        """The opener of a command the user runs in a terminal (``login``)."""
        return cls(allowed=True)

    @classmethod
    def never(cls) -> BrowserOpener:
        """The opener of a server reached over the network: it never opens a browser."""
        return cls(allowed=False)

    def command(self, url: str) -> list[str] | None:
        """The command that would open ``url`` here (``["startfile", url]`` on Windows), or None when no
        graphical browser can show it."""
        if not self.allowed:
            return None
        display = bool(self._environ.get("DISPLAY") or self._environ.get("WAYLAND_DISPLAY"))
        for entry in (self._environ.get("BROWSER") or "").split(os.pathsep):
            argv = _browser_command(entry, url, self._platform)
            if argv is None or (not display and os.path.basename(argv[0]) in _CONSOLE_BROWSERS):
                continue
            if shutil.which(argv[0]) is not None:
                return argv
        if self._platform == "win32":
            return ["startfile", url]
        if self._platform in _DESKTOP_OPENERS:
            return [*_DESKTOP_OPENERS[self._platform], url]
        if not display:
            return None
        for opener in _FREEDESKTOP_OPENERS:
            if shutil.which(opener) is not None:
                return [opener, "open", url] if opener == "gio" else [opener, url]
        return None

    def can_open(self) -> bool:
        """Whether a page could be opened here now."""
        return self.command("https://example.invalid/") is not None

    def open_for_user(self, url: str, key: str) -> bool:
        """Open ``url`` in the user's browser unless it cannot be shown here or ``key``'s attempt already
        opened a page (until :meth:`attempt_ended` or :data:`ATTEMPT_S`); whether it was opened now.
        Where peers are not checked, the browser is given a redirect file holding ``url`` (none written
        when no browser can open, nothing opened when the file cannot be kept private)."""
        if not self.can_open():
            return False
        if not self._peers_checked:
            try:
                page = self._redirect_file(url)
            except OSError:
                return False
            url = str(page) if self._platform == "win32" else page.as_uri()
        argv = self.command(url)
        if argv is None:
            return False
        now = self._clock()
        with self._lock:
            opened_at = self._opened.get(key)
            if opened_at is not None and now - opened_at < self._attempt_s:
                return False
            self._opened[key] = now
        if self._launch(argv):
            return True
        with self._lock:
            self._opened.pop(key, None)
        return False

    def attempt_ended(self, key: str) -> None:
        """``key``'s attempt is over (done, failed or expired): a new one may open the page again."""
        with self._lock:
            self._opened.pop(key, None)


def _browser_command(entry: str, url: str, platform: str) -> list[str] | None:
    """One ``BROWSER`` entry as a command for ``url`` (``%s`` replaced, else the URL appended)."""
    try:
        argv = shlex.split(entry, posix=platform != "win32")
    except ValueError:
        return None
    if not argv:
        return None
    if any("%s" in arg for arg in argv):
        return [arg.replace("%s", url) for arg in argv]
    return [*argv, url]


def launch_detached(argv: list[str]) -> bool:
    """Run ``argv`` in its own session with no terminal streams, reaped in the background; whether it
    started (``["startfile", url]``: Windows' own association for the URL)."""
    if argv[0] == "startfile" and sys.platform == "win32":
        try:
            os.startfile(argv[1])
        except OSError:
            return False
        return True
    try:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=sys.platform != "win32",
            close_fds=True,
        )
    except OSError:
        return False
    threading.Thread(target=process.wait, name="browser-reaper", daemon=True).start()
    return True
