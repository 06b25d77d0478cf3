"""The browser opener's rules (net/browser.py): which command opens a page where, once per key until its
attempt ends or expires, never where the server may not. The command's launch is recorded here; the real
launch is tested in tests/unit/test_browser_launch.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mail_imap_mcp.net.browser import ATTEMPT_S, BrowserOpener

URL = "http://127.0.0.1:5555/auth?client_id=x&state=y"


class Recorder:
    def __init__(self, starts: bool = True) -> None:
        self.launched: list[list[str]] = []
        self.starts = starts

    def __call__(self, argv: list[str]) -> bool:
        self.launched.append(argv)
        return self.starts


def opener(
    environ: dict[str, str], platform: str = "linux", allowed: bool = True, **options: object
) -> tuple[BrowserOpener, Recorder]:
    recorder = Recorder()
    return BrowserOpener(
        allowed=allowed, environ=environ, platform=platform, launch=recorder, **options
    ), recorder  # type: ignore[arg-type]


@pytest.fixture
def programs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PATH of nothing but fake xdg-open, w3m and my-browser programs."""
    for name in ("xdg-open", "w3m", "my-browser"):
        program = tmp_path / name
        program.write_text("#!/bin/sh\n")
        program.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    return tmp_path


@pytest.mark.parametrize(
    ("platform", "environ", "expected"),
    [
        ("win32", {}, ["startfile", URL]),
        ("darwin", {}, ["open", URL]),
        ("linux", {"DISPLAY": ":0"}, ["xdg-open", URL]),
        ("linux", {"WAYLAND_DISPLAY": "wayland-0"}, ["xdg-open", URL]),
        ("linux", {}, None),
        ("freebsd14", {}, None),
        ("linux", {"BROWSER": "my-browser --new-tab %s"}, ["my-browser", "--new-tab", URL]),
        ("linux", {"BROWSER": "my-browser"}, ["my-browser", URL]),
        ("darwin", {"BROWSER": f"not-installed{os.pathsep}my-browser"}, ["my-browser", URL]),
        ("linux", {"BROWSER": "not-installed"}, None),
        ("linux", {"BROWSER": "w3m"}, None),
        ("linux", {"BROWSER": "w3m", "DISPLAY": ":0"}, ["w3m", URL]),
        ("linux", {"BROWSER": "'unclosed"}, None),
    ],
    ids=[
        "windows",
        "macos",
        "x11",
        "wayland",
        "linux without a display",
        "bsd without a display",
        "BROWSER with %s",
        "BROWSER without %s",
        "the first installed BROWSER entry",
        "BROWSER not installed and no display",
        "a console BROWSER without a display",
        "a console BROWSER with a display",
        "BROWSER that does not parse",
    ],
)
def test_the_command_is_the_platforms_or_browsers_only_where_a_page_can_show(
    programs: Path, platform: str, environ: dict[str, str], expected: list[str] | None
) -> None:
    found, _ = opener(environ, platform)
    command = found.command(URL)
    if command is not None and command[0] not in ("startfile", "open"):
        command = [os.path.basename(command[0]), *command[1:]]
    assert command == expected
    assert found.can_open() is (expected is not None)


def test_a_server_reached_over_http_never_opens_a_browser(programs: Path) -> None:
    never, recorder = opener({"DISPLAY": ":0", "BROWSER": "my-browser"}, allowed=False)
    assert never.command(URL) is None and not never.can_open()
    assert never.open_for_user(URL, "work") is False
    assert recorder.launched == []
    assert BrowserOpener.never().open_for_user(URL, "work") is False


def test_a_page_opens_once_per_key_until_the_attempt_ends_or_expires(programs: Path) -> None:
    now = [1000.0]
    once, recorder = opener({"DISPLAY": ":0"}, clock=lambda: now[0])
    assert once.open_for_user(URL, "work") is True
    assert once.open_for_user(URL + "&again", "work") is False  # the same attempt: not again
    assert once.open_for_user(URL, "home") is True  # another account's
    once.attempt_ended("work")
    assert once.open_for_user(URL, "work") is True
    now[0] += ATTEMPT_S - 1
    assert once.open_for_user(URL, "work") is False
    now[0] += 1  # the attempt expired
    assert once.open_for_user(URL, "work") is True
    assert [argv[-1] for argv in recorder.launched] == [URL] * 4


def test_a_browser_that_did_not_start_leaves_the_key_free(programs: Path) -> None:
    failing = Recorder(starts=False)
    found = BrowserOpener(allowed=True, environ={"DISPLAY": ":0"}, platform="linux", launch=failing)
    assert found.open_for_user(URL, "work") is False
    assert found.open_for_user(URL, "work") is False
    assert len(failing.launched) == 2
