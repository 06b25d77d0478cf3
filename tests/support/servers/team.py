"""A team's deployment for the tests: a config with ``[http.auth]`` naming the test identity provider,
accounts that belong to users (a ``per_user`` template on Dovecot, and a shared mailbox for a few),
optionally ``[state]`` in Redis, and server processes started from it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.accounts import account_settings, config_toml, server_toml
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.http_server import HttpServer, start_http_server
from tests.support.servers.identity_provider import CLIENT_SECRET, IdentityProvider
from tests.support.servers.imapserver import free_ports

#: The variable the servers read the introspection client's secret from.
CLIENT_SECRET_ENV = "MIM_TEST_INTROSPECTION_SECRET"


@dataclass
class Team:
    """Two users with their own Dovecot mailboxes (``own``, a per-user template), and one shared
    mailbox (``support``) that both may use; ``outsider`` is signed in but has no account."""

    alice: str
    bob: str
    outsider: str
    shared_user: str


def new_team(dovecot: Dovecot) -> Team:
    return Team(*(dovecot.new_user(prefix) for prefix in ("t-alice", "t-bob", "t-eve", "t-support")))


def team_config(
    path: Path,
    dovecot: Dovecot,
    team: Team,
    idp: IdentityProvider,
    *,
    audience: str,
    redis_url: str | None = None,
    introspection: bool = False,
    server: dict[str, Any] | None = None,
    support: dict[str, Any] | None = None,
) -> Path:
    """Write the team's config to ``path`` (users named by ``preferred_username``); ``support``
    overrides settings of the shared account (e.g. the port of a proxy in front of Dovecot)."""
    accounts = {
        "own": account_settings(dovecot, "{user}", per_user=True, users=[team.alice, team.bob]),
        "support": account_settings(
            dovecot, team.shared_user, users=[team.alice, team.bob], **(support or {})
        ),
    }
    auth: dict[str, Any] = {
        "issuer": idp.issuer,
        "audience": audience,
        "user_claim": "preferred_username",
        "required_scopes": ["mail"],
    }
    if introspection:
        auth |= {
            "introspection_url": idp.introspection_url,
            "client_id": "mail-mcp",
            "client_secret_env": CLIENT_SECRET_ENV,
        }
    else:
        auth["jwks_url"] = idp.jwks_url
    text = config_toml(accounts) + server_toml(**{"write_enabled": True, **(server or {})})
    text += "[http.auth]\n" + "".join(f"{key} = {json.dumps(value)}\n" for key, value in auth.items())
    if redis_url is not None:
        text += f"[state]\nredis_url = {json.dumps(redis_url)}\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def start_instances(config: Path, ports: list[int], env: dict[str, str] | None = None) -> list[HttpServer]:
    """A server process of ``config`` on each of ``ports`` (``env`` added to their environment)."""
    servers: list[HttpServer] = []
    try:
        for port in ports:
            environ = {CLIENT_SECRET_ENV: CLIENT_SECRET, **(env or {})}
            servers.append(start_http_server(config, "--port", str(port), env=environ))
    except BaseException:
        for server in servers:
            server.stop()
        raise
    return servers


#: The variable the servers read a Dovecot master user's password from.
MASTER_ENV = "MIM_TEST_MASTER_PASSWORD"
MASTER_PASSWORD = "master-secret-for-tests"
#: Dovecot's configuration of master logins: ``<user>*mailmcp`` with the master's password logs in as
#: ``<user>`` (every user's own password stays another).
MASTER_LOGINS = (
    "auth_master_user_separator = *\n"
    f"passdb {{\n  driver = static\n  args = password={MASTER_PASSWORD}\n  master = yes\n}}\n"
)


def serve_per_user(
    tmp_path: Path,
    master_dovecot: Dovecot,
    idp: IdentityProvider,
    users: list[str],
    *,
    own: dict[str, Any] | None = None,
    **settings: Any,
) -> HttpServer:
    """A server whose account ``own`` is a ``per_user`` template logging in through the master user
    (``own``: settings added to the account; ``settings``: :func:`serve_accounts`')."""
    template = {"password_env": MASTER_ENV, "per_user": True, "users": users}
    account = account_settings(master_dovecot, "{user}*mailmcp", **(template | (own or {})))
    return serve_accounts(tmp_path, idp, {"own": account}, **settings)


def serve_accounts(
    tmp_path: Path,
    idp: IdentityProvider,
    accounts: dict[str, dict[str, Any]],
    *,
    server: dict[str, Any] | None = None,
    auth: dict[str, Any] | None = None,
    index: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
) -> HttpServer:
    """A team server of ``accounts`` (``server``, ``auth`` and ``index``: settings added to ``[server]``,
    ``[http.auth]`` and ``[index]``; ``env``: added to the server's environment, beside the master user's
    password), its config in ``tmp_path``."""
    (port,) = free_ports("127.0.0.1")
    audience = f"http://127.0.0.1:{port}/mcp"
    settings = {"issuer": idp.issuer, "audience": audience, "jwks_url": idp.jwks_url}
    settings |= {"user_claim": "preferred_username", **(auth or {})}
    config = tmp_path / "config.toml"
    config.write_text(
        config_toml(accounts)
        + server_toml(**(server or {}))
        + "[http.auth]\n"
        + "".join(f"{k} = {json.dumps(v)}\n" for k, v in settings.items())
        + ("[index]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in index.items()) if index else "")
    )
    (started,) = start_instances(config, [port], env={MASTER_ENV: MASTER_PASSWORD, **(env or {})})
    return started


def serve_indexed_per_user(
    tmp_path: Path, master_dovecot: Dovecot, idp: IdentityProvider, users: list[str], **settings: Any
) -> HttpServer:
    """:func:`serve_per_user` with a local index of each signed-in user (``index_per_user``), its files and
    the server's state in ``tmp_path`` (``settings``: :func:`serve_per_user`'s ``auth``, ``index``, ...)."""
    return serve_per_user(
        tmp_path,
        master_dovecot,
        idp,
        users,
        own={"index_per_user": True},
        server={"index": True, "index_dir": str(tmp_path / "ix"), "state_dir": str(tmp_path / "state")},
        **settings,
    )
