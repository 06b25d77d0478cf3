"""What tests/integration/drafts_and_sending/test_send.py shares with other test modules."""

from __future__ import annotations

import contextlib
import imaplib
import os
import re
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
from mcp import StdioServerParameters

from mail_imap_mcp.tools.send_draft_models import SendDraftData
from tests.support.accounts import account_settings
from tests.support.clients import chromium
from tests.support.clients.background import decided
from tests.support.clients.elicitation import answering
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import make_config, open_client
from tests.support.patience import NotYet, eventually_async, patient
from tests.support.servers.submission import DOMAIN, SubmissionDovecot

TOOL = "imap_send_draft"


#: Headers the delivery chain writes above the message.
TRACE = re.compile(rb"\A(?:(?:Return-Path|Delivered-To|Received):[^\n]*\n(?:[ \t][^\n]*\n)*)+")


def _settings(chain: SubmissionDovecot, user: str, port: int, security: str, **more: Any) -> dict[str, Any]:
    return account_settings(
        chain,
        user,
        password_env=None,
        password=chain.password,
        addresses=[chain.address(user)],
        smtp={"host": "127.0.0.1", "port": port, "security": security},
        send_enabled=True,
        allowed_recipients=[f"@{DOMAIN}"],
        **more,
    )


def _draft(sender: str, to: list[str], *, cc: Sequence[str] = (), bcc: Sequence[str] = (), subject: str = "Hello", extra: str = "",
           body: str = "Dear Bob,\r\n.leading dot stays\r\nBest\r\n") -> bytes:  # fmt: skip
    lines = [
        f"From: Alice <{sender}>",
        f"To: {', '.join(to)}",
        *([f"Cc: {', '.join(cc)}"] if cc else []),
        *([f"Bcc: {', '.join(bcc)}"] if bcc else []),
        f"Subject: {subject}",
        "Date: Mon, 02 Jan 2023 10:00:00 +0000",
        f"Message-ID: <draft-{time.monotonic_ns()}@{DOMAIN}>",
        "MIME-Version: 1.0",
        "Content-Type: text/plain; charset=utf-8",
        *([extra] if extra else []),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n" + body).encode()


def _append(chain: SubmissionDovecot, user: str, mailbox: str, raw: bytes, flags: str = "(\\Draft)") -> None:
    """APPEND as another mail client would (not through this server)."""
    imap = imaplib.IMAP4("127.0.0.1", chain.plain_port)
    try:
        imap.login(user, chain.password)
        imap.create(mailbox)
        imap.append(mailbox, flags, None, raw)
    finally:
        imap.logout()


def _files(chain: SubmissionDovecot, user: str, mailbox: str = "INBOX") -> list[Path]:
    folder = chain.folder_path(user, mailbox)
    return sorted(p for sub in ("new", "cur") for p in (folder / sub).glob("*")) if folder.exists() else []


def _received(chain: SubmissionDovecot) -> int:
    """Messages Exim took (each one submitted and relayed)."""
    return chain.mta_log().count(" <= ") - chain.mta_log().count(" <= <> ")


async def _delivered(chain: SubmissionDovecot, user: str, count: int) -> list[bytes]:
    """The INBOX of ``user`` once it holds ``count`` messages (delivery is asynchronous), then a moment more
    to see that no other arrives."""

    async def arrived() -> bool:
        return len(_files(chain, user)) >= count

    with contextlib.suppress(NotYet):  # the test asserts what came
        await eventually_async(arrived, within=15)
    await anyio.sleep(0.3)
    return [path.read_bytes() for path in _files(chain, user)]


def _setup(chain: SubmissionDovecot, *, sent: bool = True) -> tuple[str, str, str]:
    """A sender with Drafts, Trash (and Sent), and two recipients."""
    sender, bob, carol = chain.new_user(), chain.new_user(), chain.new_user()
    for box in ("Drafts", "Trash", *(["Sent"] if sent else [])):
        chain.ensure_folder(sender, box)
    return sender, bob, carol


def _reply_to(
    chain: SubmissionDovecot, sender: str, bob: str, mailbox: str = "INBOX", *,
    to: list[str] | None = None, cc: Sequence[str] = (), bcc: Sequence[str] = (),
) -> tuple[str, bytes]:  # fmt: skip
    """A question from Bob kept in ``mailbox`` of ``sender``, and the reply to it (to Bob's address unless
    ``to``; ``cc``, ``bcc``) saved in Drafts; the question's Message-ID and the reply."""
    original = _draft(chain.address(bob), [chain.address(sender)], subject="Question")
    chain.ensure_folder(sender, mailbox)
    chain.seed(sender, mailbox, [original])
    asked_id = re.search(rb"Message-ID: (<[^>]+>)", original).group(1).decode()  # type: ignore[union-attr]
    reply = _draft(
        chain.address(sender), to or [chain.address(bob)], cc=cc, bcc=bcc, subject="Re: Question",
        extra=f"In-Reply-To: {asked_id}\r\nReferences: {asked_id}",
    )  # fmt: skip
    _append(chain, sender, "Drafts", reply)
    return asked_id, reply


async def _draft_id(mcp: EnvelopeClient, subject: str | None = None) -> str:
    data = await mcp.ok(
        "imap_search_messages", {"mailbox": "Drafts", **({"subject": subject} if subject else {})}
    )
    (found,) = data["messages"]
    return str(found["message_id"])


def _opened_later(urls: list[str]) -> Callable[[str], bool]:
    """A browser the user reads later: the page's address is kept (for the test to answer it), and opened."""

    def opener(url: str) -> bool:
        urls.append(url)
        return True

    return opener


async def _until(condition: Callable[[], bool]) -> None:
    async def held() -> bool:
        return condition()

    await eventually_async(held, within=30)


async def _page_and_answer(done: Path) -> tuple[str, str]:
    """What the browser script wrote down (``APPROVAL_TEST_DONE``): the page as shown, and the page that
    came up after the user's answer. It writes once that answer came up, which may be after the call."""

    async def written() -> bool:
        return done.exists()

    await eventually_async(written, within=30, what=f"the browser script's {done}")
    page, _, answered = done.read_text().partition("\n--- answer ---\n")
    return page, answered


async def _decided(mcp: EnvelopeClient, answer: dict[str, Any]) -> dict[str, Any]:
    """The call's answer once the user decided on the page: ``answer`` itself, or, when the call handed
    back a background operation, its end polled with imap_get_operation (``data`` the send's own data,
    checked against its model, or ``error`` as the call would have answered), and ``state``."""
    ended = await decided(mcp, answer)
    if ended is answer:
        return answer
    if ended["error"] is not None:
        return {"success": False, "error": ended["error"], "state": ended["state"]}
    SendDraftData.model_validate(ended["data"])
    return {"success": True, "data": ended["data"], "summary": ended["summary"], "state": ended["state"]}


def _answer_page(url: str, decision: str, seen: list[str], addresses: list[str] | None = None) -> bool:
    """What a user's browser does: open the one-time page (following the launch address to it, whose
    address goes to ``addresses``), then press one of its buttons (its own form)."""
    parts = urllib.parse.urlsplit(url)
    host = f"127.0.0.1:{parts.port}"
    with urllib.request.urlopen(
        urllib.request.Request(url, headers={"Host": host}), timeout=patient(10)
    ) as page:
        html = page.read().decode()
        url = page.geturl()
    seen.append(html)
    if addresses is not None:
        addresses.append(url)
    fields = dict(re.findall(r'<input type="hidden" name="(csrf|digest)" value="([^"]+)"', html))
    body = urllib.parse.urlencode({**fields, "decision": decision}).encode()
    request = urllib.request.Request(
        url,
        data=body,
        headers={"Origin": f"http://{host}", "Content-Type": "application/x-www-form-urlencoded"},
    )
    with urllib.request.urlopen(request, timeout=patient(10)):
        pass
    return True


#: The user's browser (``BROWSER``): headless Chromium opens the page and presses a button (APPROVAL_TEST_*).
CHROMIUM_BROWSER = chromium.relayed_browser()


def desktop_server(
    chain: SubmissionDovecot, sender: str, directory: Path, press: str, done: Path
) -> StdioServerParameters:
    """The server as Claude Desktop starts it for ``sender`` (stdio, sending on), whose user's browser
    (``BROWSER``) is headless Chromium pressing ``press`` on the approval page, 2 s after it opened
    (past the call's inline wait: it hands back an operation to poll), and writing what it saw to ``done``."""
    config = directory / "config.toml"
    config.write_text(
        "[accounts.default]\n"
        f'host = "127.0.0.1"\nport = {chain.tls_port}\nsecurity = "tls"\nusername = "{sender}"\n'
        f'password_env = "MIM_SEND_PASSWORD"\nca_file = "{chain.ca_file}"\n'
        f'addresses = ["{chain.address(sender)}"]\nsend_enabled = true\nallowed_recipients = ["@{DOMAIN}"]\n'
        f'[accounts.default.smtp]\nhost = "127.0.0.1"\nport = {chain.submissions_port}\nsecurity = "tls"\n'
    )
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(directory),
        "MIM_SEND_PASSWORD": chain.password,
        "BROWSER": CHROMIUM_BROWSER,  # no DISPLAY: BROWSER names the browser
        "APPROVAL_TEST_PRESS": press,
        "APPROVAL_TEST_DONE": str(done),
        "APPROVAL_TEST_DELAY_S": "2",
    }
    server = str(Path(sys.executable).parent / "mail-imap-mcp")
    return StdioServerParameters(command=server, args=["serve", "--config", str(config)], env=env)


def _everywhere(chain: SubmissionDovecot, sender: str, recipients: list[str]) -> dict[str, int]:
    """How many messages each mailbox of the test holds, and how many Exim took."""
    counts = {
        f"{sender}/{box}": len(_files(chain, sender, box)) for box in ("INBOX", "Drafts", "Sent", "Trash")
    }
    counts.update({f"{user}/INBOX": len(_files(chain, user)) for user in recipients})
    return {**counts, "relayed": _received(chain)}


def _flags(path: Path) -> str:
    return path.name.rpartition(":2,")[2]


def _client(
    settings: dict[str, Any], era: str | None = "legacy", answer: Any = None
) -> AsyncIterator[EnvelopeClient]:
    options: dict[str, Any] = {}
    if era is not None:
        options = {"elicitation_callback": answer or answering("accept")}
        if era == "legacy":
            options["mode"] = "legacy"
    return open_client(make_config({"default": settings}), **options)
