"""The approval page served on 127.0.0.1 at a port the system gives, and :func:`ask`, which shows it.

A small HTTP/1.1 server on the running event loop, for one page: every response closes its connection,
a request's head and body are bounded, and nothing is logged that holds the address. The rules of who
may answer are :mod:`.slot`'s; this module reads requests and applies them.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
import urllib.parse
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from types import TracebackType
from typing import Any, ParamSpec, Self, TypeVar

from mail_imap_mcp.net.local_peer import LAUNCH_PATH, checks_peers, refusal, refused_page_text

from .page import PAGE_HEADERS, VIEW_HEADERS, answer_page, approval_page
from .request import Outcome, PageDecision, PageRequest, PageWords
from .slot import Answer, ApprovalSlot, Opening, host_allowed, origin_allowed

__all__ = ["DEFAULT_TTL_S", "MAX_TTL_S", "ApprovalServer", "ask", "ask_blocking"]

_log = logging.getLogger(__name__)
_P = ParamSpec("_P")
_R = TypeVar("_R")

DEFAULT_TTL_S = 300.0
MAX_TTL_S = 3600.0
_MAX_HEAD_BYTES = 16 * 1024
_MAX_BODY_BYTES = 8 * 1024
_READ_TIMEOUT_S = 10.0
_MAX_CONNECTIONS = 32
_REASONS = {
    200: "OK",
    303: "See Other",
    400: "Bad Request",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
}
_REASONS |= {409: "Conflict", 410: "Gone", 411: "Length Required", 413: "Content Too Large"}
_REASONS |= {415: "Unsupported Media Type", 421: "Misdirected Request"}


class _BadRequest(Exception):
    def __init__(self, status: int, why: str) -> None:
        super().__init__(why)
        self.status = status


@dataclass(frozen=True)
class _Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    query: str = ""

    @property
    def view(self) -> int | None:
        """The view a GET asks for (``?view=N``, N from 1), if any."""
        name, _, number = self.query.partition("=")
        return (
            int(number)
            if name == "view" and number.isascii() and number.isdigit() and 0 < len(number) < 6
            else None
        )


async def _read_request(reader: asyncio.StreamReader) -> _Request:
    head = await reader.readuntil(b"\r\n\r\n")
    line, *fields = head[:-4].decode("latin-1").split("\r\n")
    parts = line.split(" ")
    if len(parts) != 3 or parts[2] not in ("HTTP/1.1", "HTTP/1.0") or not parts[1].startswith("/"):
        raise _BadRequest(400, "not an HTTP/1.1 request")
    headers: dict[str, str] = {}
    for field in fields:
        name, colon, value = field.partition(":")
        name = name.lower()
        if not colon or not name or name != name.strip() or name in headers:
            # A folded line or a repeated header (two Hosts, two Origins) is a request made to confuse.
            raise _BadRequest(400, "a malformed or repeated header")
        headers[name] = value.strip()
    if "transfer-encoding" in headers:
        raise _BadRequest(411, "a body without Content-Length")
    length = headers.get("content-length", "0")
    if not (length.isascii() and length.isdigit()):  # "²" is a digit to isdigit, not to int
        raise _BadRequest(400, "an invalid Content-Length")
    if int(length) > _MAX_BODY_BYTES:
        raise _BadRequest(413, "a body too large for the form")
    body = await reader.readexactly(int(length))
    path, _, query = parts[1].partition("?")
    return _Request(parts[0], path, headers, body, query)


def _form(request: _Request) -> dict[str, str]:
    if (
        request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        != "application/x-www-form-urlencoded"
    ):
        raise _BadRequest(415, "not a form")
    try:
        pairs = urllib.parse.parse_qsl(request.body.decode("ascii"), keep_blank_values=True, max_num_fields=8)
    except (UnicodeDecodeError, ValueError) as error:
        raise _BadRequest(400, "an unreadable form") from error
    form = dict(pairs)
    if len(form) != len(pairs):
        raise _BadRequest(400, "a repeated form field")
    return form


def _openings(words: PageWords) -> dict[Opening, tuple[int, str, str]]:
    return {
        Opening.NOT_FOUND: (404, "Not found", "There is no approval page at this address."),
        Opening.OPENED_TWICE: (
            410,
            "Request cancelled",
            "This approval page was opened a second time, so the request was cancelled: someone else may "
            f"have its address. {words.nothing_done} {words.ask_again}",
        ),
        Opening.EXPIRED: (410, "Expired", f"This approval page has expired. {words.nothing_done}"),
        Opening.DECIDED: (410, "Already answered", "This approval page was already answered."),
    }


def _answers(words: PageWords) -> dict[Answer, tuple[int, str, str]]:
    nothing = words.nothing_done
    return {
        Answer.APPROVED: (200, "Approved", words.approved),
        Answer.DECLINED: (200, words.declined, f"{nothing} You can close this tab."),
        Answer.NOT_FOUND: (404, "Not found", "There is no approval page at this address."),
        Answer.FORBIDDEN: (403, "Refused", f"This answer is not from this approval page. {nothing}"),
        Answer.BAD_REQUEST: (
            400,
            "Refused",
            f"The answer was neither {words.approve} nor {words.decline}. {nothing}",
        ),
        Answer.EXPIRED: (410, "Expired", f"This approval page has expired. {nothing}"),
        Answer.DECIDED: (409, "Already answered", "This approval page was already answered."),
    }


def _cancelled(words: PageWords) -> tuple[int, str, str]:
    """What the page's address answers once the request was cancelled by the caller (GET or POST alike)."""
    return (
        410,
        "Cancelled",
        f"Your assistant cancelled this request before you answered. {words.nothing_done} You can close "
        "this tab.",
    )


