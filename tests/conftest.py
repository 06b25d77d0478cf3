"""The suite's hooks: its options, the run's header, each test's own home, the workers' schedule, and the
CPU report. Helpers for tests live in tests/support; the fixtures of the tests that use servers (the
IMAP servers of the matrix, fresh users, MCP clients) in tests/support/server_fixtures.py, a plugin
registered here in each process that runs tests.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import settings

from tests.support.patience import describe as describe_patience
from tests.support.patience import patient
from tests.support.run.collector import (
    collects_here,
    freeze_for_the_exit,
    freeze_what_the_collection_made,
    pause_for_the_collection,
)
from tests.support.run.cpu_report import CpuReport
from tests.support.run.cpu_report import add_option as add_cpu_report_option
from tests.support.run.inbox_only import folders_seen, verdict
from tests.support.run.own_home import XDG_BASES, home_of_the_process, remove_home, violations
from tests.support.run.rewrite_ahead import rewrite_ahead
from tests.support.run.run_lifetime import end_run_on_sigterm
from tests.support.servers.imapserver import ImapServer
from tests.support.servers.matrix import INBOX_ONLY_MARK, MATRIX

if TYPE_CHECKING:
    from tests.support.servers.cyrus import Cyrus

#: The plugin with the fixtures of the tests that use servers.
SERVER_FIXTURES = "tests.support.server_fixtures"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--dovecot-only",
        action="store_true",
        help="deselect the tests that need Cyrus or Courier (scripts/test --fast)",
    )
    add_cpu_report_option(parser)


def pytest_report_header(config: pytest.Config) -> str:
    """The run's patience (tests/support/patience.py), in the header of every run."""
    workers = getattr(config.option, "numprocesses", None)
    return describe_patience(workers if isinstance(workers, int) else None)


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_timeout_set_timer(item: pytest.Item, settings: Any) -> object:
    """pytest-timeout's limit of a test (pyproject's ``timeout``, or the test's ``timeout`` mark) scaled by
    the run's patience, as every wait of the suite is: a fixed 300 s killed, on a loaded machine, the
    README's install that allows itself ``patient(600)``. The plugin's own timer, with that limit."""
    import pytest_timeout

    return pytest_timeout.pytest_timeout_set_timer(item, scaled_timeout(settings))


def scaled_timeout(settings: Any) -> Any:
    """pytest-timeout's ``Settings`` of a test with its limit scaled by the run's patience (no limit: none)."""
    return settings._replace(timeout=patient(settings.timeout)) if settings.timeout else settings


#: The temporary home of this test process (tests/support/run/own_home.py).
_PROCESS_HOME = pytest.StashKey[Path]()


def pytest_configure(config: pytest.Config) -> None:
    pause_for_the_collection(config)  # until pytest_collection_finish (tests/support/run/collector.py)
    # Hypothesis fails an example that takes over 200 ms by default: a wall-clock bound that a loaded
    # machine breaks. How fast code is belongs in scripts/bench; every property test runs without it.
    settings.register_profile("no-deadline", deadline=None)
    settings.load_profile("no-deadline")
    end_run_on_sigterm(config)  # servers never outlive a run ended by SIGTERM
    config.pluginmanager.register(CpuReport(config), "cpu_report")
    if collects_here(config):  # a process that runs tests (xdist's controller runs none: none of its imports)
        config.pluginmanager.import_plugin(SERVER_FIXTURES)
    else:
        rewrite_ahead(
            config
        )  # xdist's controller, before its workers start (tests/support/run/rewrite_ahead.py)
    # Before any fixture: the session's servers and every child inherit a home that is not the user's.
    config.stash[_PROCESS_HOME] = home_of_the_process()


def pytest_unconfigure(config: pytest.Config) -> None:
    freeze_for_the_exit(config)
    if _PROCESS_HOME in config.stash:
        remove_home(config.stash[_PROCESS_HOME])


@pytest.fixture(autouse=True)
def own_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Each test has a ``HOME`` of its own (tests/support/run/own_home.py), and fails if it touched the real
    one: its processes and xdist's other workers never share a sign-in lock, record or key file."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    for name in XDG_BASES:
        monkeypatch.delenv(name, raising=False)
    seen = len(violations)
    yield home
    if len(violations) > seen:
        pytest.fail("the test touched the real home: " + "; ".join(violations[seen:]), pytrace=False)


