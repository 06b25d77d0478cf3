"""Another OS user of the machine can neither approve a send nor finish a sign-in (issue 56 item 1), while
the user's own headless Chromium still can. Run as root: the test makes an unprivileged OS user
(tests/support/os_users.py) whose program (tests/support/clients/local_attacker.py) reads every process's command
line every 20 ms (the user's browser waits for its attempts) and attacks every address found there: it
fetches the page and answers "Send" with a forged Origin, probes the listener's launch and callback
addresses with a forged code and state, signs in at any authorization URL as its own account and
delivers the provider's answer to the loopback listener.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.support.clients import chromium
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.os_users import PYTHON, OsUser, os_user, why_no_os_users
from tests.support.patience import eventually, patient
from tests.support.servers.oidc_provider import OidcProvider
from tests.support.servers.submission import SubmissionDovecot
from tests.support.shared.login_command import Terminal
from tests.support.shared.login_command import terminal as terminal
from tests.support.shared.send import (
    CHROMIUM_BROWSER,
    TOOL,
    _decided,
    _delivered,
    _draft_id,
    _everywhere,
    _page_and_answer,
    _reply_to,
    _setup,
    desktop_server,
)
from tests.support.shared.sign_in_tokens import ACCOUNT
from tests.support.shared.sign_in_tokens import keychain as keychain

pytestmark = [
    pytest.mark.skipif(why_no_os_users() is not None, reason=f"{why_no_os_users()}"),
    pytest.mark.skipif(not chromium.installed(), reason="chromium and chromium-driver are not installed"),
]
#: The account the other user signs in as at the provider (its own).
MALLORY = "mallory"
#: What the other user's program reports of its requests to a listener, and how many it makes there: the
#: address it found, then the launch and callback addresses (tests/support/clients/local_attacker.py).
AT_THE_LISTENER = ("loopback_get", "loopback_forwarded", "probe")
ATTEMPTS_AT_THE_LISTENER = 3


@dataclass
class Attacker:
    """The other user's program, running; :attr:`reports` its attempts so far (JSON lines)."""

    process: subprocess.Popen[str]
    reports: list[dict[str, Any]] = field(default_factory=list)

    def read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.reports.append(json.loads(line))

    def of(self, *kinds: str) -> list[dict[str, Any]]:
        return [report for report in self.reports if report["kind"] in kinds]

    def goes_first(self, gate: Path) -> dict[str, str]:
        """The ``BROWSER`` environment that holds the user's browser back until this program has made its
        attempts at the listener (the address it found on the browser's command line, then the launch and
        callback addresses): else, on a loaded machine, the user's sign-in or answer was done and the
        listener closed before it came (a connection reset, not a refusal)."""

        def open_the_gate() -> None:
            try:
                eventually(
                    lambda: len(self.of(*AT_THE_LISTENER)) >= ATTEMPTS_AT_THE_LISTENER,
                    within=60,
                    what="the other user's attempts at the listener",
                )
            finally:  # the browser goes on whatever came: the asserts say what the program tried
                gate.touch()

        threading.Thread(target=open_the_gate, daemon=True).start()
        return {"BROWSER_TEST_WAIT_FOR": str(gate)}


@pytest.fixture
def other_user() -> Iterator[OsUser]:
    with os_user() as user:
        yield user


@pytest.fixture
def attacker(other_user: OsUser) -> Iterator[Attacker]:
    script = str(Path(chromium.__file__).with_name("local_attacker.py"))  # run, not imported: stdlib only
    process = other_user.popen([PYTHON, script, MALLORY, str(os.getpid())], stdout=subprocess.PIPE)
    running = Attacker(process)
    reader = threading.Thread(target=running.read, daemon=True)
    reader.start()
    try:
        (started,) = eventually(lambda: running.of("started"), within=30, what="the attacker to start")
        assert started["status"] == other_user.uid  # it runs as the other user
        yield running
    finally:
        process.terminate()
        process.wait()
        reader.join()


def _found_the_listener(attacker: Attacker) -> list[dict[str, Any]]:
    """The attacker's requests to the page's listener, each refused as another user's (403)."""
    tried = attacker.of(*AT_THE_LISTENER)
    assert tried, attacker.reports  # it found the address on a command line and tried it
    assert {report["status"] for report in tried} == {403}, tried
    assert all("runs as another user of this computer" in report["answer"] for report in tried)
    return tried


