"""The team deployment as docs/http.md and docs/team.md write it, run as far as it can run here: the
[http.auth] and [state] blocks of docs/http.md with the loopback identity provider and Redis put in place of
the examples, its account blocks validated, and docs/team.md's HAProxy file in front of two instances
(only the TLS certificate and the ports changed), its health check passing and a user's calls
answered through it."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from mail_imap_mcp.app.scopes import accounts_of
from mail_imap_mcp.config import Config
from tests.support.accounts import account_settings, config_toml
from tests.support.run.readme import HTTP, readme_block
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.haproxy import HAProxy
from tests.support.servers.http_server import http_client
from tests.support.servers.identity_provider import IdentityProvider
from tests.support.servers.imapserver import free_ports
from tests.support.servers.redis_server import RedisServer
from tests.support.servers.team import start_instances

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "team.md"


def test_the_readmes_team_accounts_are_a_valid_configuration_and_fill_in_each_user() -> None:
    raw = tomllib.loads(readme_block("team-auth", HTTP) + readme_block("team-accounts", HTTP))
    config = Config.model_validate(raw)
    alice = accounts_of(config, "alice@corp.example")
    assert sorted(alice.accounts) == ["mine", "support"]
    assert alice.accounts["mine"].username == "alice@corp.example*mailmcp"
    assert sorted(accounts_of(config, "carol@corp.example").accounts) == ["mine"]


async def test_the_guides_haproxy_in_front_of_the_readmes_team_server(
    tmp_path: Path, dovecot: Dovecot
) -> None:
    alice = dovecot.new_user("t-alice")
    front, *backends = free_ports("127.0.0.1", "127.0.0.1", "127.0.0.1")
    audience = f"http://127.0.0.1:{front}/mcp"
    with IdentityProvider() as idp, RedisServer(tmp_path / "redis") as redis:
        auth = (
            readme_block("team-auth", HTTP)
            .replace("https://sso.example.com/realms/corp/protocol/openid-connect/certs", idp.jwks_url)
            .replace("https://sso.example.com/realms/corp", idp.issuer)
            .replace("https://mail-mcp.example.com/mcp", audience)
            .replace("redis://127.0.0.1:6379/0", redis.url)
            .replace('user_claim = "email"', 'user_claim = "preferred_username"')
        )
        config = tmp_path / "config.toml"
        config.write_text(
            config_toml({"mine": account_settings(dovecot, "{user}", per_user=True)})
            + '[http]\nallowed_hosts = ["mail-mcp.example.com"]\n'
            + auth
        )
        haproxy = readme_block("team-haproxy", GUIDE).replace(
            "bind :443 ssl crt /etc/haproxy/mail-mcp.pem", f"bind 127.0.0.1:{front}"
        )
        haproxy = re.sub(
            r"127\.0\.0\.1:800([123])", lambda m: f"127.0.0.1:{backends[int(m[1]) % 2]}", haproxy
        )
        instances = start_instances(config, backends)
        try:
            with HAProxy(tmp_path / "haproxy", backends, port=front, config_text=haproxy) as balancer:
                balancer.wait_healthy(len(backends) + 1)  # mcp1 and mcp3 name the same instance
                token = idp.jwt(alice, audience=audience)
                async with http_client(balancer.url, token) as mcp:
                    (account,) = (await mcp.ok("imap_list_accounts"))["accounts"]
                    assert account["account_id"] == "mine"
                    for _ in range(3):
                        await mcp.ok("imap_list_mailboxes", {"account_id": "mine"})
        finally:
            for instance in instances:
                instance.stop()
