"""A draft is sent at most once across processes and restarts (issue 56, item 3), through real stdio server
processes (``mail-imap-mcp serve``), the real submission chain (Dovecot submission -> Exim -> LMTP,
tests/support/servers/submission.py) and a real IMAP server holding the draft: the chain's own Dovecot, Cyrus or
Courier (whose user logs in to the chain's submission with the same name and password).

- Two processes of one machine (one state directory) both asked to send one draft: one copy goes out, on
  Courier too, where only the machine's record (``state/file_store.py``) keeps them apart.
- Two processes with state directories of their own (two machines): one copy, kept so by the claim on the
  IMAP server (``services/send_claim.py``: a CONDSTORE keyword) on Dovecot and Cyrus.
- A restart after ``outcome_unknown``: the new process asks nothing and sends nothing.
"""

from __future__ import annotations

import functools
import os
import shlex
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp_types import ElicitRequestParams, ElicitResult

from mail_imap_mcp.services.send_claim import CLAIM_KEYWORD
from tests.support.accounts import PASSWORD_ENV, account_settings, config_toml
from tests.support.clients.elicitation import answering
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.patience import eventually, eventually_async, patient
from tests.support.servers.faultproxy import FaultProxy
from tests.support.servers.imapserver import ImapServer
from tests.support.servers.matrix import SESSION_PASSWORD
from tests.support.servers.submission import DOMAIN, SubmissionDovecot

pytestmark = pytest.mark.anyio

TOOL = "imap_send_draft"
SERVER = str(Path(sys.executable).parent / "mail-imap-mcp")


def _imap(request: pytest.FixtureRequest, kind: str, chain: SubmissionDovecot) -> ImapServer:
    return chain if kind == "dovecot" else request.getfixturevalue(kind)  # type: ignore[no-any-return]


def _sender(imap: ImapServer, chain: SubmissionDovecot) -> tuple[str, dict[str, str]]:
    """A user of ``imap`` (a name the chain takes too) with Drafts, Sent and Trash, named in settings."""
    user = imap.new_user("u")
    boxes = {
        role: imap.mailbox_name(name)
        for role, name in (("drafts", "Drafts"), ("sent", "Sent"), ("trash", "Trash"))
    }
    with imap.connect(user, tls=False, starttls=False) as client:
        for name in boxes.values():
            if not client.folder_exists(name):
                client.create_folder(name)
    return user, {f"{role}_mailbox": name for role, name in boxes.items()}


def _draft(chain: SubmissionDovecot, sender: str, to: str) -> bytes:
    lines = [
        f"From: <{chain.address(sender)}>",
        f"To: <{chain.address(to)}>",
        "Subject: Once only",
        "Date: Mon, 02 Jan 2023 10:00:00 +0000",
        f"Message-ID: <once-{os.urandom(6).hex()}@{DOMAIN}>",
        "MIME-Version: 1.0",
        "Content-Type: text/plain; charset=utf-8",
    ]
    return ("\r\n".join(lines) + "\r\n\r\nSent once.\r\n").encode()


def _config(
    path: Path, imap: ImapServer, sender: str, boxes: dict[str, str], chain: SubmissionDovecot, smtp_port: int,
    security: str, state_dir: Path,
) -> Path:  # fmt: skip
    settings = account_settings(
        imap, sender, addresses=[chain.address(sender)], send_enabled=True, allowed_recipients=[f"@{DOMAIN}"],
        **boxes,
    )  # fmt: skip
    path.write_text(
        config_toml({"default": settings})
        + f'[accounts.default.smtp]\nhost = "127.0.0.1"\nport = {smtp_port}\nsecurity = "{security}"\n'
        + f'[server]\nstate_dir = "{state_dir}"\n'
    )
    return path


def _received(chain: SubmissionDovecot) -> int:
    """Messages Exim took (each one submitted and relayed: counted before the submission's answer)."""
    return chain.mta_log().count(" <= ") - chain.mta_log().count(" <= <> ")


def _inbox(chain: SubmissionDovecot, user: str) -> int:
    folder = chain.folder_path(user, "INBOX")
    return sum(1 for sub in ("new", "cur") for _ in (folder / sub).glob("*")) if folder.exists() else 0


class _AllAsked:
    """An elicitation answer that approves once every process was asked (or its patience ran out): each
    send passed every check made before the user is asked before either is approved."""

    def __init__(self, processes: int) -> None:
        self.processes, self.asked, self.everyone = processes, 0, anyio.Event()

    async def __call__(self, context: Any, params: ElicitRequestParams) -> ElicitResult:
        self.asked += 1
        if self.asked >= self.processes:
            self.everyone.set()
        with anyio.move_on_after(patient(30)):
            await self.everyone.wait()
        return ElicitResult(action="accept", content={"confirm": True})


