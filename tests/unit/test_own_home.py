"""The tests' own homes (tests/support/run/own_home.py, ``own_home`` in tests/conftest.py): a test and its
children resolve every per-user directory below a home of the test's own, and the guard refuses, and
records for the test to fail on, a child or an opening that would reach the real home."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import platformdirs
import pytest

from mail_imap_mcp.credentials.sign_in_state import sign_in_dir
from mail_imap_mcp.mail.sealing import default_state_dir
from tests.support.patience import patient
from tests.support.run import own_home as guard


@pytest.fixture
def refused() -> Iterator[None]:
    """What the guard refuses during the test is taken back from its record (the test expects it)."""
    seen = len(guard.violations)
    yield
    del guard.violations[seen:]


def test_every_per_user_directory_of_a_test_is_below_its_own_home(own_home: Path) -> None:
    assert os.environ["HOME"] == str(own_home) and str(own_home) not in guard.REAL_HOMES
    assert not {name for name in guard.XDG_BASES if name in os.environ}
    for directory in (
        Path.home(),
        sign_in_dir(),
        default_state_dir(),
        Path(platformdirs.user_data_dir("mail-imap-mcp")),
        Path(platformdirs.user_config_dir("mail-imap-mcp")),
    ):
        assert directory.is_relative_to(own_home), directory


def test_a_child_that_inherits_the_environment_has_the_tests_home(own_home: Path) -> None:
    code = "import pathlib; print(pathlib.Path.home())"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=patient(60)
    )
    assert done.stdout.strip() == str(own_home)


@pytest.mark.parametrize("home", [None, "real"], ids=["no HOME", "the real HOME"])
@pytest.mark.parametrize(
    "command",
    [["-m", "mail_imap_mcp", "check"], ["-c", "from mail_imap_mcp.cli import main; main()"]],
    ids=["-m", "-c"],
)
@pytest.mark.usefixtures("refused")
def test_a_command_of_the_project_started_without_the_tests_home_is_refused(
    home: str | None, command: list[str]
) -> None:
    env = {"PATH": os.environ["PATH"]} | ({"HOME": guard.REAL_HOMES[0]} if home else {})
    with pytest.raises(PermissionError, match="never touch the real home"):
        subprocess.run([sys.executable, *command], env=env, timeout=patient(60))
    assert f"started {sys.executable} {command[0]} {command[1]} with HOME=" in guard.violations[-1]


@pytest.mark.parametrize(
    "command",
    [["-c", "pass"], ["-c", "from mail_imap_mcp.content._child import main"]],
    ids=["another program", "the sandboxed document parser"],
)
def test_another_program_may_have_an_environment_without_a_home(command: list[str]) -> None:
    """A server's harness, a compiler, ``ldconfig``, the product's own sandboxed parser (a bare
    environment on purpose): nothing that reads a home."""
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    subprocess.run([sys.executable, *command], env=env, check=True, timeout=patient(60))


@pytest.mark.usefixtures("refused")
def test_opening_a_file_of_the_real_homes_config_is_refused() -> None:
    config = Path(guard.REAL_HOMES[0]) / ".config" / "mail-imap-mcp" / "config.toml"
    with pytest.raises(PermissionError, match="never touch the real home"):
        config.open("a")
    assert any(str(config) in what for what in guard.violations)
