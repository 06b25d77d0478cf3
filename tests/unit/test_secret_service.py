"""The tests' keychain (tests/support/servers/secret_service.py) tells when GNOME Keyring died under a test."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests.support.patience import eventually
from tests.support.servers.secret_service import daemon_running, running_secret_service


def _abort_the_daemon_during_a_test(root: Path) -> None:
    with running_secret_service(root) as service:
        os.kill(service.pid, signal.SIGABRT)
        eventually(lambda: not daemon_running(service.pid), within=10, what="the daemon's end")


def test_regression_a_keychain_daemon_that_died_during_the_test_is_named_on_leaving(tmp_path: Path) -> None:
    """Issue 57: GNOME Keyring 42 can abort under concurrent clients ("Bail out! ...
    invoke_get_property_in_idle_cb"); the test then failed with the product's keychain error alone."""
    with pytest.raises(RuntimeError) as caught:
        _abort_the_daemon_during_a_test(tmp_path)
    message = str(caught.value)
    assert message.startswith("gnome-keyring-daemon ended during the test"), message
    assert "a fault of GNOME Keyring" in message and "its log:" in message


def test_a_keychain_daemon_that_lived_leaves_quietly(tmp_path: Path) -> None:
    with running_secret_service(tmp_path) as service:
        assert daemon_running(service.pid)
    assert not daemon_running(service.pid) and service.log.is_file()


def test_regression_a_daemon_reaped_while_its_stat_is_read_is_not_running(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A CI run: /proc/<pid>/stat opened, then the process reaped before the read (ESRCH), failed the
    # test that waits for the daemon's end with ProcessLookupError.
    def reaped(self: Path, *args: object, **kwargs: object) -> str:
        raise ProcessLookupError(3, "No such process")

    monkeypatch.setattr(Path, "read_text", reaped)
    assert not daemon_running(os.getpid())