#: A browser that opens the approval page and never answers (the user reads it later).
NEVER_ANSWERS = f"{shlex.quote(sys.executable)} -c pass %s"


def _process(config: Path, answer: Any) -> Client:
    """A stdio server process on ``config``: its client answers questions with ``answer``; without one
    (Claude Desktop), the approval page opens in a browser that never answers."""
    env = {"PATH": os.environ["PATH"], "HOME": os.environ["HOME"], PASSWORD_ENV: SESSION_PASSWORD}
    params = StdioServerParameters(
        command=SERVER, args=["serve", "--config", str(config)], env={**env, "BROWSER": NEVER_ANSWERS}
    )
    if answer is None:
        return Client(params)
    return Client(params, elicitation_callback=answer, mode="legacy")


async def _send(config: Path, answer: Any, drafts: str) -> dict[str, Any]:
    """One server process sends the account's one draft (in ``drafts``); its answer."""
    async with _process(config, answer) as client:
        mcp = EnvelopeClient(client)
        (draft,) = (await mcp.ok("imap_search_messages", {"mailbox": drafts}))["messages"]
        return await mcp.call(TOOL, {"message_id": draft["message_id"]})


async def _send_together(configs: list[Path], drafts: str) -> list[dict[str, Any]]:
    answer, answers = _AllAsked(len(configs)), [{} for _ in configs]

    async def one(index: int) -> None:
        answers[index] = await _send(configs[index], answer, drafts)

    async with anyio.create_task_group() as group:
        for index in range(len(configs)):
            group.start_soon(one, index)
    return answers


def _flags_everywhere(imap: ImapServer, user: str, boxes: dict[str, str]) -> list[str]:
    with imap.connect(user, tls=False, starttls=False) as client:
        found: list[str] = []
        for name in boxes.values():
            client.select_folder(name, readonly=True)
            held = client.search("ALL")
            for data in (client.fetch(held, ["FLAGS"]) if held else {}).values():
                found += [flag.decode() for flag in data[b"FLAGS"]]
        return found


async def _two_processes_send_once(
    request: pytest.FixtureRequest, chain: SubmissionDovecot, tmp_path: Path, kind: str, *, machines: int
) -> tuple[ImapServer, str, dict[str, str], list[dict[str, Any]]]:
    """Two processes send one draft of a user of ``kind``, with one state directory or one each
    (``machines``); exactly one is sent, once, and reaches the recipient once."""
    imap = _imap(request, kind, chain)
    sender, boxes = _sender(imap, chain)
    bob = chain.new_user()
    imap.seed(sender, boxes["drafts_mailbox"], [_draft(chain, sender, bob)], flags="\\Draft")
    configs = [
        _config(
            tmp_path / f"config-{index}.toml",
            imap,
            sender,
            boxes,
            chain,
            chain.submission_port,
            "plain",
            tmp_path / f"state-{index % machines}",
        )
        for index in range(2)
    ]
    before = _received(chain)
    answers = await _send_together(configs, boxes["drafts_mailbox"])
    sent = [answer for answer in answers if answer["success"]]
    refused = [answer["error"] for answer in answers if not answer["success"]]
    assert [answer["data"]["outcome"] for answer in sent] == ["sent"], answers
    assert [error["code"] for error in refused] in (["conflict"], ["not_found"]), answers
    assert _received(chain) == before + 1
    eventually(lambda: _inbox(chain, bob) >= 1, what="the one copy delivered")
    assert _inbox(chain, bob) == 1
    return imap, sender, boxes, refused


@pytest.mark.parametrize("kind", ["dovecot", "cyrus", "courier"])
async def test_two_processes_of_one_machine_send_one_draft_once(
    request: pytest.FixtureRequest, chain: SubmissionDovecot, tmp_path: Path, kind: str
) -> None:
    """Claude Desktop and Claude Code side by side: two stdio servers, one state directory; both ask the
    user, both are approved, one sends (regression: each process kept its record in its memory, and both
    sent). On Courier the claim on the server is impossible: the machine's record alone holds."""
    imap, sender, boxes, refused = await _two_processes_send_once(request, chain, tmp_path, kind, machines=1)
    if refused[0]["code"] == "conflict":
        assert refused[0]["details"]["state"] in {"sending", "sent", "claimed"}
    claimed = CLAIM_KEYWORD.lower() in (flag.lower() for flag in _flags_everywhere(imap, sender, boxes))
    assert claimed is (kind != "courier")  # the draft (now in Trash) kept the winner's claim


