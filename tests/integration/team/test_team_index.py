"""Team users' local indexes (``index_per_user``, docs/index.md): an account served per user is not
indexed unless it says so; with it, each signed-in user gets an index of their own (one file, named by a
keyed tag of the user, 0600 in a 0700 directory), built on their own IMAP login from their first search,
reported by imap_list_accounts, and closed with their scope when they are idle. A real ``mail-imap-mcp
serve --transport http`` process with ``[http.auth]``, a Dovecot master user, the SDK's HTTP client."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.clients.index_clients import index_state, wait_ready, warnings
from tests.support.mail import mailgen
from tests.support.patience import eventually
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.http_server import SERVER, HttpServer, http_client
from tests.support.servers.identity_provider import IdentityProvider
from tests.support.servers.team import serve_indexed_per_user, serve_per_user

pytestmark = pytest.mark.anyio

SEARCH = "imap_search_messages"
RANKED = "best match first"
#: Words of one user's mail only (no other text of the generated mail holds them).
ALICES_WORD, BOBS_WORD = "kiwiword", "mangoword"
#: The name of a team user's index file: the account, ``~``, a 24-hex-digit keyed tag.
USER_FILE = re.compile(r"^own~[0-9a-f]{24}\.sqlite3(-wal|-shm)?$")


@pytest.fixture
def users(master_dovecot: Dovecot) -> tuple[str, str]:
    """Alice and Bob, each with mail of their own: three messages with their word, one without."""
    alice, bob = master_dovecot.new_user("t-alice"), master_dovecot.new_user("t-bob")
    for user, word in ((alice, ALICES_WORD), (bob, BOBS_WORD)):
        mail = [mailgen.plain_message(f"note {i} of {word}", f"the text says {word}\r\n") for i in range(3)]
        master_dovecot.seed(user, "INBOX", [*mail, mailgen.plain_message("other", "nothing of note\r\n")])
        # The index's build and the first search open INBOX at once: the search's LIST-STATUS counted
        # none of the four (twice in full runs) while the build's SELECT took the files in.
        master_dovecot.settle(user, "INBOX")
    return alice, bob


def serve(
    tmp_path: Path,
    dovecot: Dovecot,
    idp: IdentityProvider,
    users: tuple[str, str],
    user_idle_s: float = 600,
    **own: Any,
) -> HttpServer:
    """The team server; ``user_idle_s``: long, so that a test of two users in turn keeps both scopes
    however slow the machine (at 1 s, a busy machine's gap between two sessions closed the first)."""
    return serve_per_user(
        tmp_path,
        dovecot,
        idp,
        list(users),
        own=own,
        # index = true for every account: an account served per user is still not indexed without its own
        # index_per_user.
        server={"index": True, "index_dir": str(tmp_path / "ix"), "state_dir": str(tmp_path / "state")},
        auth={"user_idle_s": user_idle_s},
    )


def sessions(dovecot: Dovecot, user: str) -> int:
    """The IMAP sessions Dovecot holds for ``user`` now."""
    listed = dovecot.doveadm("who", "-1", user.lower(), check=False).stdout.splitlines()
    return sum(1 for line in listed if line.split()[:1] == [user.lower()] and "imap" in line)


def open_files(server: HttpServer) -> set[str]:
    """The names of the index files the server process holds open now."""
    names = set()
    for fd in Path(f"/proc/{server.proc.pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:  # closed meanwhile
            continue
        if "/ix/" in target:
            names.add(Path(target).name)
    return names


def until(condition: Callable[[], Any], within: float = 15.0) -> None:
    eventually(condition, within=within)


async def test_an_account_served_per_user_is_not_indexed_by_default(
    tmp_path: Path, master_dovecot: Dovecot, idp: IdentityProvider, users: tuple[str, str]
) -> None:
    alice, _ = users
    server = serve(tmp_path, master_dovecot, idp, users)
    try:
        async with http_client(server.url, idp.jwt(alice, audience=server.url)) as mcp:
            assert await index_state(mcp) == "off"
            envelope = await mcp.call(SEARCH, {"account_id": "own", "query": ALICES_WORD})
            assert envelope["success"] and envelope["data"]["total"] == 3
            assert not envelope["summary"].endswith(RANKED)  # the server answered, unranked
            assert not any("index" in warning for warning in warnings(envelope))
            assert await index_state(mcp) == "off"
    finally:
        server.stop()
    folder = tmp_path / "ix"
    assert not folder.exists() or not list(folder.iterdir())


async def test_each_user_has_an_index_of_their_own_that_finds_only_their_mail(
    tmp_path: Path, master_dovecot: Dovecot, idp: IdentityProvider, users: tuple[str, str]
) -> None:
    server = serve(tmp_path, master_dovecot, idp, users, index_per_user=True)
    try:
        for user, word, other in ((users[0], ALICES_WORD, BOBS_WORD), (users[1], BOBS_WORD, ALICES_WORD)):
            async with http_client(server.url, idp.jwt(user, audience=server.url)) as mcp:
                assert await index_state(mcp) == "not started (the first search starts it)"
                first = await mcp.call(SEARCH, {"account_id": "own", "query": word})
                assert first["success"] and first["data"]["total"] == 3, first
                assert any("not ready" in w and "the server answered" in w for w in warnings(first))
                assert await wait_ready(mcp) == "ready"
                ranked = await mcp.call(
                    SEARCH, {"account_id": "own", "query": word, "sort": "relevance", "fields": "full"}
                )
                assert ranked["summary"].endswith(RANKED) and not warnings(ranked)
                assert ranked["data"]["total"] == 3
                assert all(m["message_id"].startswith("imap:own~") for m in ranked["data"]["messages"])
                assert all(word in m["subject"] for m in ranked["data"]["messages"])
                opened = await mcp.ok(
                    "imap_get_message", {"message_id": ranked["data"]["messages"][0]["message_id"]}
                )
                assert word in opened["message"]["subject"]
                # The other user's word is in the other index only: none of this user's messages holds it.
                foreign = await mcp.call(SEARCH, {"account_id": "own", "query": other})
                assert foreign["success"] and foreign["data"]["total"] == 0, foreign
                assert foreign["data"]["messages"] == [] and not warnings(foreign)
                both = await mcp.ok(SEARCH, {"account_id": "own", "query": f"{word} OR {other}"})
                assert both["total"] == 3
        assert len([name for name in open_files(server) if name.endswith(".sqlite3")]) == 2
    finally:
        server.stop()

    folder = tmp_path / "ix"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    files = sorted(path.name for path in folder.iterdir())
    assert files and all(USER_FILE.match(name) for name in files), files
    assert len({name.split(".")[0] for name in files}) == 2  # one index per user
    for path in folder.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
        assert not any(user.split("@")[0] in path.name for user in users)

    # A user who leaves: their index is deleted by name (the CLI reads the key that tags it), the other
    # user's stays; without --user, every user's index of the account goes.
    config = str(tmp_path / "config.toml")
    dropped = subprocess.run(
        [SERVER, "index", "--config", config, "--drop", "--account", "own", "--user", users[0]],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "deleted the user's index" in dropped.stdout, dropped
    left = {name.split(".")[0] for name in os.listdir(folder)}
    assert len(left) == 1
    again = subprocess.run(
        [SERVER, "index", "--config", config, "--drop", "--account", "own", "--user", users[0]],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "no index of the user's index" in again.stdout, again
    everyone = subprocess.run(
        [SERVER, "index", "--config", config, "--drop", "--account", "own"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "deleted the indexes of 1 team user(s)" in everyone.stdout, everyone
    assert os.listdir(folder) == []


async def test_a_users_index_is_closed_with_their_idle_scope_and_opened_again_by_their_next_search(
    tmp_path: Path, master_dovecot: Dovecot, idp: IdentityProvider, users: tuple[str, str]
) -> None:
    alice, bob = users
    server = serve(tmp_path, master_dovecot, idp, users, user_idle_s=1, index_per_user=True)
    try:
        async with http_client(server.url, idp.jwt(alice, audience=server.url)) as mcp:
            await mcp.ok(SEARCH, {"account_id": "own", "query": ALICES_WORD, "sort": "relevance"})
            assert await wait_ready(mcp) == "ready"
            held = open_files(server)
            assert held and all(USER_FILE.match(name) for name in held), held
            # Her tool calls' connection and the index's own.
            until(lambda: sessions(master_dovecot, alice) == 2)
        time.sleep(1.5)  # past user_idle_s
        async with http_client(server.url, idp.jwt(bob, audience=server.url)) as mcp:
            assert (
                await index_state(mcp) == "not started (the first search starts it)"
            )  # looks the scopes over
        until(lambda: not open_files(server))
        until(lambda: sessions(master_dovecot, alice) == 0)
        async with http_client(server.url, idp.jwt(alice, audience=server.url)) as mcp:
            assert await index_state(mcp) == "not started (the first search starts it)"
            await mcp.ok(SEARCH, {"account_id": "own", "query": ALICES_WORD, "sort": "relevance"})
            assert await wait_ready(mcp) == "ready"  # the same file: what it held is kept
            ranked = await mcp.call(SEARCH, {"account_id": "own", "query": ALICES_WORD, "sort": "relevance"})
            assert ranked["summary"].endswith(RANKED) and ranked["data"]["total"] == 3
        assert open_files(server) == held
    finally:
        server.stop()


def index_path_under_spelling(tmp_path: Path, user: str) -> Path:
    """The file an earlier version named ``user``'s index of ``own`` by: the tag of the name exactly as
    spelled (under the server's key in its state_dir; computed in a process of its own, so that this
    one's key is left alone)."""
    program = (
        "import sys; from pathlib import Path; from mail_imap_mcp.mail import sealing; "
        "from mail_imap_mcp.index.engines.sqlite.location import user_index_path; "
        "assert sealing.load_key(Path(sys.argv[1])); print(user_index_path(Path(sys.argv[2]), 'own', sys.argv[3]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", program, str(tmp_path / "state"), str(tmp_path / "ix"), user],
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(done.stdout.strip())


async def test_a_users_index_under_the_unfolded_spelling_of_their_address_is_deleted_on_first_use(
    tmp_path: Path, master_dovecot: Dovecot, idp: IdentityProvider
) -> None:
    """Regression (issue 47 item 13): with ``user_claim = "email"`` a user's index file is named by the
    folded address; the file an earlier version made under the tag of the token's own spelling
    (``Alice@``) held their mail and was never opened again. Their first search deletes it."""
    address = f"{master_dovecot.new_user('t-alice')}@corp.example"
    titled = address[0].upper() + address[1:]
    master_dovecot.seed(address, "INBOX", [mailgen.plain_message(f"a note of {ALICES_WORD}", "text\r\n")])
    server = serve_indexed_per_user(tmp_path, master_dovecot, idp, [address], auth={"user_claim": "email"})
    try:
        old = index_path_under_spelling(tmp_path, titled)
        folded = index_path_under_spelling(tmp_path, address)
        assert old != folded
        old.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        for companion in ("", "-wal"):
            Path(f"{old}{companion}").write_bytes(b"an index of an earlier version")
        token = idp.jwt(address.split("@")[0], audience=server.url, email=titled)
        async with http_client(server.url, token) as mcp:
            await mcp.ok(SEARCH, {"account_id": "own", "query": ALICES_WORD})
            assert await wait_ready(mcp) == "ready"
            ranked = await mcp.ok(SEARCH, {"account_id": "own", "query": ALICES_WORD, "sort": "relevance"})
            assert ranked["total"] == 1
    finally:
        server.stop()
    assert not old.exists() and not Path(f"{old}-wal").exists()
    assert folded.exists()