#: How often :func:`ask` checks whether its caller cancelled the request.
CANCEL_POLL_S = 0.25


#: A response: its status, its page and its header fields.
_Response = tuple[int, str, tuple[tuple[str, str], ...]]


def _page(answer: tuple[int, str, str]) -> _Response:
    status, title, text = answer
    return status, answer_page(title, text), PAGE_HEADERS


class ApprovalServer:
    """Serves one request's approval page; use as an async context manager, give :attr:`url` to the
    browser alone, and :meth:`wait` for the decision. ``clock`` (monotonic seconds) times the expiry."""

    def __init__(
        self, request: PageRequest, *, ttl_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if not 0 < ttl_s <= MAX_TTL_S:
            raise ValueError(f"ttl_s must be in (0, {MAX_TTL_S:g}] seconds")
        self.request = request
        self.slot = ApprovalSlot(request.digest, ttl_s, clock)
        self._decided = asyncio.Event()
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self.port = 0

    async def __aenter__(self) -> Self:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0, limit=_MAX_HEAD_BYTES)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        if self._server is not None:
            await self._server.wait_closed()

    @property
    def url(self) -> str:
        """The one-time address (holds the page's secret path: never log or return it)."""
        return f"http://127.0.0.1:{self.port}{self.slot.path}"

    @property
    def opening_url(self) -> str:
        """The address to give the browser: where peers are checked, :data:`LAUNCH_PATH`, which holds no
        secret and forwards this OS user's browser to :attr:`url`; elsewhere :attr:`url` itself."""
        return f"http://127.0.0.1:{self.port}{LAUNCH_PATH}" if checks_peers() else self.url

    def end(self, outcome: Outcome) -> None:
        """Decide ``outcome`` unless the page decided first."""
        self.slot.end(outcome)
        self._decided.set()

    async def wait(self, timeout_s: float) -> PageDecision:
        """The decision, or ``expired`` when none came within ``timeout_s`` (the event loop's time)."""
        try:
            async with asyncio.timeout(timeout_s):
                await self._decided.wait()
        except TimeoutError:
            self.end(Outcome.EXPIRED)
        decision = self.slot.decision
        assert decision is not None  # the event is set only once the slot has an outcome
        return decision

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is None or len(self._connections) >= _MAX_CONNECTIONS:
            writer.close()
            return
        self._connections.add(task)
        try:
            why = refusal(writer.get_extra_info("sockname"), writer.get_extra_info("peername"))
            if why is not None:
                # Before a byte is read: another user's request opens, voids or answers nothing.
                _log.info("approval page: a connection refused (%s)", why)
                await self._write(writer, 403, answer_page("Refused", refused_page_text(why)))
                return
            await self._serve(reader, writer)
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self._connections.discard(task)
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(_READ_TIMEOUT_S):
                request = await _read_request(reader)
            status, page, headers = self._respond(request)
        except _BadRequest as error:
            _log.info("approval page: a request refused (%s)", error)
            status, page, headers = (
                error.status,
                answer_page("Refused", f"Refused: {error}. {self.request.words.nothing_done}"),
                PAGE_HEADERS,
            )
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            return
        try:
            await self._write(writer, status, page, headers)
        finally:
            # After the answer is out: ask() closes the listener as soon as it learns the decision.
            if self.slot.expire_if_due():
                self._decided.set()

    async def _write(
        self,
        writer: asyncio.StreamWriter,
        status: int,
        page: str,
        headers: tuple[tuple[str, str], ...] = PAGE_HEADERS,
    ) -> None:
        body = page.encode()
        head = [f"HTTP/1.1 {status} {_REASONS[status]}", *(f"{name}: {value}" for name, value in headers)]
        head += [f"Content-Length: {len(body)}", "Connection: close"]
        if status == 405:
            head.append("Allow: GET, POST")
        if status == 303:
            head.append(f"Location: {self.slot.path}")
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)
        await writer.drain()

    def _respond(self, request: _Request) -> _Response:
        """The status and page of the answer."""
        if not host_allowed(request.headers.get("host"), self.port):
            # A page of another site whose name was made to point here (DNS rebinding) names its own host.
            raise _BadRequest(421, "a request for another host")
        if request.method == "GET" and request.path == LAUNCH_PATH and checks_peers():
            # The peer was found to be this user's (:meth:`_accept`): the secret address, not yet opened.
            return 303, answer_page("Approval page", "Go on to the approval page."), PAGE_HEADERS
        if request.method == "GET" and request.view is not None:
            view = self.request.view(request.view) if self.slot.viewable(request.path) else None
            if view is None:
                return _page((404, "Not found", "There is no approval page at this address."))
            return 200, view, VIEW_HEADERS
        if request.method == "GET":
            opening = self.slot.open(request.path)
            if opening is Opening.DECIDED and self.slot.outcome is Outcome.CANCELLED:
                return _page(_cancelled(self.request.words))
            if opening is Opening.SHOW:
                return 200, approval_page(self.request, self.slot.csrf_token, self.slot.ttl_s), PAGE_HEADERS
            return _page(_openings(self.request.words)[opening])
        if request.method != "POST":
            raise _BadRequest(405, "neither GET nor POST")
        fetch_site = request.headers.get("sec-fetch-site")
        if not origin_allowed(request.headers.get("origin"), self.port) or fetch_site not in (
            None,
            "same-origin",
        ):
            raise _BadRequest(403, "an answer from another origin")
        form = _form(request)
        answer = self.slot.answer(request.path, form.get("csrf"), form.get("digest"), form.get("decision"))
        if answer in (Answer.FORBIDDEN, Answer.BAD_REQUEST):
            _log.info("approval page: an answer refused (%s)", answer.value)
        if answer is Answer.DECIDED and self.slot.outcome is Outcome.CANCELLED:
            return _page(_cancelled(self.request.words))
        return _page(_answers(self.request.words)[answer])


