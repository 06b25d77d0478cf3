"""Search by meaning on a team's index in PostgreSQL (issue 80's "done when"): a real ``mail-imap-mcp serve
--transport http`` with ``[http.auth]``, an account served per user through a Dovecot master user with
``index_per_user``, its index in PostgreSQL (``index_engine = "postgresql"``): the one that carries
pgvector (halfvec and HNSW) and Debian's, without it (the vectors in a table, ranked in the instance).
A signed-in user's agent asks, through the SDK's HTTP client, about "the heating in the flat" and gets
the landlord's messages first, which share no content word with it; and so does a user of a shared
mailbox (``users``, one login) that the server indexes itself (``index = true``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.accounts import account_settings
from tests.support.clients.index_clients import wait_ready
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.http_server import http_client
from tests.support.servers.identity_provider import IdentityProvider
from tests.support.servers.postgres import index_table
from tests.support.servers.team import serve_accounts, serve_indexed_per_user
from tests.support.shared.heating_mail import (
    SEARCH,
    asked_about_the_heating,
    assert_the_landlords_messages_first,
    seed_heating_mail,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.mark.parametrize("postgresql", ["postgres_vector", "postgres"])
async def test_a_team_user_finds_the_landlords_mail_about_the_heating_in_the_flat_by_meaning(
    tmp_path: Path,
    master_dovecot: Dovecot,
    idp: IdentityProvider,
    postgresql: str,
    request: pytest.FixtureRequest,
) -> None:
    user = master_dovecot.new_user("t-tenant")
    seed_heating_mail(master_dovecot, user)
    index = index_table(request.getfixturevalue(postgresql))
    server = serve_indexed_per_user(tmp_path, master_dovecot, idp, [user], index=index)
    try:
        async with http_client(server.url, idp.jwt(user, audience=server.url)) as mcp:
            first = await mcp.ok(SEARCH, {"account_id": "own", "query": "radiators"})  # starts its index
            assert first["total"] == 2
            assert await wait_ready(mcp) == "ready"
            envelope = await asked_about_the_heating(mcp, account_id="own")
    finally:
        server.stop()
    assert_the_landlords_messages_first(envelope)


async def test_regression_a_shared_mailboxs_user_finds_mail_by_meaning_in_the_servers_index_of_it(
    tmp_path: Path, dovecot: Dovecot, idp: IdentityProvider
) -> None:
    """A shared mailbox the server indexes answered ``about`` with ``unavailable`` to each of its users,
    though its index kept vectors: a team user's search reached the index of an account with
    ``index_per_user`` alone, never the server's own (issue 89)."""
    alice, shared = dovecot.new_user("t-alice"), dovecot.new_user("t-support")
    seed_heating_mail(dovecot, shared)
    server = serve_accounts(
        tmp_path,
        idp,
        {"support": account_settings(dovecot, shared, users=[alice])},
        server={"index": True, "index_dir": str(tmp_path / "ix"), "state_dir": str(tmp_path / "state")},
    )
    try:
        async with http_client(server.url, idp.jwt(alice, audience=server.url)) as mcp:
            assert await wait_ready(mcp) == "ready"  # the server's index of the mailbox, built at its start
            envelope = await asked_about_the_heating(mcp, account_id="support")
    finally:
        server.stop()
    assert_the_landlords_messages_first(envelope)
