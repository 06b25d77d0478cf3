"""Where the owner of a loopback connection is not known (macOS, Windows), the browser is given a file only
this user can read that forwards to the page (net/redirect_file.py), never the page's address itself on
its command line (issue 56 item 1)."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from mail_imap_mcp.net.browser import BrowserOpener
from mail_imap_mcp.net.redirect_file import KEEP_S, UnsafeDirectory, write_redirect_file
from tests.support.patience import eventually

SECRET_URL = "http://127.0.0.1:5555/approve/the-secret-path?x=1&y=<2>"

posix = pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX modes (Windows: the access list)")


@posix
def test_the_file_is_this_users_alone_and_forwards_to_the_address(tmp_path: Path) -> None:
    directory = tmp_path / "pages"
    page = write_redirect_file(SECRET_URL, directory)
    assert page.parent == directory
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700 and stat.S_IMODE(page.stat().st_mode) == 0o600
    text = page.read_text()
    escaped = "http://127.0.0.1:5555/approve/the-secret-path?x=1&amp;y=&lt;2&gt;"
    assert f'content="0;url={escaped}"' in text and f'href="{escaped}"' in text
    assert 'name="referrer" content="no-referrer"' in text


@posix
def test_a_directory_others_may_read_gets_no_file(tmp_path: Path) -> None:
    directory = tmp_path / "open"
    directory.mkdir(mode=0o755)
    directory.chmod(0o755)
    with pytest.raises(UnsafeDirectory, match="not a directory of this user's alone"):
        write_redirect_file(SECRET_URL, directory)
    assert list(directory.iterdir()) == []


def test_a_file_is_deleted_after_its_time_and_one_left_by_a_crash_at_the_next(tmp_path: Path) -> None:
    page = write_redirect_file(SECRET_URL, tmp_path / "pages", keep_s=0)
    eventually(lambda: not page.exists(), within=10, what="the redirect file to be deleted")
    left = write_redirect_file(SECRET_URL, tmp_path / "pages", keep_s=3600)  # its process then crashed
    past = time.time() - KEEP_S - 60
    os.utime(left, (past, past))
    kept = write_redirect_file(SECRET_URL, tmp_path / "pages", keep_s=3600)
    assert not left.exists() and kept.exists()


@pytest.mark.parametrize(("platform", "opener"), [("darwin", "open"), ("win32", "startfile")])
def test_where_peers_are_not_checked_the_browser_gets_the_file_not_the_address(
    tmp_path: Path, platform: str, opener: str
) -> None:
    launched: list[list[str]] = []
    written: list[Path] = []

    def redirect_file(url: str) -> Path:
        written.append(tmp_path / "open-1.html")
        written[-1].write_text(url)
        return written[-1]

    browser = BrowserOpener(
        allowed=True,
        environ={},
        platform=platform,
        launch=lambda argv: launched.append(argv) is None,
        peers_checked=False,
        redirect_file=redirect_file,
    )
    assert browser.open_for_user(SECRET_URL, "key")
    (argv,) = launched
    assert argv[0] == opener and "the-secret-path" not in " ".join(argv)
    assert argv[1] == (str(written[0]) if platform == "win32" else written[0].as_uri())


def test_no_file_is_written_where_no_browser_can_open(tmp_path: Path) -> None:
    def redirect_file(url: str) -> Path:
        raise AssertionError("no file is written when no browser can open")

    browser = BrowserOpener(
        allowed=True, environ={}, platform="linux", peers_checked=False, redirect_file=redirect_file
    )
    assert browser.open_for_user(SECRET_URL, "key") is False