def _open(open_url: Callable[[str], bool], url: str) -> bool:
    try:
        return bool(open_url(url))
    except Exception as error:  # an opener's failure is "could not open", whatever it was
        _log.warning("approval page: the browser could not be opened (%s)", type(error).__name__)
        return False


async def _watch(server: ApprovalServer, cancelled: Callable[[], bool]) -> None:
    while not server.slot.expire_if_due():
        if await asyncio.to_thread(cancelled):
            server.end(Outcome.CANCELLED)
            return
        await asyncio.sleep(CANCEL_POLL_S)


async def ask(
    request: PageRequest,
    open_url: Callable[[str], bool],
    timeout: float = DEFAULT_TTL_S,
    *,
    clock: Callable[[], float] = time.monotonic,
    cancelled: Callable[[], bool] | None = None,
    decided: Callable[[PageDecision], None] | None = None,
) -> PageDecision:
    """Show ``request`` on a one-time page opened with ``open_url`` (in a thread: an opener may wait for
    the browser) and return what the user decided within ``timeout`` seconds, the page's life.

    ``not_opened`` when ``open_url`` returns false or raises before the page was opened. ``cancelled``
    (polled every :data:`CANCEL_POLL_S`, in a thread) true ends the request as ``cancelled``; the page
    then stays, for the rest of its life, to tell a user who answers it that nothing was sent.
    ``decided`` hears the decision as soon as it is known (before that stay). The address
    (:attr:`ApprovalServer.opening_url`) is handed to ``open_url`` alone: it is in no log line, exception
    or return value.
    """
    async with ApprovalServer(request, ttl_s=timeout, clock=clock) as server:
        opening = asyncio.ensure_future(asyncio.to_thread(_open, open_url, server.opening_url))
        waiting = asyncio.ensure_future(server.wait(timeout))
        watching = asyncio.ensure_future(_watch(server, cancelled)) if cancelled is not None else None
        started = asyncio.get_running_loop().time()
        try:
            done, _ = await asyncio.wait({opening, waiting}, return_when=asyncio.FIRST_COMPLETED)
            if waiting not in done and not opening.result() and not server.slot.shown:
                server.end(Outcome.NOT_OPENED)
            decision = await waiting
            if decided is not None:
                decided(decision)
            if decision.outcome is Outcome.CANCELLED:
                await asyncio.sleep(max(0.0, timeout - (asyncio.get_running_loop().time() - started)))
            return decision
        finally:
            waiting.cancel()
            if watching is not None:
                watching.cancel()


def _blocking(
    coroutine_function: Callable[_P, Coroutine[Any, Any, _R]], name: str, doc: str
) -> Callable[_P, _R]:
    """``coroutine_function`` run to its end on an event loop of the calling thread's own, named ``name``
    and documented by ``doc``: one signature for both (the asynchronous one's)."""

    @functools.wraps(coroutine_function)
    def blocking(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        return asyncio.run(coroutine_function(*args, **kwargs))

    blocking.__name__ = blocking.__qualname__ = name
    blocking.__doc__ = doc
    return blocking


ask_blocking = _blocking(
    ask,
    "ask_blocking",
    """:func:`ask` for a synchronous caller (a tool handler in its worker thread): the page is served on
    an event loop of this thread's own for as long as it waits. Not for a thread running an event loop.""",
)
