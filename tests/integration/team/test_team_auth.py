"""A team's server (issue 39): each user signs in with an access token of the team's identity provider
(a real authorization server on a loopback socket: JWKS, token issuing, introspection), and sees only
the accounts that are theirs: a ``per_user`` template on Dovecot (their own mailbox) and a shared
mailbox for a few. A real ``mail-imap-mcp serve --transport http`` process, the SDK's HTTP client."""

from __future__ import annotations

import json
import subprocess
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp import MCPError
from mcp_types import PromptReference

from tests.support.clients.envelope_client import INITIALIZE_REQUEST, EnvelopeClient
from tests.support.mail import mailgen
from tests.support.patience import patient
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.http_server import SERVER, HttpServer, http_client
from tests.support.servers.identity_provider import IdentityProvider
from tests.support.servers.imapserver import free_ports
from tests.support.servers.team import (
    MASTER_PASSWORD,
    Team,
    new_team,
    serve_per_user,
    start_instances,
    team_config,
)

pytestmark = pytest.mark.anyio

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def seeded_team(dovecot: Dovecot) -> Team:
    """A new team whose every user has one message in INBOX (``mail of <user>``)."""
    team = new_team(dovecot)
    for user in (team.alice, team.bob, team.outsider, team.shared_user):
        dovecot.seed(user, "INBOX", [mailgen.plain_message(f"mail of {user}", f"only for {user}")])
    return team


@pytest.fixture
def team(dovecot: Dovecot) -> Team:
    return seeded_team(dovecot)


def _serve(tmp_path: Path, dovecot: Dovecot, team: Team, idp: IdentityProvider, **options: Any) -> HttpServer:
    (port,) = free_ports("127.0.0.1")
    audience = f"http://127.0.0.1:{port}/mcp"
    config = team_config(tmp_path / "config.toml", dovecot, team, idp, audience=audience, **options)
    (server,) = start_instances(config, [port])
    return server


@pytest.fixture
def server(tmp_path: Path, dovecot: Dovecot, team: Team, idp: IdentityProvider) -> Iterator[HttpServer]:
    started = _serve(tmp_path, dovecot, team, idp)
    yield started
    started.stop()


class SharedServer(NamedTuple):
    server: HttpServer
    team: Team


@pytest.fixture(scope="module")
def shared_server(
    tmp_path_factory: pytest.TempPathFactory, dovecot: Dovecot, idp: IdentityProvider
) -> Iterator[SharedServer]:
    """One server for the tests that change nothing (they present tokens, or read the team's mailboxes
    as :func:`seeded_team` made them): each start of a server process costs about two CPU-seconds.
    They run on one worker (ONE_WORKER in tests/conftest.py)."""
    team = seeded_team(dovecot)
    started = _serve(tmp_path_factory.mktemp("shared-server"), dovecot, team, idp)
    yield SharedServer(started, team)
    started.stop()


def post(server: HttpServer, token: str | None) -> httpx2.Response:
    headers = {**MCP_HEADERS, **({"Authorization": f"Bearer {token}"} if token else {})}
    return httpx2.post(
        server.url, headers=headers, content=json.dumps(INITIALIZE_REQUEST), timeout=patient(10)
    )


def test_the_protected_resource_metadata_names_the_issuer(
    shared_server: SharedServer, idp: IdentityProvider
) -> None:
    server = shared_server.server
    for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
        answer = httpx2.get(urllib.parse.urljoin(server.url, path), timeout=patient(10))
        assert answer.status_code == 200, path
        metadata = answer.json()
        assert metadata["resource"] == server.url
        assert metadata["authorization_servers"] == [idp.issuer]
        assert metadata["scopes_supported"] == ["mail"]


def test_a_request_without_a_token_is_told_where_the_metadata_is(shared_server: SharedServer) -> None:
    answer = post(shared_server.server, None)
    assert answer.status_code == 401
    challenge = answer.headers["www-authenticate"]
    assert challenge.startswith("Bearer ")
    assert 'resource_metadata="http://127.0.0.1:' in challenge
    assert "/.well-known/oauth-protected-resource/mcp" in challenge
    assert "error=" not in challenge  # RFC 6750: no error code when no credentials were sent


