"""xdist's controller runs no test, so it imports nothing that only tests use: ``tests/conftest.py`` leaves
the servers' fixtures (and with them the MCP SDK and the server) to tests/support/server_fixtures.py,
a plugin registered in each process that runs tests. The controller imports ``tests/conftest.py`` before
any worker starts: each second there is a second of every parallel run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.patience import patient

ROOT = Path(__file__).resolve().parents[2]
#: What only a test process needs: the SDK, the server, and the plugin that imports them.
TESTS_ONLY = ("mcp", "mail_imap_mcp.server", "tests.support.server_fixtures")


def test_the_suites_conftest_imports_neither_the_sdk_nor_the_server() -> None:
    probe = f"import sys, json, tests.conftest; print(json.dumps([m for m in {TESTS_ONLY!r} if m in sys.modules]))"
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=patient(60),
        check=True,
    )
    assert json.loads(done.stdout) == []


def test_a_process_that_runs_tests_has_the_servers_fixtures(pytestconfig: pytest.Config) -> None:
    # This process runs tests (a worker, or a run without xdist): the plugin is registered here, and its
    # pytest_configure ran although it came after the others' (the client checks results its own way).
    from jsonschema import Draft202012Validator
    from mcp.client.session import ClientSession

    assert "tests.support.server_fixtures" in sys.modules
    assert pytestconfig.pluginmanager.has_plugin("tests.support.server_fixtures")
    assert getattr(ClientSession.validate_tool_result, "native", False)
    assert getattr(Draft202012Validator.check_schema, "checks_once", False)
