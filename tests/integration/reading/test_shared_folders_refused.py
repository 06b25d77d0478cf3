"""A folder too wide to share, as an MCP client meets it: ``mail-imap-mcp serve`` started by the SDK's
stdio client with the MCP Bundle form's variable naming the user's home (``MAIL_IMAP_ATTACHMENT_DIRS``)
never serves; it exits at load naming the setting, so no agent ever gets to attach ``~/.ssh/id_rsa``."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.support.patience import patient
from tests.support.servers.http_server import SERVER

pytestmark = pytest.mark.anyio

CONFIG = '[accounts.a]\nhost = "127.0.0.1"\nsecurity = "plain"\nusername = "u"\npassword_env = "PW"\n'


@pytest.mark.parametrize(
    ("variable", "setting"),
    [("MAIL_IMAP_ATTACHMENT_DIRS", "attachment_dirs"), ("MAIL_IMAP_DOWNLOAD_DIR", "download_dir")],
)
async def test_the_home_folder_from_the_bundle_form_stops_the_server_naming_the_setting(
    tmp_path: Path, variable: str, setting: str
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    config = tmp_path / "config.toml"
    config.write_text(CONFIG)
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "PW": "unused", variable: str(home)}
    params = StdioServerParameters(command=SERVER, args=["serve", "--config", str(config)], env=env)
    log = tmp_path / "server.log"
    with log.open("w") as errlog, pytest.raises(Exception), anyio.fail_after(patient(60)):  # noqa: B017
        async with Client(stdio_client(params, errlog=errlog)) as client:
            await client.list_tools()
    said = log.read_text()
    assert f"server.{setting}" in said and "is the user's home folder itself" in said, said
    assert "BEGIN OPENSSH" not in said