def test_tokens_expired_early_for_another_audience_or_issuer_or_forged_are_refused(
    shared_server: SharedServer, idp: IdentityProvider
) -> None:
    server, team = shared_server
    audience = server.url
    refused = {
        "expired": idp.jwt(team.alice, audience=audience, lifetime_s=-120),
        "not valid yet": idp.jwt(team.alice, audience=audience, nbf=2**31 - 10),
        "another audience": idp.jwt(team.alice, audience="https://other-service.example/mcp"),
        "another issuer": idp.jwt(team.alice, audience=audience, iss="https://evil.example"),
        "signature": idp.jwt(team.alice, audience=audience, key=rsa.generate_private_key(65537, 2048)),
        "not a jwt": "not-a-token",
    }
    for why, token in refused.items():
        answer = post(server, token)
        assert answer.status_code == 401, why
        challenge = answer.headers["www-authenticate"]
        assert 'error="invalid_token"' in challenge and "resource_metadata=" in challenge, why
        assert why in answer.json()["error_description"] or why == "not a jwt", why
    missing_scope = post(server, idp.jwt(team.alice, audience=audience, scope="calendar"))
    assert missing_scope.status_code == 403
    assert 'error="insufficient_scope"' in missing_scope.headers["www-authenticate"]
    assert post(server, idp.jwt(team.alice, audience=audience)).status_code == 200
    log = server.log()
    for token in refused.values():
        assert token not in log


async def test_each_user_sees_their_own_mailbox_and_the_shared_one_and_nothing_else(
    shared_server: SharedServer, idp: IdentityProvider
) -> None:
    server, team = shared_server
    seen: dict[str, dict[str, Any]] = {}
    for user in (team.alice, team.bob):
        async with http_client(server.url, idp.jwt(user, audience=server.url)) as mcp:
            accounts = (await mcp.ok("imap_list_accounts"))["accounts"]
            assert sorted(a["account_id"] for a in accounts) == ["own", "support"]
            own = await mcp.ok("imap_search_messages", {"account_id": "own", "fields": "full"})
            assert [m["subject"] for m in own["messages"]] == [f"mail of {user}"]
            shared = await mcp.ok("imap_search_messages", {"account_id": "support", "fields": "full"})
            assert [m["subject"] for m in shared["messages"]] == [f"mail of {team.shared_user}"]
            seen[user] = {"own": own["messages"][0], "support": shared["messages"][0]}
    # Alice's message ids name her own mailbox and carry her: for Bob they are not_found (never hers).
    async with http_client(server.url, idp.jwt(team.bob, audience=server.url)) as bob:
        alice_own = seen[team.alice]["own"]["message_id"]
        answer = await bob.fail("imap_get_message", {"message_id": alice_own}, "not_found")
        assert f"mail of {team.alice}" not in json.dumps(answer)
    # Someone signed in whom no account lists sees none, and an id of the shared mailbox is not_found,
    # worded as for an account that does not exist.
    async with http_client(server.url, idp.jwt(team.outsider, audience=server.url)) as eve:
        assert (await eve.ok("imap_list_accounts"))["accounts"] == []
        failure = await eve.fail(
            "imap_get_message", {"message_id": seen[team.alice]["support"]["message_id"]}, "not_found"
        )
        assert team.shared_user not in json.dumps(failure) and "own" not in failure["error"]["message"]
        missing = await eve.fail("imap_search_messages", {"account_id": "nowhere"}, "not_found")
        assert (
            missing["error"]["message"].replace("'nowhere'", "'support'")
            == (await eve.fail("imap_search_messages", {"account_id": "support"}, "not_found"))["error"][
                "message"
            ]
        )


async def test_a_users_cursor_and_changes_token_mean_nothing_to_another_user(
    server: HttpServer, idp: IdentityProvider, team: Team, dovecot: Dovecot
) -> None:
    dovecot.seed(team.shared_user, "INBOX", [mailgen.plain_message(f"more {i}", "x") for i in range(3)])
    async with http_client(server.url, idp.jwt(team.alice, audience=server.url)) as alice:
        page = await alice.ok("imap_search_messages", {"account_id": "support", "limit": 1})
        changes = await alice.ok("imap_get_changes", {"account_id": "support"})
        assert (
            await alice.ok(
                "imap_search_messages", {"account_id": "support", "limit": 1, "cursor": page["next_cursor"]}
            )
        )["messages"]
    async with http_client(server.url, idp.jwt(team.bob, audience=server.url)) as bob:
        # Alice's are not_found, worded as for none at all; a garbled one of Bob's own is invalid_input.
        stolen = {"account_id": "support", "limit": 1, "cursor": page["next_cursor"]}
        failure = await bob.fail("imap_search_messages", stolen, "not_found")
        assert team.alice not in json.dumps(failure)
        await bob.fail(
            "imap_get_changes", {"account_id": "support", "since": changes["changes_token"]}, "not_found"
        )
        own = await bob.ok("imap_search_messages", {"account_id": "support", "limit": 1})
        cursor = own["next_cursor"]
        garbled = cursor[:2] + ("A" if cursor[2] != "A" else "B") + cursor[3:]
        await bob.fail("imap_search_messages", {**stolen, "cursor": garbled}, "invalid_input")
        token = (await bob.ok("imap_get_changes", {"account_id": "support"}))["changes_token"]
        garbled = token[:-3] + ("A" if token[-3] != "A" else "B") + token[-2:]
        await bob.fail("imap_get_changes", {"account_id": "support", "since": garbled}, "invalid_input")


