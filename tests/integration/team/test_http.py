"""`mail-imap-mcp serve --transport http`: a real server process on 127.0.0.1, driven by the SDK's
streamable HTTP client, with every envelope checked against its tool's outputSchema as on stdio."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import threading
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import MCPError
from mcp_types import ElicitRequestParams, ElicitResult

from tests.support.accounts import account_settings, config_toml
from tests.support.clients.elicitation import answering
from tests.support.clients.envelope_client import INITIALIZE_REQUEST, EnvelopeClient
from tests.support.mail import mailgen
from tests.support.patience import eventually_async, patient
from tests.support.run.readme import HTTP, readme_block
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.faultproxy import FaultProxy
from tests.support.servers.http_server import (
    SERVER,
    TOKEN_ENV,
    HttpServer,
    auth_headers,
    http_client,
    http_config,
    message_with_csv,
    new_token,
    start_http_server,
)

pytestmark = pytest.mark.anyio

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture
def server(tmp_path: Path, dovecot: Dovecot, user: str) -> Any:
    """A server with a bearer token for the fresh ``user`` (writes on), stopped after the test."""
    account = account_settings(dovecot, user, drafts_mailbox="Drafts")
    started = start_http_server(http_config(tmp_path, account), token=new_token())
    yield started
    started.stop()


#: The messages of ``reading_server``'s mailbox.
NOTES = 5


@pytest.fixture(scope="module")
def reading_server(tmp_path_factory: pytest.TempPathFactory, dovecot: Dovecot) -> Any:
    """One server for the tests that present tokens or read, changing no mailbox: each start of a
    server process costs about two CPU-seconds. Its fresh user holds ``NOTES`` messages. They run on
    one worker (ONE_WORKER in tests/conftest.py)."""
    user = dovecot.new_user()
    dovecot.seed(user, "INBOX", [mailgen.plain_message(f"Note {i}", f"text {i}") for i in range(NOTES)])
    account = account_settings(dovecot, user, drafts_mailbox="Drafts")
    started = start_http_server(
        http_config(tmp_path_factory.mktemp("reading-server"), account), token=new_token()
    )
    yield started
    started.stop()


async def exercise_every_tool(mcp: EnvelopeClient) -> set[str]:
    """Call every tool the server lists (success paths and a not_found each for the operation tools);
    return the names called. A mailbox delete needs confirmation: elicitation when the client offers
    it over the stateful session, else the confirm_token path."""
    called: set[str] = set()

    async def ok(tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        called.add(tool)
        return await mcp.ok(tool, arguments)

    (account,) = (await ok("imap_list_accounts"))["accounts"]
    assert account["account_id"] == "default"
    boxes = await ok("imap_list_mailboxes", {"include_counts": True})
    assert boxes["mailboxes"][0]["name"] == "INBOX" and boxes["mailboxes"][0]["messages"] == 3
    found = await ok("imap_search_messages", {"limit": 2, "fields": "full"})
    assert found["total"] == 3 and found["has_more"]
    more = await ok("imap_search_messages", {"limit": 2, "cursor": found["next_cursor"]})
    ids = [m["message_id"] for m in found["messages"] + more["messages"]]
    assert len(set(ids)) == 3
    start = await ok("imap_get_changes", {})
    quiet = await ok("imap_get_changes", {"since": start["changes_token"]})
    assert (quiet["new"], quiet["changed"], quiet["expunged"]) == ([], [], [])
    message = (await ok("imap_get_message", {"message_id": ids[0]}))["message"]
    assert "\\Seen" not in message.get("flags", [])
    (with_csv,) = [m for m in found["messages"] + more["messages"] if m.get("has_attachments")]
    (csv,) = (await ok("imap_get_message", {"message_id": with_csv["message_id"]}))["message"]["attachments"]
    part = {"message_id": with_csv["message_id"], "part_id": csv["part_id"], "mode": "bytes"}
    read = await ok("imap_get_attachment", part)
    assert b"March,42" in base64.b64decode(read["raw_base64"])
    thread = await ok("imap_get_thread", {"message_id": ids[0]})
    assert thread["total"] >= 1 and ids[0] in [m["message_id"] for m in thread["messages"]]
    raw = await ok("imap_get_message_raw", {"message_id": ids[0], "max_bytes": 1024})
    assert raw["returned_bytes"] > 0 and "Subject: " in raw["raw_text"] and raw["raw_base64"] is None
    resource = await mcp.client.read_resource(found["messages"][0]["message_uri"])
    assert '"success":true' in resource.contents[0].text.replace(" ", "")  # type: ignore[union-attr]
    flagged = await ok(
        "imap_update_message_flags", {"message_ids": [ids[0]], "operation": "add", "flags": ["\\Flagged"]}
    )
    assert flagged["status"] == "ok"
    await ok("imap_manage_mailbox", {"action": "create", "mailbox": "Projects"})
    await ok(
        "imap_apply_to_messages",
        {"message_ids": [ids[1]], "action": "move", "destination_mailbox": "Projects"},
    )
    await ok("imap_manage_mailbox", {"action": "create", "mailbox": "Drafts"})
    await ok("imap_save_draft", {"to": ["bob@example.com"], "subject": "Over HTTP", "body_text": "hello"})
    for tool in ("imap_get_operation", "imap_cancel_operation"):
        called.add(tool)
        await mcp.fail(tool, {"operation_id": "op_1_abc"}, "not_found")
    await ok("imap_manage_mailbox", {"action": "create", "mailbox": "Old"})
    delete = {"action": "delete", "mailbox": "Old"}
    called.add("imap_manage_mailbox")
    first = await mcp.call("imap_manage_mailbox", delete)
    if not first["success"]:
        assert first["error"]["code"] == "confirmation_required", first["error"]
        await mcp.ok("imap_manage_mailbox", first["data"]["next_action"]["arguments"])
    names = {box["name"] for box in (await mcp.ok("imap_list_mailboxes"))["mailboxes"]}
    assert "Old" not in names and "Projects" in names
    return called


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_every_tool_over_http_answers_a_valid_envelope(
    server: HttpServer, dovecot: Dovecot, user: str, mode: str
) -> None:
    messages = [mailgen.plain_message(f"Message {i}", f"body {i}") for i in range(2)]
    dovecot.seed(user, "INBOX", [*messages, message_with_csv("Report")])
    elicit = answering()
    async with http_client(server.url, server.token, mode=mode, elicitation_callback=elicit) as mcp:
        listed = set(await mcp.schemas())
        assert await exercise_every_tool(mcp) == listed
    if mode == "legacy":
        # The handshake protocol over a stateful HTTP session: the server asked the user itself.
        assert len(elicit.asked) == 1 and "Old" in elicit.asked[0], elicit.asked
    else:
        # The per-request protocol has no channel back to the client: the confirm_token path.
        assert elicit.asked == []
    assert server.token is not None and server.token not in server.log()


async def test_missing_or_wrong_token_is_refused_with_a_bearer_challenge(reading_server: HttpServer) -> None:
    server = reading_server
    assert server.token is not None
    async with httpx2.AsyncClient(timeout=patient(10)) as http:
        missing = await http.post(server.url, json=INITIALIZE_REQUEST, headers=MCP_HEADERS)
        assert missing.status_code == 401
        assert missing.headers["www-authenticate"].startswith("Bearer")
        assert "error=" not in missing.headers["www-authenticate"]  # RFC 6750: no credentials, no error
        for header in (
            f"Bearer {server.token[:-1]}",
            f"Bearer {server.token}x",
            "Bearer",
            f"Basic {server.token}",
        ):
            wrong = await http.post(
                server.url, json=INITIALIZE_REQUEST, headers={**MCP_HEADERS, "Authorization": header}
            )
            assert wrong.status_code == 401, header
            assert wrong.headers["www-authenticate"].startswith("Bearer"), header
        wrong = await http.post(
            server.url, json=INITIALIZE_REQUEST, headers={**MCP_HEADERS, **auth_headers("x" * 43)}
        )
        assert 'error="invalid_token"' in wrong.headers["www-authenticate"]
        right = await http.post(
            server.url, json=INITIALIZE_REQUEST, headers={**MCP_HEADERS, **auth_headers(server.token)}
        )
        assert right.status_code == 200
        # No OAuth discovery document points at an authorization server that does not exist.
        for path in (
            "/.well-known/oauth-protected-resource",
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-authorization-server",
            "/.well-known/openid-configuration",
            "/authorize",
            "/token",
            "/register",
        ):
            answer = await http.get(
                server.url.removesuffix("/mcp") + path, headers=auth_headers(server.token)
            )
            assert answer.status_code == 404, path
            unauthenticated = await http.get(server.url.removesuffix("/mcp") + path)
            assert unauthenticated.status_code == 401, path
        # No allowed_origins, no CORS: a browser page of another origin cannot even ask.
        preflight = await http.options(
            server.url, headers={"Origin": "http://localhost:3000", "Access-Control-Request-Method": "POST"}
        )
        assert preflight.status_code == 401 and "access-control-allow-origin" not in preflight.headers
    # The SDK client cannot even initialize (its error arrives wrapped in task-group exception groups).
    with pytest.raises(ExceptionGroup) as caught:
        async with http_client(server.url, "y" * 43) as mcp:
            await mcp.call("imap_list_accounts")
    assert caught.group_contains(MCPError, match="Server returned an error response")
    log = server.log()
    assert "refused 401 " in log and server.token not in log and "y" * 43 not in log


async def test_several_clients_use_their_own_sessions_at_once(reading_server: HttpServer) -> None:
    server = reading_server
    sessions: list[set[str]] = [set() for _ in range(4)]

    async def one_client(index: int) -> None:
        async with http_client(server.url, server.token, mode="legacy", sessions=sessions[index]) as mcp:
            for _ in range(3):
                found = await mcp.ok("imap_search_messages", {"limit": 5})
                assert found["total"] == NOTES
                message = await mcp.ok(
                    "imap_get_message", {"message_id": found["messages"][index]["message_id"]}
                )
                assert message["message"]["subject"] == f"Note {4 - index}"

    async with anyio.create_task_group() as group:
        for index in range(4):
            group.start_soon(one_client, index)
    # One session per client, each its own; every call reached the server.
    assert all(len(ids) == 1 for ids in sessions) and len(set.union(*sessions)) == 4
    log = server.log()
    assert log.count("tool=imap_search_messages") == 12 and log.count("tool=imap_get_message ") == 12


@pytest.mark.slow
def test_a_non_loopback_bind_without_a_token_is_refused_before_listening(
    tmp_path: Path, dovecot: Dovecot
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(config_toml({"default": account_settings(dovecot, "nobody")}))
    for args, named in (
        (["--host", "0.0.0.0"], "token_env, token_file or token_command"),
        (["--host", "::"], "token_env, token_file or token_command"),
        (["--host", "192.0.2.10"], "token_env, token_file or token_command"),
    ):
        done = subprocess.run(
            [SERVER, "serve", "--config", str(config), "--transport", "http", "--port", "0", *args],
            capture_output=True,
            timeout=patient(30),
            check=False,
            env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        )
        assert done.returncode == 2, done.stderr
        assert named in done.stderr.decode() and "not a loopback address" in done.stderr.decode()
        assert b"serving MCP" not in done.stderr


def test_a_non_loopback_bind_needs_allowed_hosts_too(tmp_path: Path, dovecot: Dovecot) -> None:
    config = http_config(tmp_path, account_settings(dovecot, "nobody"))
    done = subprocess.run(
        [SERVER, "serve", "--config", str(config), "--transport", "http", "--port", "0", "--host", "0.0.0.0"],
        capture_output=True,
        timeout=patient(30),
        check=False,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), TOKEN_ENV: new_token()},
    )
    assert done.returncode == 2
    assert b"allowed_hosts" in done.stderr and b"DNS-rebinding" in done.stderr


def test_http_flags_need_the_http_transport(tmp_path: Path) -> None:
    done = subprocess.run(
        [SERVER, "serve", "--host", "127.0.0.1"], capture_output=True, timeout=patient(30), check=False
    )
    assert done.returncode == 2 and b"--transport http" in done.stderr


async def test_dns_rebinding_protection_refuses_a_foreign_host_or_origin(
    tmp_path: Path, dovecot: Dovecot, user: str
) -> None:
    token = new_token()
    config = http_config(tmp_path, account_settings(dovecot, user))
    server = start_http_server(config, "--allowed-origin", "https://agent.example.com", token=token)
    try:
        headers = {**MCP_HEADERS, **auth_headers(token)}
        modern = {**headers, "MCP-Protocol-Version": "2026-07-28"}
        async with httpx2.AsyncClient(timeout=patient(10)) as http:
            for extra, status in (
                ({"Host": "attacker.example"}, 421),
                ({"Host": f"attacker.example:{server.port}"}, 421),
                ({"Origin": "http://attacker.example"}, 403),
                ({"Origin": f"http://attacker.example:{server.port}"}, 403),
                ({"Origin": "https://agent.example.com.attacker.example"}, 403),
                ({"Origin": "null"}, 403),
                ({"Origin": f"http://localhost:{server.port}"}, 200),
                ({"Origin": "https://agent.example.com"}, 200),
                ({"Host": f"localhost:{server.port}"}, 200),
            ):
                answer = await http.post(server.url, json=INITIALIZE_REQUEST, headers={**headers, **extra})
                assert answer.status_code == status, (extra, answer.status_code, answer.text)
            # CORS only for the configured browser origin: its preflight (which carries no token) is
            # answered, and its responses (a 401 included) are readable by the page.
            preflight = {
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization, content-type, mcp-protocol-version",
            }
            allowed = await http.options(
                server.url, headers={**preflight, "Origin": "https://agent.example.com"}
            )
            assert allowed.status_code == 200
            assert allowed.headers["access-control-allow-origin"] == "https://agent.example.com"
            assert "authorization" in allowed.headers["access-control-allow-headers"].lower()
            foreign = await http.options(
                server.url, headers={**preflight, "Origin": "http://attacker.example"}
            )
            assert foreign.status_code != 200 and "access-control-allow-origin" not in foreign.headers
            for sent, status in ((headers, 200), (MCP_HEADERS, 401)):
                answer = await http.post(
                    server.url,
                    json=INITIALIZE_REQUEST,
                    headers={**sent, "Origin": "https://agent.example.com"},
                )
                assert answer.status_code == status
                assert answer.headers["access-control-allow-origin"] == "https://agent.example.com"
                assert "mcp-session-id" in answer.headers["access-control-expose-headers"].lower()
            # The per-request (2026) protocol takes another path through the SDK: checked there too.
            for extra, status in (
                ({"Host": "attacker.example"}, 421),
                ({"Origin": "http://attacker.example"}, 403),
            ):
                answer = await http.post(server.url, json=INITIALIZE_REQUEST, headers={**modern, **extra})
                assert answer.status_code == status, (extra, answer.status_code, answer.text)
    finally:
        server.stop()
    assert "invalid Host header" in server.log() and "invalid Origin header" in server.log()


def slow_imap_server(
    tmp_path: Path, dovecot: Dovecot, user: str, proxy: FaultProxy, grace_s: float
) -> HttpServer:
    """A server whose account reaches Dovecot in plaintext through ``proxy`` (so the IMAP commands it
    sends, LOGOUT included, can be read off the wire), with ``shutdown_grace_s`` = ``grace_s``."""
    account = account_settings(dovecot, user, port=proxy.address[1], security="plain", ca_file=None)
    config = http_config(tmp_path, account, f"shutdown_grace_s = {grace_s}\n")
    return start_http_server(config, token=new_token())


async def wait_until(predicate: Any, within: float = 15.0) -> None:
    async def holds() -> bool:
        return bool(predicate())

    await eventually_async(holds, within=within, interval=0.02)


@pytest.mark.slow
async def test_sigterm_lets_the_call_in_flight_finish_refuses_new_ones_and_logs_out(
    tmp_path: Path, dovecot: Dovecot, user: str
) -> None:
    dovecot.seed(user, "INBOX", [mailgen.plain_message(f"Slow {i}", f"body {i}") for i in range(3)])
    with FaultProxy(dovecot.host, dovecot.plain_port) as proxy:
        server = slow_imap_server(tmp_path, dovecot, user, proxy, grace_s=20)
        try:
            async with http_client(server.url, server.token, mode="legacy") as mcp:
                found = await mcp.ok("imap_search_messages")
                proxy.set_latency(0.4)
                sent_before = len(proxy.sent())
                result: dict[str, Any] = {}

                async def read_slowly() -> None:
                    message_id = found["messages"][0]["message_id"]
                    result.update(await mcp.ok("imap_get_message", {"message_id": message_id}))

                async with anyio.create_task_group() as group:
                    group.start_soon(read_slowly)
                    # The call has reached Dovecot: it is in flight on the server's side.
                    await wait_until(lambda: len(proxy.sent()) > sent_before)
                    started = anyio.current_time()
                    server.terminate()
                    await wait_until(lambda: "refusing new calls" in server.log())
                    async with httpx2.AsyncClient(timeout=patient(10)) as http:
                        late = await http.post(
                            server.url,
                            json=INITIALIZE_REQUEST,
                            headers={**MCP_HEADERS, **auth_headers(server.token)},
                        )
                    assert late.status_code == 503 and late.headers["retry-after"]
                    assert "shutting down" in late.json()["error"]["message"]
                assert result["message"]["subject"] == "Slow 2"
                proxy.pass_through()
            await anyio.to_thread.run_sync(server.proc.wait, 15)
            took = anyio.current_time() - started
        finally:
            server.stop()
        assert server.proc.returncode == 0
        print(f"the call in flight and the logout took {took:.1f} s (the grace, 20 s, was not needed)")
        log = server.log()
        assert "still running" not in log and "stopped" in log
        assert b"LOGOUT" in proxy.sent()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("grace_s", "signals", "logged"),
    [(1, 1, "1 call(s) still running after the grace period"), (60, 2, "second signal")],
    ids=["grace-period-over", "second-signal"],
)
async def test_sigterm_cancels_a_call_that_outlives_the_grace_period_or_a_second_signal(
    tmp_path: Path, dovecot: Dovecot, user: str, grace_s: float, signals: int, logged: str
) -> None:
    dovecot.seed(user, "INBOX", [mailgen.plain_message("Stuck", "body")])
    with FaultProxy(dovecot.host, dovecot.plain_port) as proxy:
        server = slow_imap_server(tmp_path, dovecot, user, proxy, grace_s=grace_s)
        try:
            with pytest.raises(ExceptionGroup):  # noqa: PT012 - the call dies with the server, as it must
                async with http_client(server.url, server.token, mode="legacy") as mcp:
                    found = await mcp.ok("imap_search_messages")
                    # The call's FETCH goes silent from the moment it is sent: no answer ever comes back.
                    fetching = threading.Event()

                    def go_silent() -> None:
                        proxy.blackhole()
                        fetching.set()

                    proxy.before_sent(b"FETCH", go_silent)
                    async with anyio.create_task_group() as group:
                        arguments = {"message_id": found["messages"][0]["message_id"]}
                        group.start_soon(mcp.call, "imap_get_message", arguments)
                        await wait_until(fetching.is_set)  # the call is in flight on the server's side
                        server.terminate()
                        if signals == 2:
                            await wait_until(lambda: "refusing new calls" in server.log())
                            server.terminate()
                        started = anyio.current_time()
                        await anyio.to_thread.run_sync(server.proc.wait, 15)
                        took = anyio.current_time() - started
        finally:
            proxy.pass_through()
            server.stop()
        assert server.proc.returncode == 0
        # grace (1 s, or cut by the second signal) + open streams (at most 2 s) + the blocked command
        # given up (1 s more) + logout (at most 0.8 s): what ended it is in the log, how fast is bench's
        print(f"ended {took:.1f} s after the signal")
        assert logged in server.log()


async def test_the_readme_http_setup_works_as_written(tmp_path: Path, dovecot: Dovecot, user: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "PATH": os.environ["PATH"]}
    subprocess.run(["bash", "-c", readme_block("http-token", HTTP)], env=env, check=True, timeout=patient(30))
    token_file = home / ".config" / "mail-imap-mcp" / "http-token"
    assert token_file.stat().st_mode & 0o077 == 0
    token = token_file.read_text().strip()
    config = home / ".config" / "mail-imap-mcp" / "config.toml"
    config.write_text(
        config_toml({"default": account_settings(dovecot, user)}) + readme_block("http-config", HTTP)
    )
    command = (
        readme_block("http-serve", HTTP)
        .strip()
        .replace("~/.local/share/mail-imap-mcp/bin/mail-imap-mcp", SERVER)
    )
    command = command.replace("--port 8000", "--port 0")  # the one change: never a fixed port in tests
    server = start_http_server(config, env=env, argv=["bash", "-c", f"exec {command}"])
    try:
        entry = json.loads(readme_block("http-client", HTTP))["mcpServers"]["mail"]
        assert entry["type"] == "http" and entry["url"].endswith("/mcp")
        headers = {
            name: value.replace("<the token from http-token>", token)
            for name, value in entry["headers"].items()
        }
        async with http_client(server.url, None, headers=headers) as mcp:
            (account,) = (await mcp.ok("imap_list_accounts"))["accounts"]
            assert account["username"] == user
        async with httpx2.AsyncClient(timeout=patient(10)) as http:
            refused = await http.post(server.url, json=INITIALIZE_REQUEST, headers=MCP_HEADERS)
            assert refused.status_code == 401
    finally:
        server.stop()
    assert token not in server.log()


@pytest.mark.slow
async def test_an_elicitation_answered_during_shutdown_still_completes_the_confirmed_write(
    tmp_path: Path, dovecot: Dovecot, user: str
) -> None:
    """Draining refuses new calls, not the answers the calls in flight are waiting for."""
    server = start_http_server(http_config(tmp_path, account_settings(dovecot, user)), token=new_token())
    try:

        async def answer_after_sigterm(context: Any, params: ElicitRequestParams) -> ElicitResult:
            server.terminate()
            await wait_until(lambda: "refusing new calls" in server.log())
            return ElicitResult(action="accept", content={"confirm": True})

        async with http_client(
            server.url, server.token, mode="legacy", elicitation_callback=answer_after_sigterm
        ) as mcp:
            await mcp.ok("imap_manage_mailbox", {"action": "create", "mailbox": "Old"})
            deleted = await mcp.ok("imap_manage_mailbox", {"action": "delete", "mailbox": "Old"})
            assert deleted["status"] == "ok"
        await anyio.to_thread.run_sync(server.proc.wait, 15)
    finally:
        server.stop()
    assert server.proc.returncode == 0
    assert not dovecot.folder_path(user, "Old").exists()
