"""The approval page's listener spoken to byte by byte: what a browser never sends (no Origin, two Hosts,
a chunked or oversized body, a preflight, a text/plain form) decides nothing, a second answer is refused,
no response carries a CORS header, and ``ask``'s own ends (the opener failing, the time running out)."""

from __future__ import annotations

import asyncio
import logging
import re
import threading
import urllib.parse
from collections.abc import Awaitable, Callable

import pytest

from mail_imap_mcp.asking.page_server import ApprovalServer, Outcome, PageDecision, ask, ask_blocking
from mail_imap_mcp.asking.page_server.page import VIEW_POLICY, review_page
from mail_imap_mcp.asking.review import Review, ReviewField
from mail_imap_mcp.services.send_page import MessagePage
from tests.support.patience import patient

DIGEST = "sha256:" + "11" * 32


def message() -> MessagePage:
    return MessagePage.model_validate(
        {"digest": DIGEST, "from": "ann@example.org", "to": ["bob@example.net"], "text": "Hello"}
    )


async def exchange(port: int, raw: bytes) -> tuple[int, dict[str, str], str]:
    """Sends ``raw`` as it is; the status, headers (lower-cased names) and body of the answer (0 when the
    connection was closed without one)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(raw)
    await writer.drain()
    data = await reader.read()
    writer.close()
    if not data:
        return 0, {}, ""
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
    assert not [name for name in headers if name.startswith("access-control-")]
    return int(status_line.split(" ")[1]), headers, body.decode()


def get(server: ApprovalServer, path: str | None = None, host: str | None = None) -> bytes:
    return (
        f"GET {path or server.slot.path} HTTP/1.1\r\n"
        + ("" if host == "<none>" else f"Host: {f'127.0.0.1:{server.port}' if host is None else host}\r\n")
        + "\r\n"
    ).encode()


def post(
    server: ApprovalServer,
    fields: dict[str, str],
    *,
    origin: str | None = "<own>",
    content_type: str = "application/x-www-form-urlencoded",
    extra: str = "",
) -> bytes:
    body = urllib.parse.urlencode(fields)
    own = f"http://127.0.0.1:{server.port}"
    origin_line = "" if origin is None else f"Origin: {own if origin == '<own>' else origin}\r\n"
    return (
        f"POST {server.slot.path} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n{origin_line}"
        f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n{extra}\r\n{body}"
    ).encode()


def with_server(scenario: Callable[[ApprovalServer], Awaitable[None]]) -> ApprovalServer:
    async def run() -> ApprovalServer:
        async with ApprovalServer(message(), ttl_s=300) as server:
            await scenario(server)
            return server

    return asyncio.run(run())


async def shown(server: ApprovalServer) -> dict[str, str]:
    status, headers, body = await exchange(server.port, get(server))
    assert status == 200 and headers["content-security-policy"].startswith("default-src 'none'")
    csrf = re.search(r'name="csrf" value="([^"]+)"', body)
    assert csrf is not None
    return {"csrf": csrf.group(1), "digest": DIGEST, "decision": "approve"}


@pytest.mark.parametrize(
    ("origin", "extra", "content_type", "status"),
    [
        (None, "", "application/x-www-form-urlencoded", 403),  # no Origin
        ("null", "", "application/x-www-form-urlencoded", 403),  # an opaque origin (a sandboxed frame)
        ("http://localhost:1", "", "application/x-www-form-urlencoded", 403),
        ("<own>", "Sec-Fetch-Site: cross-site\r\n", "application/x-www-form-urlencoded", 403),
        ("<own>", "", "text/plain", 415),  # what a cross-origin fetch may send without a preflight
        ("<own>", "", "multipart/form-data; boundary=x", 415),
        ("<own>", "Transfer-Encoding: chunked\r\n", "application/x-www-form-urlencoded", 411),
        ("<own>", "Host: 127.0.0.1:1\r\n", "application/x-www-form-urlencoded", 400),  # two Hosts
        ("<own>", "Origin: http://localhost:1\r\n", "application/x-www-form-urlencoded", 400),  # two Origins
    ],
)
def test_a_request_no_page_of_its_own_makes_decides_nothing(
    origin: str | None, extra: str, content_type: str, status: int
) -> None:
    async def scenario(server: ApprovalServer) -> None:
        fields = await shown(server)
        answer = await exchange(
            server.port, post(server, fields, origin=origin, content_type=content_type, extra=extra)
        )
        assert answer[0] == status and server.slot.outcome is None
        assert (await exchange(server.port, post(server, fields)))[0] == 200

    assert with_server(scenario).slot.decision == PageDecision(outcome=Outcome.APPROVED, digest=DIGEST)


@pytest.mark.parametrize("method", ["OPTIONS", "HEAD", "PUT", "DELETE"])
def test_other_methods_are_refused_without_cors_headers(method: str) -> None:
    async def scenario(server: ApprovalServer) -> None:
        raw = (
            f"{method} {server.slot.path} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
            "Origin: http://evil.example\r\nAccess-Control-Request-Method: POST\r\n\r\n"
        ).encode()
        status, headers, _ = await exchange(server.port, raw)
        assert status == 405 and headers["allow"] == "GET, POST"
        assert not server.slot.shown and server.slot.outcome is None

    with_server(scenario)


def test_a_second_answer_is_refused_and_the_first_stands() -> None:
    async def scenario(server: ApprovalServer) -> None:
        fields = await shown(server)
        assert (await exchange(server.port, post(server, fields)))[0] == 200
        assert (await exchange(server.port, post(server, {**fields, "decision": "decline"})))[0] == 409
        assert (await exchange(server.port, post(server, fields)))[0] == 409
        assert (await exchange(server.port, get(server)))[0] == 410

    assert with_server(scenario).slot.decision == PageDecision(outcome=Outcome.APPROVED, digest=DIGEST)


def test_oversized_requests_are_refused_and_decide_nothing() -> None:
    async def scenario(server: ApprovalServer) -> None:
        fields = await shown(server)
        big = {**fields, "padding": "x" * 9000}
        assert (await exchange(server.port, post(server, big)))[0] == 413
        huge_head = get(server).replace(b"\r\n\r\n", b"\r\nX-Fill: " + b"x" * 20_000 + b"\r\n\r\n")
        assert (await exchange(server.port, huge_head))[0] == 0  # closed unanswered
        assert (await exchange(server.port, post(server, {**fields, "csrf": fields["csrf"][:-1]})))[0] == 403
        assert server.slot.outcome is None

    with_server(scenario)


def test_a_wrong_host_does_not_use_up_the_page() -> None:
    async def scenario(server: ApprovalServer) -> None:
        for host in (
            f"rebound.example:{server.port}",
            "127.0.0.1",
            f"127.0.0.1:{server.port + 1}",
            "",
            "<none>",
        ):
            assert (await exchange(server.port, get(server, host=host)))[0] in (400, 421)
        assert not server.slot.shown
        await shown(server)

    with_server(scenario)


def test_a_view_is_served_only_on_the_shown_page_with_its_own_policy_and_voids_nothing() -> None:
    """The page's HTML views (``?view=N``): before the page is shown, at another address or for a view
    there is not, not found; on the page shown, its document as it is under the view's headers, as often
    as the frame asks, and the page is neither opened again nor answered."""

    async def scenario(server: ApprovalServer) -> None:
        view = f"{server.slot.path}?view=1"
        assert (await exchange(server.port, get(server, view)))[0] == 404
        assert not server.slot.shown
        await shown(server)
        for _ in range(2):
            status, headers, body = await exchange(server.port, get(server, view))
            assert status == 200 and body == "<p>Hi <b>there</b>"
            assert headers["content-security-policy"] == VIEW_POLICY
            assert headers["referrer-policy"] == "no-referrer" and "x-frame-options" not in headers
        for path in (f"{server.slot.path}?view=2", f"{server.slot.path}?view=0", "/approve/x?view=1"):
            assert (await exchange(server.port, get(server, path)))[0] == 404
        assert server.slot.outcome is None

    async def run() -> None:
        page = MessagePage.model_validate(
            {"digest": DIGEST, "from": "ann@example.org", "html": "x", "views": ["<p>Hi <b>there</b>"]}
        )
        async with ApprovalServer(page, ttl_s=300) as server:
            await scenario(server)

    asyncio.run(run())


def test_a_view_number_in_other_digits_is_answered_not_a_crash() -> None:
    """``?view=`` with a digit ``int`` cannot read (U+00B2, a request line's Latin-1 byte 0xB2) was taken
    for a number: a ValueError ended the connection's task unanswered (the server's log: an unhandled
    exception). It is no view: the request is answered as any other."""

    async def scenario(server: ApprovalServer) -> None:
        raw = f"GET /elsewhere?view=\xb2 HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n\r\n"
        status, _, _ = await exchange(server.port, raw.encode("latin-1"))
        assert status == 404
        assert not server.slot.shown and server.slot.outcome is None

    with_server(scenario)


def test_a_content_length_in_other_digits_is_refused_not_a_crash() -> None:
    """``Content-Length: \xb2`` (U+00B2 passes ``str.isdigit``, not ``int``) ended the connection's task
    unanswered, as ``?view=`` did; it is an invalid Content-Length, refused."""

    async def scenario(server: ApprovalServer) -> None:
        raw = (
            post(server, {"decision": "approve"})
            .decode()
            .replace("Content-Length: 16", "Content-Length: \xb2")
        )
        assert (await exchange(server.port, raw.encode("latin-1")))[0] == 400
        assert server.slot.outcome is None

    with_server(scenario)


def test_ask_ends_expired_when_no_answer_comes(caplog: pytest.LogCaptureFixture) -> None:
    assert asyncio.run(ask(message(), lambda url: True, 0.05)) == PageDecision(outcome=Outcome.EXPIRED)


def test_ask_says_not_opened_when_the_opener_fails_and_logs_no_address(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    urls: list[str] = []

    def failing(url: str) -> bool:
        urls.append(url)
        raise OSError(f"no browser for {url}")

    assert asyncio.run(ask(message(), failing, 30)) == PageDecision(outcome=Outcome.NOT_OPENED)
    assert asyncio.run(ask(message(), lambda url: False, 30)) == PageDecision(outcome=Outcome.NOT_OPENED)
    assert "the browser could not be opened (OSError)" in caplog.text
    assert urls and urllib.parse.urlsplit(urls[0]).path not in caplog.text


async def _answer_as_a_browser(url: str, decision: str) -> None:
    """Opens the page at ``url`` (following the launch address's one redirect, as a browser does) and
    answers it with its own form, from another event loop."""
    port, path = urllib.parse.urlsplit(url).port, urllib.parse.urlsplit(url).path
    assert port is not None
    for _ in range(2):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        page = (await reader.read()).decode()
        writer.close()
        moved = re.search(r"^Location: (\S+)\r$", page, re.MULTILINE)
        if moved is None:
            break
        path = moved.group(1)
    csrf = re.search(r'name="csrf" value="([^"]+)"', page)
    assert csrf is not None
    body = urllib.parse.urlencode({"csrf": csrf.group(1), "digest": DIGEST, "decision": decision})
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: http://127.0.0.1:{port}\r\n"
        f"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {len(body)}\r\n\r\n{body}".encode()
    )
    await reader.read()
    writer.close()


def test_ask_waits_for_the_page_an_opener_opened_though_it_said_it_could_not() -> None:
    def opener(url: str) -> bool:
        asyncio.run(_answer_as_a_browser(url, "decline"))  # in the opener's thread: a browser is elsewhere
        return False

    assert asyncio.run(ask(message(), opener, 30)) == PageDecision(outcome=Outcome.DECLINED)


def test_a_cancelled_ask_closes_the_page() -> None:
    """The send call cancelled (the client went away): the listener is gone, nothing waits on it."""
    urls: list[str] = []

    async def scenario() -> None:
        task = asyncio.ensure_future(ask(message(), lambda url: urls.append(url) is None, 300))
        async with asyncio.timeout(patient(10)):
            while not urls:
                await asyncio.sleep(0.01)  # the opener runs in a thread
        port = urllib.parse.urlsplit(urls[0]).port
        assert port is not None
        (await asyncio.open_connection("127.0.0.1", port))[1].close()  # listening
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        with pytest.raises(ConnectionRefusedError):
            await asyncio.open_connection("127.0.0.1", port)

    asyncio.run(scenario())


def test_ask_blocking_serves_the_page_from_a_worker_thread() -> None:
    """As a tool handler calls it: in a thread of its own while the server's event loop runs elsewhere."""
    decisions: list[PageDecision] = []

    def opener(url: str) -> bool:
        asyncio.run(_answer_as_a_browser(url, "approve"))
        return True

    async def serving_elsewhere() -> None:
        worker = threading.Thread(target=lambda: decisions.append(ask_blocking(message(), opener, 30)))
        worker.start()
        await asyncio.to_thread(worker.join)

    asyncio.run(serving_elsewhere())
    assert decisions == [PageDecision(outcome=Outcome.APPROVED, digest=DIGEST)]


def test_a_page_of_any_review_answers_in_its_own_words() -> None:
    """Issue 58 item 2: the listener is not send-shaped: a review's generic page declines and expires with
    the request's words ("Nothing was done."), never a send's."""
    review = Review(
        title="delete the mailbox 'Old':",
        fields=[ReviewField(label="Mailbox", values=["Old"])],
        closing="Delete it",
    )

    async def run() -> list[tuple[int, str]]:
        async with ApprovalServer(review_page(review, DIGEST), ttl_s=300) as server:
            fields = await shown(server)
            declined = await exchange(server.port, post(server, {**fields, "decision": "decline"}))
            again = await exchange(server.port, get(server))
            assert server.slot.outcome is Outcome.DECLINED
            return [(declined[0], declined[2]), (again[0], again[2])]

    (declined, declined_page), (_, again_page) = asyncio.run(run())
    assert declined == 200 and "Not done" in declined_page and "Nothing was done." in declined_page
    assert "sent" not in declined_page.lower() and "Already answered" in again_page