async def test_opaque_tokens_are_checked_by_introspection(
    tmp_path: Path, dovecot: Dovecot, team: Team, idp: IdentityProvider
) -> None:
    server = _serve(tmp_path, dovecot, team, idp, introspection=True)
    asked_before = idp.requests["/introspect"]  # the worker's provider: other tests asked it too
    try:
        assert post(server, idp.opaque(team.alice, audience="https://other.example/mcp")).status_code == 401
        assert post(server, idp.opaque(team.alice, audience=server.url, lifetime_s=-60)).status_code == 401
        assert post(server, "opaque-never-issued").status_code == 401
        token = idp.opaque(team.alice, audience=server.url)
        async with http_client(server.url, token) as alice:
            own = await alice.ok("imap_search_messages", {"account_id": "own", "fields": "full"})
            assert [m["subject"] for m in own["messages"]] == [f"mail of {team.alice}"]
        assert idp.requests["/introspect"] - asked_before >= 4
        assert token not in server.log()
    finally:
        server.stop()


def challenge_params(challenge: str) -> list[tuple[str, str]]:
    """The auth-params of a ``Bearer`` challenge, read as RFC 9110 says (quoted-string with quoted-pair)."""
    assert challenge.startswith("Bearer ")
    params, rest = [], challenge[len("Bearer ") :]
    while rest:
        name, _, rest = rest.partition("=")
        assert rest.startswith('"'), challenge
        value, index = [], 1
        while rest[index] != '"':
            if rest[index] == "\\":
                index += 1
            value.append(rest[index])
            index += 1
        params.append((name.strip(), "".join(value)))
        rest = rest[index + 1 :].lstrip(", ")
    return params


def test_a_refusal_quoting_the_tokens_own_words_cannot_break_or_add_to_the_challenge(
    shared_server: SharedServer, idp: IdentityProvider
) -> None:
    """Regression: the key id of a token is quoted in the refusal (the JWT library's words), and went
    into WWW-Authenticate unescaped: a quote added parameters of the sender's choosing, a line break
    broke the response."""
    server, team = shared_server
    claims = idp.claims(team.alice, audience=server.url)
    for kid in ('k", error="insufficient_scope", scope="admin', 'k\\" x', "k\r\nX-Injected: yes\x7f\x00"):
        token = jwt.encode(claims, idp.key, algorithm="RS256", headers={"kid": kid})
        answer = post(server, token)
        assert answer.status_code == 401, kid
        assert "x-injected" not in answer.headers, kid
        params = challenge_params(answer.headers["www-authenticate"])
        assert [name for name, _ in params] == ["error", "error_description", "resource_metadata"], kid
        assert params[0][1] == "invalid_token", kid
        description = params[1][1]
        assert description.startswith("not a token signed with one of the issuer's keys"), kid
        assert not any(ord(char) < 0x20 or ord(char) == 0x7F for char in description), kid
        assert description == answer.json()["error_description"], kid
    assert post(server, idp.jwt(team.alice, audience=server.url)).status_code == 200


async def test_a_per_user_template_logs_in_as_each_user_through_a_dovecot_master_user(
    tmp_path: Path, master_dovecot: Dovecot, idp: IdentityProvider
) -> None:
    alice, bob = master_dovecot.new_user("t-alice"), master_dovecot.new_user("t-bob")
    for user in (alice, bob):
        master_dovecot.seed(user, "INBOX", [mailgen.plain_message(f"mail of {user}", "x")])
    server = serve_per_user(tmp_path, master_dovecot, idp, [alice, bob])
    try:
        for user in (alice, bob):
            async with http_client(server.url, idp.jwt(user, audience=server.url)) as mcp:
                found = await mcp.ok("imap_search_messages", {"account_id": "own", "fields": "full"})
                assert [m["subject"] for m in found["messages"]] == [f"mail of {user}"]
    finally:
        server.stop()
    # The master's password is no user's own: a login as the user with it fails.
    with pytest.raises(Exception, match=r"(?i)authentication"):
        master_dovecot.connect(alice, password=MASTER_PASSWORD)