@pytest.mark.anyio
@pytest.mark.parametrize("press", ["send", "decline"])
async def test_another_os_user_cannot_approve_a_send_and_the_users_chromium_can(
    chain: SubmissionDovecot, tmp_path: Path, attacker: Attacker, press: str
) -> None:
    """The browser's command line holds no secret (the listener's launch address), and every request of
    the other user's program is refused before it is read: the page is neither opened, voided nor
    answered by it. The user's own Chromium then sends (once) or declines (nothing goes out)."""
    sender, bob, carol = _setup(chain)
    _reply_to(chain, sender, bob)
    done = tmp_path / "page.txt"
    params = desktop_server(chain, sender, tmp_path, press, done)
    assert params.env is not None
    params.env.update(attacker.goes_first(tmp_path / "go"))
    before = _everywhere(chain, sender, [bob, carol])
    async with Client(params) as client:
        mcp = EnvelopeClient(client)
        waiting = await mcp.call(TOOL, {"message_id": await _draft_id(mcp)})
        answer = await _decided(mcp, waiting)
    assert attacker.of("approval_send") == []  # it never even saw the page's form
    _found_the_listener(attacker)
    _, answered = await _page_and_answer(done)
    if press == "decline":
        assert answered.startswith("Not sent"), answered
        assert answer["error"]["details"] == {"approval": "dont_send"}, answer
        assert await _delivered(chain, bob, 0) == [] and _everywhere(chain, sender, [bob, carol]) == before
        return
    assert answered.startswith("Approved"), answered
    assert answer["data"]["outcome"] == "sent", answer
    assert len(await _delivered(chain, bob, 1)) == 1


def test_another_os_user_cannot_finish_the_sign_in_of_login_and_the_users_chromium_can(
    oidc: OidcProvider, terminal: Terminal, attacker: Attacker
) -> None:
    """``login``'s browser is given the listener's launch address (no ``state``, no authorization URL):
    the other user's program, refused there and at the callback, never learns the authorization request,
    so it cannot sign in as itself and hand its answer to the listener; the user's Chromium signs in."""
    done = terminal.run(
        "login", ACCOUNT, BROWSER=CHROMIUM_BROWSER, **attacker.goes_first(terminal.directory / "go")
    )
    assert done.returncode == 0, done.stderr
    assert f"{ACCOUNT}: signed in as {terminal.user}" in terminal.run("status").stdout
    assert attacker.of("sign_in") == []
    _found_the_listener(attacker)


#: A sign-in listener of the package's own (its modules need only the standard library), run by an owner.
_LISTENER = textwrap.dedent(
    """
    import sys
    from mail_imap_mcp.net.loopback_redirect import RedirectListener
    with RedirectListener() as listener:
        listener.expect("https://provider.test/authorize?state=s", "s")
        print(listener.port, flush=True)
        print(listener.wait(float(sys.argv[1])) is not None, flush=True)
    """
)
_GET = textwrap.dedent(
    """
    import sys, urllib.error, urllib.request
    class Stay(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None
    try:
        print(urllib.request.build_opener(Stay()).open(sys.argv[1], timeout=30).status)
    except urllib.error.HTTPError as answer:
        print(answer.code)
    """
)


def test_a_listener_of_an_unprivileged_user_serves_that_user_alone(other_user: OsUser) -> None:
    """Two unprivileged users (not root, whose connections are let through as root can read any
    process anyway): the owner's own program is forwarded to the sign-in and its answer taken; the
    other user's is refused at the launch address and at the callback with the right state."""
    source = str(Path(__file__).parents[3] / "src")
    with os_user() as owner:
        serving = owner.popen(
            [PYTHON, "-c", _LISTENER, str(patient(60))], stdout=subprocess.PIPE, extra={"PYTHONPATH": source}
        )
        assert serving.stdout is not None
        base = f"http://127.0.0.1:{int(serving.stdout.readline())}"

        def status_for(user: OsUser, path: str) -> int:
            done = subprocess.run(
                user.command([PYTHON, "-c", _GET, base + path]),
                capture_output=True,
                text=True,
                timeout=patient(60),
            )
            return int(done.stdout)

        assert status_for(other_user, "/start") == 403
        assert status_for(other_user, "/callback?code=theirs&state=s") == 403
        assert status_for(owner, "/start") == 303
        assert status_for(owner, "/callback?code=mine&state=s") == 200
        assert serving.stdout.readline().strip() == "True"
        assert serving.wait(patient(30)) == 0
