"""The browser opener's real launch (net/browser.py): the ``BROWSER`` command runs detached, given the URL,
with none of the server's standard streams (over stdio they are the MCP connection)."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from mail_imap_mcp.net.browser import BrowserOpener, launch_detached
from tests.support.servers.oidc_provider import wait_for

URL = "http://127.0.0.1:5555/auth?client_id=x&state=y"

BROWSER = """\
import json, os, sys
print("a browser that talks on stdout", flush=True)
streams = {str(fd): os.readlink(f"/proc/self/fd/{fd}") for fd in (0, 1, 2)}
with open(sys.argv[1] + ".part", "w") as out:
    json.dump({"argv": sys.argv[2:], "streams": streams, "session": os.getsid(0) == os.getpid()}, out)
os.rename(sys.argv[1] + ".part", sys.argv[1])
"""


def test_the_browser_command_runs_detached_with_the_url_and_none_of_the_servers_streams(
    tmp_path: Path,
) -> None:
    script, record = tmp_path / "browser.py", tmp_path / "opened.json"
    script.write_text(BROWSER)
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(script))} {shlex.quote(str(record))} %s"
    opener = BrowserOpener(allowed=True, environ={"BROWSER": command}, platform="linux")
    assert opener.open_for_user(URL, "work") is True
    wait_for(record.exists)
    opened = json.loads(record.read_text())
    assert opened["argv"] == [URL]
    assert set(opened["streams"].values()) == {"/dev/null"}
    assert opened["session"] is True  # its own session: no terminal signal of the server's reaches it


def test_a_command_that_cannot_start_is_reported(tmp_path: Path) -> None:
    assert launch_detached([str(tmp_path / "no-such-browser"), URL]) is False