async def test_a_per_user_accounts_ids_are_their_users_own(
    tmp_path: Path, master_dovecot: Dovecot, idp: IdentityProvider
) -> None:
    """The same account id names each user's own mailbox, so its message ids carry the user: another
    user's id (or message URI) is not_found in the words of a message that does not exist."""
    alice, bob = master_dovecot.new_user("t-alice"), master_dovecot.new_user("t-bob")
    for user in (alice, bob):
        # Several messages each, so Alice's UIDs exist in Bob's mailbox too (same UIDs, not hers).
        master_dovecot.seed(
            user, "INBOX", [mailgen.plain_message(f"mail {i} of {user}", "x") for i in range(3)]
        )
    server = serve_per_user(tmp_path, master_dovecot, idp, [alice, bob])
    try:
        async with http_client(server.url, idp.jwt(alice, audience=server.url)) as mcp:
            found = await mcp.ok("imap_search_messages", {"account_id": "own", "fields": "full"})
            message = found["messages"][0]
            assert message["message_id"].startswith("imap:own~")
            assert message["message_uri"].startswith("imap://own~")
            # Alice's own ids and URIs keep working.
            read = await mcp.ok("imap_get_message", {"message_id": message["message_id"]})
            assert read["message"]["subject"] == message["subject"]
            resource = await mcp.client.read_resource(message["message_uri"])
            assert json.loads(resource.contents[0].text)["success"] is True  # type: ignore[union-attr]
            changes = await mcp.ok("imap_get_changes", {"account_id": "own"})
            page = await mcp.ok("imap_search_messages", {"account_id": "own", "limit": 1})
        async with http_client(server.url, idp.jwt(bob, audience=server.url)) as mcp:
            own = (await mcp.ok("imap_search_messages", {"account_id": "own"}))["messages"]
            assert own[0]["message_id"] != message["message_id"]
            *head, _ = own[0]["message_id"].split(":")
            nowhere = ":".join([*head, "4000000000"])
            absent = await mcp.fail("imap_get_message", {"message_id": nowhere}, "not_found")
            _, _, mailbox, alice_validity, alice_uid = message["message_id"].split(":")
            untagged = f"imap:own:{mailbox}:{alice_validity}:{alice_uid}"
            for foreign in (message["message_id"], untagged):
                failure = await mcp.fail("imap_get_message", {"message_id": foreign}, "not_found")
                assert (
                    failure["error"]["message"].replace(f"UID {alice_uid} ", "UID 4000000000 ")
                    == (absent["error"]["message"])
                )
                assert alice not in json.dumps(failure) and "mail " not in json.dumps(failure)
            answer = await mcp.client.read_resource(message["message_uri"])
            envelope = json.loads(answer.contents[0].text)  # type: ignore[union-attr]
            assert (envelope["success"], envelope["error"]["code"]) == (False, "not_found")
            assert "mail " not in json.dumps(envelope)
            with pytest.raises(MCPError) as refused:  # an attachment URI too, before any IMAP command
                await mcp.client.read_resource(message["message_uri"] + "/attachment/2")
            assert refused.value.error.message.startswith(f"not_found: Message UID {alice_uid} no longer")
            # Alice's cursor and changes token are not_found too, worded as for none at all.
            stolen = {"account_id": "own", "limit": 1, "cursor": page["next_cursor"]}
            await mcp.fail("imap_search_messages", stolen, "not_found")
            await mcp.fail(
                "imap_get_changes", {"account_id": "own", "since": changes["changes_token"]}, "not_found"
            )
    finally:
        server.stop()