#: The tests of test_hostile_mail.py that share what it makes once per process: the hand-written corpus
#: read through the server (``corpus_read``: read again on every worker that ran one of them, 6.2
#: CPU-seconds for the ten on three workers) and the generated messages.
_HOSTILE_MAIL = (
    "test_every_hand_written_and_giant_message_reads_as_a_clean_envelope_in_every_format",
    "test_html_bodies_keep_no_script_event_handler_or_remote_resource",
    "test_text_hidden_from_the_reader_reaches_no_body_format_and_no_snippet",
    "test_html_is_read_as_browsers_read_it_in_every_format_and_the_snippet",
    "test_utf7_encoded_script_is_decoded_then_removed",
    "test_terminal_escape_sequences_never_reach_the_output",
    "test_attachment_names_lose_paths_bidi_overrides_and_line_breaks",
    "test_encoded_word_header_injection_yields_single_line_values",
    "test_huge_header_line_is_bounded_in_search_results_and_reads",
    "test_deep_nesting_and_thousands_of_parts_still_show_their_text",
    "test_generated_messages_cover_every_family_of_damage",
    "test_generated_messages_read_as_clean_envelopes_through_the_server",
)

#: The tests of test_team_auth.py that share one server process (its ``shared_server`` fixture).
_SHARED_SERVER = (
    "test_the_protected_resource_metadata_names_the_issuer",
    "test_a_request_without_a_token_is_told_where_the_metadata_is",
    "test_tokens_expired_early_for_another_audience_or_issuer_or_forged_are_refused",
    "test_a_refusal_quoting_the_tokens_own_words_cannot_break_or_add_to_the_challenge",
    "test_each_user_sees_their_own_mailbox_and_the_shared_one_and_nothing_else",
    "test_resources_and_subscriptions_are_the_users_own",
    "test_prompt_completions_offer_only_the_callers_own_accounts_and_mailboxes",
)

#: The tests of test_http.py that share one server process (its ``reading_server`` fixture).
_HTTP_READING_SERVER = (
    "test_missing_or_wrong_token_is_refused_with_a_bearer_challenge",
    "test_several_clients_use_their_own_sessions_at_once",
)

#: Tests one worker runs together, because they share something costly made once per process: a
#: module (its module fixture) or single tests (a cache), each with the name of its group.
ONE_WORKER = {
    "tests/integration/setup/test_readme.py": "the README's install",
    "tests/integration/bundle/test_bundle.py": "the MCP Bundle's build",
    "tests/integration/team/test_team_instances.py": "a team's deployment its tests share, restored",
    "tests/integration/asking/test_approval_browser.py": "its Chromium",
    "tests/integration/surface/test_imap_extensions.py": "its transcripts of every tool on two Dovecots",
    "tests/integration/drafts_and_sending/test_forward_and_invitation.py": "its submission chain with Dovecot's ACL plugin",
    "tests/unit/test_architecture.py": "the sources parsed once per process",
    "tests/integration/index/test_meaning_languages.py": "its engines' measures and the texts embedded once",
    **{f"tests/integration/reading/test_hostile_mail.py::{name}": "hostile mail" for name in _HOSTILE_MAIL},
    **{
        f"tests/integration/team/test_team_auth.py::{name}": "a team's server no test changes"
        for name in _SHARED_SERVER
    },
    **{
        f"tests/integration/team/test_http.py::{name}": "an HTTP server they share"
        for name in _HTTP_READING_SERVER
    },
}


def _together(nodeid: str) -> str | None:
    """The ``ONE_WORKER`` group of a test, if it is in one."""
    return ONE_WORKER.get(nodeid.split("::", 1)[0]) or ONE_WORKER.get(nodeid.split("[", 1)[0])


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """With ``--dist loadgroup``: test by test, except the groups of ``ONE_WORKER``.

    pytest-xdist's own loadgroup reads ``xdist_group`` marks by renaming node ids, which pytest 9 no
    longer allows (the marks are ignored and a group's tests spread over the workers), so the groups
    are named here, by node id.
    """
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class TogetherScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _together(nodeid) or nodeid

    return TogetherScheduling(config, log)


def _servers(item: pytest.Item) -> set[str]:
    """The servers of the matrix ``item`` runs on (by fixture or parameter)."""
    callspec = getattr(item, "callspec", None)
    parameters = {v for v in callspec.params.values() if isinstance(v, str)} if callspec else set()
    return set(MATRIX) & (set(getattr(item, "fixturenames", ())) | parameters)


