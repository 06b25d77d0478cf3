"""The sign-in's loopback listener (net/loopback_redirect.py) over real HTTP on 127.0.0.1 (issue 56 items 1
and 4): it takes as its one answer only a request for its own Host carrying its sign-in's ``state``; any
other is answered and the sign-in goes on. Its launch address forwards the browser to the authorization
URL, so the browser's command line holds no secret; the owner of a connection is checked here by
:mod:`mail_imap_mcp.net.local_peer` (this user's: served)."""

from __future__ import annotations

import http.client
import threading
from collections.abc import Iterator

import pytest

from mail_imap_mcp.net.local_peer import LAUNCH_PATH, checks_peers
from mail_imap_mcp.net.loopback_redirect import CALLBACK_PATH, RedirectListener
from tests.support.patience import patient

AUTHORIZATION = "https://provider.test/authorize?client_id=app&state=the-state&code_challenge=c"
STATE = "the-state"


@pytest.fixture
def listener() -> Iterator[RedirectListener]:
    with RedirectListener() as listening:
        listening.expect(AUTHORIZATION, STATE)
        yield listening


def get(listener: RedirectListener, path: str, host: str | None = None) -> tuple[int, str, str]:
    """The status, Location and text of one GET (``host``: its Host header, the listener's by default)."""
    connection = http.client.HTTPConnection("127.0.0.1", listener.port, timeout=patient(10))
    connection.putrequest("GET", path, skip_host=True)
    connection.putheader("Host", host or f"127.0.0.1:{listener.port}")
    connection.endheaders()
    answer = connection.getresponse()
    try:
        return answer.status, answer.getheader("Location") or "", answer.read().decode()
    finally:
        connection.close()


def serve(listener: RedirectListener) -> tuple[threading.Thread, list[str | None]]:
    taken: list[str | None] = []
    thread = threading.Thread(target=lambda: taken.append(listener.wait(patient(30))), daemon=True)
    thread.start()
    return thread, taken


def test_only_the_answer_for_its_host_and_state_ends_the_sign_in(listener: RedirectListener) -> None:
    thread, taken = serve(listener)
    forged = get(listener, f"{CALLBACK_PATH}?code=forged&state=forged")
    assert forged[0] == 400 and "not the answer to the sign-in" in forged[2]
    assert get(listener, f"{CALLBACK_PATH}?code=no-state")[0] == 400
    rebound = get(listener, f"{CALLBACK_PATH}?code=c&state={STATE}", host="rebound.test")
    assert rebound[0] == 421
    assert get(listener, "/favicon.ico")[0] == 404
    assert listener.received is None  # none of them ended it
    status, _, page = get(listener, f"{CALLBACK_PATH}?code=the-code&state={STATE}")
    thread.join(patient(30))
    assert status == 200 and "Signed in to mail-imap-mcp" in page and "return to the terminal" in page
    assert taken == [f"{listener.redirect_uri}?code=the-code&state={STATE}"]


def test_without_an_expected_state_no_answer_is_taken() -> None:
    with RedirectListener() as listener:
        thread, taken = serve(listener)
        assert get(listener, f"{CALLBACK_PATH}?code=c&state=anything")[0] == 400
        assert listener.received is None
        listener.expect(AUTHORIZATION, STATE)  # the answer it was waiting for ends it
        get(listener, f"{CALLBACK_PATH}?code=c&state={STATE}")
        thread.join(patient(30))
    assert taken and taken[0] is not None


@pytest.mark.skipif(not checks_peers(), reason="the owner of a connection is read on Linux only")
def test_the_launch_address_holds_no_secret_and_forwards_this_users_browser(
    listener: RedirectListener,
) -> None:
    assert listener.opening_url == f"http://127.0.0.1:{listener.port}{LAUNCH_PATH}"
    assert STATE not in listener.opening_url and "provider.test" not in listener.opening_url
    thread, _ = serve(listener)
    status, location, _ = get(listener, LAUNCH_PATH)
    assert (status, location) == (303, AUTHORIZATION)
    assert listener.received is None  # forwarding is not an answer
    get(listener, f"{CALLBACK_PATH}?code=c&state={STATE}")
    thread.join(patient(30))
