"""The tests' throwaway PostgreSQL (tests/support/servers/postgres.py) on a machine whose other work starts
clusters too: a cluster whose free port another took first moves to another port and answers as
itself, never as the cluster that holds the port (its sessions failed that one's password)."""

from __future__ import annotations

import psycopg

from tests.support.servers.postgres import PostgresServer


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
