"""``mail-imap-mcp index`` on both engines (issue 50), through the real command: into PostgreSQL it builds
the account's schema with the same progress display as into SQLite, killed mid-build (SIGKILL) the next
run goes on from the last stored chunk (each message stored once), ``--status`` lists the index's place,
messages and folders built, and ``--drop`` drops the schema; ``--status`` and ``--drop`` of a file alike."""

from __future__ import annotations

import json
import re
import signal
import subprocess
from pathlib import Path

import pytest

from tests.support.accounts import account_settings, config_toml
from tests.support.clients.in_process import make_config
from tests.support.clients.index_clients import identity_file
from tests.support.patience import patient
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.faultproxy import FaultProxy
from tests.support.servers.http_server import SERVER
from tests.support.servers.postgres import PostgresServer, index_table
from tests.support.servers.postgres_index import FOLDERS, LATENCY_S, Schema, seed, until

pytestmark = pytest.mark.slow

#: Every folder of the account: the seeded ones and INBOX.
ALL_FOLDERS = len(FOLDERS) + 1


def index(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SERVER, "index", "--config", str(config), "--account", "default", *args],
        capture_output=True,
        text=True,
        timeout=patient(120),
        check=False,
    )


def test_index_builds_into_postgresql_resumes_after_a_kill_lists_its_state_and_drops_it(
    dovecot: Dovecot, postgres: PostgresServer, tmp_path: Path
) -> None:
    user = dovecot.new_user()
    total = seed(dovecot, user)
    table = index_table(postgres)
    schema = Schema(table["index_url"], postgres.password, "mimx_default")
    with FaultProxy(dovecot.host, dovecot.tls_port) as proxy:
        proxy.set_latency(LATENCY_S)
        account = account_settings(dovecot, user, index=True, port=proxy.port, command_timeout_s=30)
        config = tmp_path / "config.toml"
        config.write_text(
            config_toml({"default": account})
            + "[index]\n"
            + "".join(f"{key} = {json.dumps(value)}\n" for key, value in table.items())
        )
        assert "no index at schema mimx_default" in index(config, "--status").stdout

        progress = tmp_path / "progress.txt"
        with progress.open("w") as stderr:
            first = subprocess.Popen(
                [SERVER, "index", "--config", str(config), "--account", "default"],
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )
        try:
            until(lambda: schema.complete() >= 2, 60, "two folders built")
        finally:
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=patient(10))
        stored, distinct = schema.rows()
        assert stored == distinct and 0 < stored < total, (stored, total)
        # Not a terminal: the plain progress lines, as into SQLite.
        assert f"index default: {ALL_FOLDERS} folder(s), {total} message(s) to index" in progress.read_text()

        listed = index(config, "--status")
        assert listed.returncode == 0, listed
        line = re.search(
            r"index default: schema mimx_default of \S+: (\d+) message\(s\), (\d+) of (\d+) folder",
            listed.stdout,
        )
        assert line is not None, listed.stdout
        assert int(line[1]) == stored and int(line[3]) <= ALL_FOLDERS and "not fully built" in listed.stdout

        proxy.set_latency(0)
        again = index(config)
        assert again.returncode == 0, again
        assert f"{total - stored} new message(s) indexed in {ALL_FOLDERS} folder(s)" in again.stdout, (
            again.stdout
        )
        assert schema.rows() == (total, total), schema.folders()

        done = index(config, "--status").stdout
        assert f": {total} message(s), {ALL_FOLDERS} of {ALL_FOLDERS} folder(s) built; built" in done, done
        # Debian's PostgreSQL has no pgvector: the vectors for search by meaning are ranked by each instance.
        assert "built; vectors in a table, ranked in each instance (no pgvector in the database)" in done

        dropped = index(config, "--drop")
        assert dropped.returncode == 0 and "deleted schema mimx_default" in dropped.stdout, dropped
        assert schema.rows() == (-1, -1)  # no such table: the schema is gone
        assert "no index at schema mimx_default" in index(config, "--status").stdout
        refused = index(config, "--status", "--drop")
        assert refused.returncode == 2 and "--status lists the indexes" in refused.stderr


def test_index_status_and_drop_on_sqlite(dovecot: Dovecot, tmp_path: Path) -> None:
    """The same listing and drop for an index file (the default engine)."""
    user = dovecot.new_user()
    dovecot.seed(user, "INBOX", [b"Subject: one\r\n\r\na ledger\r\n", b"Subject: two\r\n\r\nthe ledger\r\n"])
    config = tmp_path / "config.toml"
    account = account_settings(dovecot, user, index=True)
    config.write_text(config_toml({"default": account}) + f'[server]\nindex_dir = "{tmp_path / "ix"}"\n')
    path = identity_file(tmp_path / "ix", make_config({"default": account}))
    assert f"index default: no index at {path}" in index(config, "--status").stdout
    assert index(config).returncode == 0
    listed = index(config, "--status")
    assert (
        listed.returncode == 0
        and f"index default: {path}: 2 message(s), 1 of 1 folder(s) built; built" in listed.stdout
    ), listed
    dropped = index(config, "--drop")
    assert f"deleted {path}" in dropped.stdout and not path.exists(), dropped
    assert f"no index at {path}" in index(config, "--status").stdout