@pytest.mark.parametrize("mode", ["legacy", "auto"])
@pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed")  # legacy: the handshake-era form
async def test_resources_and_subscriptions_are_the_users_own(
    shared_server: SharedServer, idp: IdentityProvider, mode: str
) -> None:
    server, team = shared_server
    inbox = "imap://support/mailbox/INBOX"
    async with http_client(server.url, idp.jwt(team.alice, audience=server.url), mode=mode) as alice:
        read = await alice.client.read_resource(inbox)
        assert json.loads(read.contents[0].text)["messages"] == 1  # type: ignore[union-attr]
        (message,) = (await alice.ok("imap_search_messages", {"account_id": "support"}))["messages"]
        await subscribe(alice, inbox, mode)
    async with http_client(server.url, idp.jwt(team.outsider, audience=server.url), mode=mode) as eve:
        _, account_id, mailbox, uidvalidity, uid = message["message_id"].split(":")
        message_uri = f"imap://{account_id}/mailbox/{mailbox}/message/{uidvalidity}/{uid}"
        with pytest.raises(MCPError) as refused:
            await eve.client.read_resource(inbox)
        assert "not configured" in refused.value.error.message
        assert team.shared_user not in str(refused.value)
        # A message resource answers with the envelope imap_get_message would: not_found.
        answer = await eve.client.read_resource(message_uri)
        envelope = json.loads(answer.contents[0].text)  # type: ignore[union-attr]
        assert (envelope["success"], envelope["error"]["code"]) == (False, "not_found")
        assert "mail of" not in json.dumps(envelope)
        with pytest.raises(MCPError) as refused:
            await subscribe(eve, inbox, mode)
        assert "Account 'support' is not configured (configured: none)" in refused.value.error.message


async def subscribe(mcp: EnvelopeClient, uri: str, mode: str) -> None:
    """Subscribe to ``uri`` in the wire form of ``mode`` (the listen stream is closed again at once)."""
    if mode == "legacy":
        await mcp.client.subscribe_resource(uri)
        return
    async with mcp.client.listen(resource_subscriptions=[uri]):
        pass