@pytest.mark.parametrize("kind", ["dovecot", "cyrus"])
async def test_two_machines_send_one_draft_once_by_the_claim_on_the_imap_server(
    request: pytest.FixtureRequest, chain: SubmissionDovecot, tmp_path: Path, kind: str
) -> None:
    """Two processes with state directories of their own share nothing but the IMAP server: the draft's
    CONDSTORE claim lets one send it (regression: both sent)."""
    await _two_processes_send_once(request, chain, tmp_path, kind, machines=2)


@pytest.mark.parametrize("kind", ["dovecot", "courier"])
async def test_a_restart_after_an_unknown_outcome_asks_nothing_and_sends_nothing(
    request: pytest.FixtureRequest, chain: SubmissionDovecot, tmp_path: Path, kind: str
) -> None:
    """The connection is cut after the message's data went out (``outcome_unknown``); the server process
    ends, a new one is started on the same state directory and asked to send the draft again: refused
    before the user is asked, nothing submitted (regression: the record was in the first process's memory;
    the new one asked again and sent a second copy)."""
    imap = _imap(request, kind, chain)
    sender, boxes = _sender(imap, chain)
    bob = chain.new_user()
    imap.seed(sender, boxes["drafts_mailbox"], [_draft(chain, sender, bob)], flags="\\Draft")
    before = _received(chain)
    with FaultProxy("127.0.0.1", chain.submission_port) as proxy:
        config = _config(tmp_path / "config.toml", imap, sender, boxes, chain, proxy.address[1], "plain",
                         tmp_path / "state")  # fmt: skip
        proxy.cut_after_sent(b"\r\n.\r\n")
        first = await _send(config, answering("accept"), boxes["drafts_mailbox"])
        assert first["data"]["outcome"] == "outcome_unknown", first
        again_asked = answering("accept")
        again = await _send(config, again_asked, boxes["drafts_mailbox"])
        assert proxy.cuts == 1
    assert not again["success"], again
    assert (again["error"]["code"], again["error"]["details"]["state"]) == ("conflict", "unknown")
    assert again_asked.asked == []
    assert _received(chain) == before + 1
    eventually(lambda: _inbox(chain, bob) >= 1, what="the one copy delivered")
    assert _inbox(chain, bob) == 1


@pytest.mark.parametrize("kind", ["dovecot", "cyrus"])
async def test_a_draft_claimed_on_another_machine_is_refused_before_the_user_is_asked(
    request: pytest.FixtureRequest, chain: SubmissionDovecot, tmp_path: Path, kind: str
) -> None:
    """The draft carries the claim a process on another machine left (its send cut short, its outcome
    unknown there): a process with a state directory of its own asks nothing and sends nothing."""
    imap = _imap(request, kind, chain)
    sender, boxes = _sender(imap, chain)
    bob = chain.new_user()
    imap.seed(sender, boxes["drafts_mailbox"], [_draft(chain, sender, bob)], flags=f"\\Draft {CLAIM_KEYWORD}")
    config = _config(tmp_path / "config.toml", imap, sender, boxes, chain, chain.submission_port, "plain",
                     tmp_path / "state")  # fmt: skip
    before, asked = _received(chain), answering("accept")
    answer = await _send(config, asked, boxes["drafts_mailbox"])
    assert not answer["success"], answer
    assert (answer["error"]["code"], answer["error"]["details"]["state"]) == ("conflict", "claimed")
    assert asked.asked == [] and _received(chain) == before


async def test_the_hourly_rate_is_counted_across_processes_and_restarts(
    chain: SubmissionDovecot, tmp_path: Path
) -> None:
    """``send_rate_per_hour = 1``: one process sends a draft and ends; the next process (same state
    directory) is refused the second draft (regression: each process counted from zero)."""
    sender, boxes = _sender(chain, chain)
    bob = chain.new_user()
    config = _config(tmp_path / "config.toml", chain, sender, boxes, chain, chain.submission_port, "plain",
                     tmp_path / "state")  # fmt: skip
    config.write_text(
        config.read_text().replace(
            "[accounts.default.smtp]", "send_rate_per_hour = 1\n[accounts.default.smtp]"
        )
    )
    before = _received(chain)
    for attempt in range(2):
        chain.seed(sender, boxes["drafts_mailbox"], [_draft(chain, sender, bob)], flags="\\Draft")
        answer = await _send(config, answering("accept"), boxes["drafts_mailbox"])
        if attempt == 0:
            assert answer["data"]["outcome"] == "sent", answer
    assert not answer["success"], answer
    assert (answer["error"]["code"], answer["error"]["details"]["setting"]) == (
        "limit_exceeded",
        "send_rate_per_hour",
    )
    assert _received(chain) == before + 1


