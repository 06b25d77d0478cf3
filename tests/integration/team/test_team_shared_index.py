"""One index for the whole team (issue 50): three instances behind HAProxy (round robin) sharing Redis and
one PostgreSQL, an account served per user with ``index_per_user``, two users. Each user's mailbox is
fetched from the IMAP server once for the initial build and the steady-state sync, not once per instance,
as Dovecot itself counts it (``imap_logout_format`` with ``%{fetch_hdr_count}`` and
``%{fetch_body_count}``, summed over its log); a search on any instance right after the build is answered
from the index (ranked: the summary ends "best match first", and no warning says the server answered)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.support.accounts import account_settings, config_toml
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.index_clients import wait_ready, warnings
from tests.support.mail import mailgen
from tests.support.patience import eventually
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.haproxy import HAProxy
from tests.support.servers.http_server import HttpServer, http_client
from tests.support.servers.identity_provider import IdentityProvider
from tests.support.servers.imapserver import free_ports
from tests.support.servers.postgres import PostgresServer, index_table
from tests.support.servers.redis_server import RedisServer
from tests.support.servers.team import MASTER_ENV, MASTER_LOGINS, MASTER_PASSWORD, start_instances
from tests.support.shared.team_shared_index import FETCH_COUNTS, fetch_counts, sessions

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SEARCH = "imap_search_messages"
RANKED = "best match first"
#: Messages of each user's mailbox before the build, and those that arrive after it.
FOLDERS = {"INBOX": 12, "Projects": 8}
ARRIVING = 5
WORDS = {"alice": "kiwiword", "bob": "mangoword"}
NOWHERE = "nowhereword"


@dataclass
class TeamIndex:
    dovecot: Dovecot
    idp: IdentityProvider
    instances: list[HttpServer]
    balancer: HAProxy
    users: dict[str, str]  # the word of each user's mail: its Dovecot user

    def client(self, user: str, instance: int | None = None) -> Any:
        url = self.balancer.url if instance is None else self.instances[instance].url
        return http_client(url, self.idp.jwt(user, audience=self.balancer.url))


@pytest.fixture(scope="module")
def team_index(tmp_path_factory: pytest.TempPathFactory, postgres: PostgresServer) -> Iterator[TeamIndex]:
    tmp = tmp_path_factory.mktemp("team-index")
    with (
        Dovecot(extra_config=MASTER_LOGINS + FETCH_COUNTS) as dovecot,
        IdentityProvider() as idp,
        RedisServer(tmp / "redis") as redis,
    ):
        users = {word: dovecot.new_user(f"t-{name}") for name, word in WORDS.items()}
        for word, user in users.items():
            for folder, count in FOLDERS.items():
                mail = [
                    mailgen.plain_message(f"{folder} note {i} of {word}", f"the text says {word} {i}\r\n")
                    for i in range(count)
                ]
                dovecot.seed(user, folder, mail)
        (front,) = free_ports("127.0.0.1")
        audience = f"http://127.0.0.1:{front}/mcp"
        template = {"password_env": MASTER_ENV, "per_user": True, "users": list(users.values())}
        own = account_settings(dovecot, "{user}*mailmcp", index_per_user=True, **template)
        auth = {"issuer": idp.issuer, "audience": audience, "jwks_url": idp.jwks_url}
        auth["user_claim"] = "preferred_username"
        sections = {
            "server": {"index": True, "state_dir": str(tmp / "state"), "index_dir": str(tmp / "ix")},
            "http.auth": auth,
            "state": {"redis_url": redis.url},
            "index": index_table(postgres),
        }
        config = tmp / "config.toml"
        config.write_text(
            config_toml({"own": own})
            + "".join(
                f"[{name}]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in table.items())
                for name, table in sections.items()
            )
        )
        instances = start_instances(config, [0, 0, 0], env={MASTER_ENV: MASTER_PASSWORD})
        try:
            with HAProxy(tmp / "haproxy", [i.port for i in instances], port=front) as balancer:
                yield TeamIndex(dovecot, idp, instances, balancer, users)
        finally:
            for instance in instances:
                instance.stop()


async def ranked_total(mcp: EnvelopeClient, word: str) -> int:
    """The total of a search of every mailbox for ``word``, which the index answered."""
    found = await mcp.call(SEARCH, {"account_id": "own", "query": word, "mailbox": "*", "sort": "relevance"})
    assert found["success"], found
    assert found["summary"].endswith(RANKED) and not warnings(found), found
    assert all(m["message_id"].startswith("imap:own~") for m in found["data"]["messages"])
    total: int = found["data"]["total"]
    return total


async def test_each_mailbox_is_fetched_once_for_the_team_and_any_instance_answers_from_the_index(
    team_index: TeamIndex,
) -> None:
    built = sum(FOLDERS.values())
    for word, user in team_index.users.items():
        # Each instance opens the user's index on their first search there (the server answers those: of
        # a word no message holds, so that the server's page fetches nothing the count would add).
        for instance in range(3):
            async with team_index.client(user, instance) as mcp:
                first = await mcp.call(SEARCH, {"account_id": "own", "query": NOWHERE, "mailbox": "*"})
                assert first["success"] and first["data"]["total"] == 0, first
        for instance in range(3):
            async with team_index.client(user, instance) as mcp:
                assert await wait_ready(mcp) == "ready"
                assert await ranked_total(mcp, word) == built  # right after the build, on every instance
        # Steady state: mail arrives; a search through the balancer on each instance in turn finds it,
        # the first one syncing the folder, the others finding it current in the shared index.
        arriving = [
            mailgen.plain_message(f"late note {i} of {word}", f"late {word}\r\n") for i in range(ARRIVING)
        ]
        team_index.dovecot.seed(user, "INBOX", arriving)
        async with team_index.client(user) as mcp:
            for _ in range(3):
                assert await ranked_total(mcp, word) == built + ARRIVING
        # The other user's word is in the other user's index alone.
        other = next(w for w in team_index.users if w != word)
        async with team_index.client(user) as mcp:
            foreign = await mcp.call(SEARCH, {"account_id": "own", "query": other, "mailbox": "*"})
            assert foreign["success"] and foreign["data"]["total"] == 0, foreign

    for instance in team_index.instances:  # every session ends, so Dovecot logs its counts
        instance.stop()
    eventually(lambda: not sessions(team_index.dovecot), within=30, interval=0.1, what="no session left open")
    counts = fetch_counts(team_index.dovecot)
    for user in team_index.users.values():
        mine = counts[user]
        print(f"{user}: {dict(mine)} for {built + ARRIVING} messages, three instances")
        # One FETCH of each message's body for the whole team (three instances: three times as many,
        # were each to build its own index); the searches read their pages from the index.
        assert (mine["headers"], mine["bodies"]) == (built + ARRIVING, built + ARRIVING), mine