def test_check_logs_in_to_the_shared_account_and_skips_a_template(
    tmp_path: Path, dovecot: Dovecot, team: Team, idp: IdentityProvider
) -> None:
    config = team_config(tmp_path / "config.toml", dovecot, team, idp, audience="http://127.0.0.1:1/mcp")
    done = subprocess.run(
        [SERVER, "check", "--config", str(config)], capture_output=True, text=True, timeout=patient(60)
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok   support: " in done.stdout and f"as {team.shared_user}: logged in" in done.stdout
    assert "skip own: " in done.stdout and "per_user template" in done.stdout


async def test_the_audit_names_the_user_of_a_shared_mailbox_write_and_whose_mailbox_a_per_user_one_was(
    tmp_path: Path, dovecot: Dovecot, team: Team, idp: IdentityProvider
) -> None:
    """Regression (issue 47): a team's writes were audited without who made them, nor whose mailbox a
    ``per_user`` account's write changed."""
    audit = tmp_path / "audit.jsonl"
    server = _serve(tmp_path, dovecot, team, idp, server={"audit_file": str(audit)})
    try:
        async with http_client(server.url, idp.jwt(team.alice, audience=server.url)) as alice:
            for account_id in ("support", "own"):
                (message,) = (await alice.ok("imap_search_messages", {"account_id": account_id}))["messages"]
                flag = {"message_ids": [message["message_id"]], "operation": "add", "flags": ["\\Flagged"]}
                await alice.ok("imap_update_message_flags", flag)
        log = server.log()
    finally:
        server.stop()
    lines = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [(line["account"], line["user"], line.get("mailbox_of")) for line in lines] == [
        ("support", team.alice, None),
        ("own", team.alice, team.alice),
    ]
    assert f"user={team.alice} tool=imap_update_message_flags account=support action=" in log
    assert f"user={team.alice} mailbox_of={team.alice} tool=imap_update_message_flags account=own" in log


async def test_case_variants_of_the_email_claim_are_one_user(
    tmp_path: Path, master_dovecot: Dovecot, idp: IdentityProvider
) -> None:
    """Regression (issue 47): ``ALICE@`` and ``Alice@`` got their own message id tag, sealing key and
    audit name. With ``user_claim = "email"`` the name is folded (``str.casefold()``) where it keys
    anything: an id or changes token issued to one spelling is the other's, and the audit says one name."""
    alice = master_dovecot.new_user("t-alice")
    address = f"{alice}@corp.example"
    audit = tmp_path / "audit.jsonl"
    server = serve_per_user(
        tmp_path,
        master_dovecot,
        idp,
        [address],
        own={"drafts_mailbox": "Drafts"},
        server={"write_enabled": True, "audit_file": str(audit)},
        auth={"user_claim": "email"},
    )
    shouted, titled = address.upper(), address[0].upper() + address[1:].replace("@corp", "@Corp")
    try:
        async with http_client(server.url, idp.jwt(alice, audience=server.url, email=shouted)) as first:
            await first.ok(
                "imap_manage_mailbox", {"account_id": "own", "action": "create", "mailbox": "Drafts"}
            )
            draft = await first.ok(
                "imap_save_draft", {"account_id": "own", "subject": "Folded", "body_text": "x"}
            )
            token = (await first.ok("imap_get_changes", {"account_id": "own"}))["changes_token"]
        async with http_client(server.url, idp.jwt(alice, audience=server.url, email=titled)) as second:
            read = await second.ok("imap_get_message", {"message_id": draft["message_id"]})
            assert read["message"]["subject"] == "Folded"
            await second.ok("imap_get_changes", {"account_id": "own", "since": token})
    finally:
        server.stop()
    lines = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [(line["tool"], line["user"], line["mailbox_of"]) for line in lines] == [
        ("imap_manage_mailbox", address, address),
        ("imap_save_draft", address, address),
    ]


async def test_the_ids_a_per_user_accounts_writes_and_changes_give_are_their_users_own(
    tmp_path: Path, master_dovecot: Dovecot, idp: IdentityProvider
) -> None:
    """The ids made below the handler (a copy's new id, a saved draft's, a new message of
    imap_get_changes) carry the caller's tag, handed down with the call: each reads back for its user,
    and is not_found for another."""
    alice, bob = master_dovecot.new_user("t-alice"), master_dovecot.new_user("t-bob")
    for user in (alice, bob):
        master_dovecot.seed(user, "INBOX", [mailgen.plain_message(f"mail of {user}", "x")])
        for folder in ("Archive", "Drafts"):
            master_dovecot.seed(user, folder, [])
    server = serve_per_user(
        tmp_path,
        master_dovecot,
        idp,
        [alice, bob],
        own={"drafts_mailbox": "Drafts"},
        server={"write_enabled": True},
    )
    try:
        async with http_client(server.url, idp.jwt(alice, audience=server.url)) as mcp:
            token = (await mcp.ok("imap_get_changes", {"account_id": "own"}))["changes_token"]
            (message,) = (await mcp.ok("imap_search_messages", {"account_id": "own"}))["messages"]
            copy = {
                "message_ids": [message["message_id"]],
                "action": "copy",
                "destination_mailbox": "Archive",
            }
            (copied,) = (await mcp.ok("imap_apply_to_messages", copy))["results"]
            draft = await mcp.ok(
                "imap_save_draft", {"account_id": "own", "subject": "Draft", "body_text": "x"}
            )
            master_dovecot.seed(alice, "INBOX", [mailgen.plain_message("new mail", "x")])
            (new,) = (await mcp.ok("imap_get_changes", {"account_id": "own", "since": token}))["new"]
            made = {
                copied["new_message_id"]: f"mail of {alice}",
                draft["message_id"]: "Draft",
                new["message_id"]: "new mail",
            }
            for message_id, subject in made.items():
                assert message_id.startswith("imap:own~")
                read = await mcp.ok("imap_get_message", {"message_id": message_id})
                assert read["message"]["subject"] == subject
        async with http_client(server.url, idp.jwt(bob, audience=server.url)) as mcp:
            for message_id in made:
                await mcp.fail("imap_get_message", {"message_id": message_id}, "not_found")
    finally:
        server.stop()


async def test_prompt_completions_offer_only_the_callers_own_accounts_and_mailboxes(
    shared_server: SharedServer, idp: IdentityProvider
) -> None:
    server, team = shared_server
    ref = PromptReference(type="ref/prompt", name="triage_inbox")
    async with http_client(server.url, idp.jwt(team.alice, audience=server.url)) as alice:
        accounts = await alice.client.complete(ref, {"name": "account_id", "value": ""})
        assert accounts.completion.values == ["own", "support"]
        boxes = await alice.client.complete(ref, {"name": "mailbox", "value": ""}, {"account_id": "support"})
        assert boxes.completion.values == ["INBOX"]
    # Signed in without an account: no account, and no mailbox of the shared one it may not use.
    async with http_client(server.url, idp.jwt(team.outsider, audience=server.url)) as eve:
        assert (await eve.client.complete(ref, {"name": "account_id", "value": ""})).completion.values == []
        boxes = await eve.client.complete(ref, {"name": "mailbox", "value": ""}, {"account_id": "support"})
        assert boxes.completion.values == []