async def test_a_draft_on_another_processs_approval_page_is_not_shown_on_a_second(
    chain: SubmissionDovecot, tmp_path: Path
) -> None:
    """Two Claude Desktop processes (no elicitation: the approval page): while the first one's page waits
    for the user, the second is refused the same draft (``approving``) rather than opening a second page
    (regression: the mark lived in the first process's memory)."""
    sender, boxes = _sender(chain, chain)
    bob = chain.new_user()
    chain.seed(sender, boxes["drafts_mailbox"], [_draft(chain, sender, bob)], flags="\\Draft")
    config = _config(tmp_path / "config.toml", chain, sender, boxes, chain, chain.submission_port, "plain",
                     tmp_path / "state")  # fmt: skip
    before = _received(chain)
    async with _process(config, None) as client:
        mcp = EnvelopeClient(client)
        (draft,) = (await mcp.ok("imap_search_messages", {"mailbox": boxes["drafts_mailbox"]}))["messages"]
        waiting = await mcp.ok(TOOL, {"message_id": draft["message_id"]})
        assert waiting["outcome"] == "waiting_for_approval", waiting
        second = await _send(config, None, boxes["drafts_mailbox"])
        await mcp.ok("imap_cancel_operation", {"operation_id": waiting["background"]["operation_id"]})
    assert not second["success"], second
    assert (second["error"]["code"], second["error"]["details"]["state"]) == ("conflict", "approving")
    assert _received(chain) == before


async def _ended(mcp: EnvelopeClient, operation: dict[str, str]) -> bool:
    polled = await mcp.ok("imap_get_operation", operation)
    return polled["operation"]["state"] not in ("accepted", "running")


def _browser_noting_its_server(noted: Path) -> str:
    """A browser (``BROWSER``) that opens the approval page and never answers, writing down the process
    that opened it (its parent: the server) in ``noted``."""
    code = f"import os, pathlib; pathlib.Path({str(noted)!r}).write_text(str(os.getppid()))"
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(code)} %s"


async def test_a_page_left_by_a_killed_process_refuses_no_later_send(
    chain: SubmissionDovecot, tmp_path: Path
) -> None:
    """Issue 78, S8-5: a server killed (SIGKILL) while its approval page waited left the account's page mark
    and the draft's for six minutes: every send on a page was ``conflict`` meanwhile ("a page is already
    open"). The marks name their process, and the next server clears those of a process gone: another
    draft, then the same one, open their page."""
    sender, boxes = _sender(chain, chain)
    bob = chain.new_user()
    drafts = [_draft(chain, sender, bob), _draft(chain, sender, bob)]
    chain.seed(sender, boxes["drafts_mailbox"], drafts, flags="\\Draft")
    config = _config(tmp_path / "config.toml", chain, sender, boxes, chain, chain.submission_port, "plain",
                     tmp_path / "state")  # fmt: skip
    noted = tmp_path / "server.pid"
    env = {"PATH": os.environ["PATH"], "HOME": os.environ["HOME"], PASSWORD_ENV: SESSION_PASSWORD}
    params = StdioServerParameters(
        command=SERVER,
        args=["serve", "--config", str(config)],
        env={**env, "BROWSER": _browser_noting_its_server(noted)},
    )
    before = _received(chain)
    async with Client(params) as client:
        mcp = EnvelopeClient(client)
        listed = (await mcp.ok("imap_search_messages", {"mailbox": boxes["drafts_mailbox"]}))["messages"]
        first, other = sorted(message["message_id"] for message in listed)
        waiting = await mcp.ok(TOOL, {"message_id": first})
        assert waiting["outcome"] == "waiting_for_approval", waiting
        server = int(eventually(lambda: noted.exists() and noted.read_text(), what="the page opened"))
        os.kill(server, signal.SIGKILL)
    answers = []
    async with _process(config, None) as client:
        mcp = EnvelopeClient(client)
        for draft in (other, first):  # the account's page mark, then the draft's
            answers.append(await mcp.call(TOOL, {"message_id": draft}))
            if answers[-1]["success"]:  # its page closed before the next opens
                ending = {"operation_id": answers[-1]["data"]["background"]["operation_id"]}
                await mcp.ok("imap_cancel_operation", ending)
                await eventually_async(
                    functools.partial(_ended, mcp, ending), what="the cancelled send ended"
                )
    for again in answers:
        assert again["success"] and again["data"]["outcome"] == "waiting_for_approval", again
    assert _received(chain) == before
