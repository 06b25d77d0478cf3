"""``attachment_dirs`` and ``download_dir`` over the HTTP transport: the server refuses to start, naming
each setting and the transport, before it serves anything (the server's files are not its callers')."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.http_server import SERVER
from tests.support.patience import patient

ACCOUNT = '[accounts.a]\nhost = "127.0.0.1"\nsecurity = "plain"\nusername = "u"\npassword_env = "PW"\n'


@pytest.mark.parametrize(
    ("server", "env", "named"),
    [
        ('attachment_dirs = ["/srv/files"]\n', {}, b"attachment_dirs in [server]"),
        ("", {"MAIL_IMAP_DOWNLOAD_DIR": "/srv/downloads"}, b"download_dir in [server]"),
    ],
)
def test_the_http_transport_refuses_to_start_with_local_folders(
    tmp_path: Path, server: str, env: dict[str, str], named: bytes
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(ACCOUNT + f"[server]\n{server}")
    done = subprocess.run(
        [SERVER, "serve", "--config", str(config), "--transport", "http", "--port", "0"],
        capture_output=True,
        timeout=patient(60),
        check=False,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PW": "secret", **env},
    )
    assert done.returncode == 2, done.stderr
    assert named in done.stderr and b"cannot be used over the HTTP transport" in done.stderr
    assert b"serving" not in done.stderr
