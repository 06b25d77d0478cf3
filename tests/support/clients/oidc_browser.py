"""A stand-in for the person at the browser: follows an authorization URL through node-oidc-provider's
development login and consent pages with an HTTP client (cookies kept), then delivers the provider's
redirect to the application's loopback listener. Standard library only, so that it also runs as the
``BROWSER`` command ``login`` opens: ``python oidc_browser.py <url>`` with ``OIDC_TEST_LOGIN`` (the user
to sign in as), ``OIDC_TEST_DECLINE=1`` (press "cancel" on the consent page), ``OIDC_TEST_STATE`` (a
``state`` put in the redirect in place of the provider's, as a forged redirect would) and
``OIDC_TEST_REDIRECT_PORT`` (the authorization request's loopback redirect moved to that port, as a page
that rewrote it would: the provider, which takes any loopback port of a native app, sends the browser
there), ``OIDC_TEST_SEEN`` (a file it writes the authorization URL it was led to) and
``OIDC_TEST_BREAK_DIR`` (a directory replaced by a file before signing in: a store that fails after
``login`` checked it) in its environment.
"""

from __future__ import annotations

import http.cookiejar
import os
import re
import shutil
import sys
import urllib.error
import urllib.parse
import urllib.request

_PROMPT = re.compile(r'name="prompt" value="(login|consent)"')


class _Stay(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None  # every redirect is looked at here before it is followed


_XSRF = re.compile(r'name="xsrf" value="([^"]+)"')


def approve(
    url: str,
    login: str,
    decline: bool = False,
    deliver: bool = True,
    state: str | None = None,
    user_code: str | None = None,
) -> str:
    """Sign in as ``login`` and consent (or decline); returns the URL the provider redirected to at the
    end (its ``state`` replaced by ``state`` if given), which it also requests (``deliver``) as the
    browser would. With ``user_code``, ``url`` is the device flow's verification page: the code is
    typed and confirmed first, and the provider's own page ends it (its URL is returned)."""
    url = launched(url)
    if seen := os.environ.get("OIDC_TEST_SEEN"):
        with open(seen, "w", encoding="utf-8") as file:
            file.write(url)
    issuer = urllib.parse.urlsplit(url)._replace(path="", query="", fragment="").geturl()
    opener = urllib.request.build_opener(
        urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()), _Stay()
    )
    data: bytes | None = None
    for _ in range(20):
        try:
            response = opener.open(urllib.request.Request(url, data=data), timeout=30)
        except urllib.error.HTTPError as redirect:
            if redirect.code not in (302, 303):
                raise
            url = urllib.parse.urljoin(url, redirect.headers["Location"])
            data = None
            if not url.startswith(issuer + "/"):
                return _leave(url, deliver, state)
            continue
        page = response.read().decode("utf-8", "replace")
        prompt, xsrf = _PROMPT.search(page), _XSRF.search(page)
        if user_code is not None and xsrf is not None:  # the device flow's code, then its confirmation
            form = {"xsrf": xsrf.group(1), "user_code": user_code}
            if "op.deviceConfirmForm" in page:
                form["abort" if decline else "confirm"] = "yes"
            url, data = urllib.parse.urljoin(url, "/device"), urllib.parse.urlencode(form).encode()
        elif prompt is None and user_code is not None:
            return url  # the device flow's last page
        elif prompt is None:
            raise RuntimeError(f"no login or consent form at {url}: {page[:300]!r}")
        elif prompt.group(1) == "consent" and decline:
            url, data = url.rstrip("/") + "/abort", None
        elif prompt.group(1) == "consent":
            data = b"prompt=consent"
        else:
            data = urllib.parse.urlencode({"prompt": "login", "login": login, "password": "any"}).encode()
    raise RuntimeError("the provider kept redirecting")


def launched(url: str) -> str:
    """Where the address the application gave the browser leads: a loopback listener's launch address
    (``/start``) forwards to the authorization URL; any other is that URL already."""
    if urllib.parse.urlsplit(url).path != "/start":
        return url
    try:
        urllib.request.build_opener(_Stay()).open(url, timeout=30)
    except urllib.error.HTTPError as redirect:
        if redirect.code == 303:
            return str(redirect.headers["Location"])
        raise
    raise RuntimeError(f"{url} did not forward to the sign-in")


def _leave(url: str, deliver: bool, state: str | None) -> str:
    """The redirect back to the application: its ``state`` replaced if asked, requested if asked."""
    if state is not None:
        parts = urllib.parse.urlsplit(url)
        query = dict(urllib.parse.parse_qsl(parts.query)) | {"state": state}
        url = parts._replace(query=urllib.parse.urlencode(query)).geturl()
    if deliver:
        with urllib.request.urlopen(url, timeout=30) as answer:
            answer.read()
    return url


def with_redirect_port(url: str, port: int) -> str:
    """``url`` (an authorization request) with its ``redirect_uri`` moved to ``port``."""
    parts = urllib.parse.urlsplit(url)
    query = dict(urllib.parse.parse_qsl(parts.query))
    redirect = urllib.parse.urlsplit(query["redirect_uri"])
    query["redirect_uri"] = redirect._replace(netloc=f"{redirect.hostname}:{port}").geturl()
    return parts._replace(query=urllib.parse.urlencode(query)).geturl()


if __name__ == "__main__":
    if broken := os.environ.get("OIDC_TEST_BREAK_DIR"):
        shutil.rmtree(broken, ignore_errors=True)
        with open(broken, "w"):
            pass
    moved = os.environ.get("OIDC_TEST_REDIRECT_PORT")
    approve(
        with_redirect_port(launched(sys.argv[1]), int(moved)) if moved else sys.argv[1],
        os.environ["OIDC_TEST_LOGIN"],
        decline=os.environ.get("OIDC_TEST_DECLINE") == "1",
        state=os.environ.get("OIDC_TEST_STATE"),
    )