#: A test's rough cost by tier, relative to an integration test's: the CPU report's seconds per test by
#: tier (a fresh-clone run of 2026-11-28: pure 0.011, unit 0.075, integration 0.33). A place in the run is
#: measured in these, not in tests: the last third of the tests by count is mostly the pure tier, a few
#: seconds of the run.
_TIER_COST = {"tests/pure/": 0.03, "tests/unit/": 0.25}


def _cost(item: pytest.Item) -> float:
    """What ``item`` weighs in the run, by its tier (:data:`_TIER_COST`)."""
    return next((cost for tier, cost in _TIER_COST.items() if item.nodeid.startswith(tier)), 1.0)


def _interleaved(items: list[pytest.Item]) -> list[pytest.Item]:
    """``items`` with each module's tests spread evenly through the list: the i-th of a module's n tests
    at (i + 1/2) / n of it. A module's tests wait alike (the nine switching watchers, 14-18 s each)."""
    by_module: dict[str, list[pytest.Item]] = {}
    for item in items:
        by_module.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    placed = [
        ((index + 0.5) / len(tests), item) for tests in by_module.values() for index, item in enumerate(tests)
    ]
    return [item for _, item in sorted(placed, key=lambda pair: pair[0])]


def _spread_waiting(items: list[pytest.Item]) -> list[pytest.Item]:
    """``items`` with the tests marked ``waits`` spread evenly over the first two thirds of the others.

    Together (the watch tests sat side by side in the order) they held every worker at once: two cores
    mostly idle for half a minute of each run. Spread, one or two workers wait while the rest compute,
    and none is left near the end (a wait there would end the run alone). Two thirds of the run's cost
    (:func:`_cost`), not of its count: by count, the switching watchers (nine tests of 14-18 s) still
    met, in the run's last minute, with nothing but the pure tier between them. Each module's own tests
    over the whole span (:func:`_interleaved`): one after the other, six of them still waited at once."""
    waiting = [item for item in items if item.get_closest_marker("waits") and _together(item.nodeid) is None]
    if not waiting:
        return items
    waiting = _interleaved(waiting)
    chosen = set(map(id, waiting))
    others = [item for item in items if id(item) not in chosen]
    span = sum(map(_cost, others)) * 2 / 3
    placed, spent, spread = 0, 0.0, []
    for item in others:
        spread.append(item)
        spent += _cost(item)
        # The j-th waiting test (from 1) goes once the others so far cost j * span / (len(waiting) + 1).
        while placed < len(waiting) and (placed + 1) * span <= spent * (len(waiting) + 1):
            spread.append(waiting[placed])
            placed += 1
    return spread + waiting[placed:]


def pytest_collection_finish(session: pytest.Session) -> None:
    freeze_what_the_collection_made()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The longest first, so that none of them is left to end the run alone on one worker while the others
    # have nothing to do: what one worker runs together (ONE_WORKER), then the modules with slow tests. A
    # module's tests stay together, so a module fixture is built once (per worker).
    slow = {item.module for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: (_together(item.nodeid) is None, item.module not in slow))
    items[:] = _spread_waiting(items)
    if not config.getoption("--dovecot-only"):
        return
    others = set(MATRIX) - {"dovecot"}
    kept, deselected = [], []
    for item in items:
        needs_other = others & _servers(item)
        (deselected if needs_other else kept).append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    """A test marked ``inbox_only`` (tests/support/servers/matrix.py) is checked on Cyrus's default namespace:
    it fails if it named a folder other than INBOX after all (tests/support/run/inbox_only.py)."""
    callspec = getattr(item, "callspec", None)
    if item.get_closest_marker(INBOX_ONLY_MARK) is None or callspec is None:
        return (yield)
    fixture = next((name for name, value in callspec.params.items() if value == "cyrus"), None)
    if fixture is None:
        return (yield)
    server: Cyrus = item.funcargs[fixture]  # type: ignore[attr-defined]
    with folders_seen({server.plain_port, server.tls_port}) as seen:
        result = yield
    reason = verdict(seen)
    if reason:
        pytest.fail(reason, pytrace=False)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failed test's report carries the end of the log of each IMAP server it used: why a server
    refused or failed is often only there (Dovecot's reason for "[UNAVAILABLE]"), and a session
    server's log is gone with the run."""
    report: pytest.TestReport = yield
    if report.failed:
        servers = {id(value): (name, value) for name, value in getattr(item, "funcargs", {}).items()}
        for name, server in servers.values():
            if isinstance(server, ImapServer):
                report.sections.append((f"{name}: {type(server).__name__}'s log", server.log_tail()))
    return report


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"
