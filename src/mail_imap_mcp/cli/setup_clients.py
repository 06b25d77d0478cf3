"""What ``mail-imap-mcp setup`` prints for each MCP client: the exact snippet or command that starts this
server with the config file it wrote (part of the command line: only ``cli/setup.py`` imports it).

No password is ever in a snippet: the config file names the keychain entry or the password file; with
``--password-env`` the snippet names the environment variable the client must set, with a placeholder
(VS Code asks for it in a password prompt of its own), and :func:`password_env_wording` says where each
client then keeps it.
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path, PureWindowsPath

SERVER_NAME = "mail"
PASSWORD_PLACEHOLDER = "<your password>"


def server_command() -> list[str]:
    """How this installation's server is started: its console script beside this Python, else ``-m``."""
    found = shutil.which("mail-imap-mcp", path=str(Path(sys.executable).parent))
    return [found] if found else [sys.executable, "-m", "mail_imap_mcp"]


def claude_desktop_config_path(platform: str = sys.platform, home: Path | None = None) -> str:
    """Where Claude Desktop keeps ``claude_desktop_config.json`` on ``platform``."""
    if platform == "darwin":
        return str(
            (home or Path.home())
            / "Library"
            / "Application Support"
            / "Claude"
            / "claude_desktop_config.json"
        )
    if platform == "win32":
        return str(PureWindowsPath("%APPDATA%", "Claude", "claude_desktop_config.json"))
    return str((home or Path.home()) / ".config" / "Claude" / "claude_desktop_config.json")


def password_env_wording(variable: str, platform: str = sys.platform) -> str:
    """Where the password is once each client sets ``variable``: said exactly, as setup prints it."""
    return (
        f"The password is in no file of this server's: the config reads it from the environment variable "
        f"{variable}, which each MCP client sets. VS Code asks for it in a password prompt and keeps it in "
        f"its own secret storage; Claude Desktop keeps it in clear in {claude_desktop_config_path(platform)}, "
        "Cursor in ~/.cursor/mcp.json and Claude Code in ~/.claude.json (the snippets below show where). "
        "To keep it out of those files, run setup again without --password-env."
    )


def _entry(
    command: Sequence[str], config: Path, password_env: str | None, password: str
) -> dict[str, object]:
    entry: dict[str, object] = {
        "command": command[0],
        "args": [*command[1:], "serve", "--config", str(config)],
    }
    if password_env is not None:
        entry["env"] = {password_env: password}
    return entry


def snippets(
    config: Path,
    password_env: str | None = None,
    command: Sequence[str] | None = None,
    platform: str = sys.platform,
) -> str:
    """The text ``setup`` prints: one block per client, each ready to paste or run."""
    command = list(command or server_command())
    desktop = {"mcpServers": {SERVER_NAME: _entry(command, config, password_env, PASSWORD_PLACEHOLDER)}}
    vscode_password = "${input:mail-imap-password}"
    vscode: dict[str, object] = {
        "servers": {SERVER_NAME: {"type": "stdio", **_entry(command, config, password_env, vscode_password)}}
    }
    if password_env is not None:
        vscode = {
            "inputs": [
                {
                    "type": "promptString",
                    "id": "mail-imap-password",
                    "description": "IMAP password",
                    "password": True,
                }
            ],
            **vscode,
        }
    # The name before -e: Claude Code's -e takes every value up to the next option, the name included.
    env_flag = f" -e {password_env}={shlex.quote(PASSWORD_PLACEHOLDER)}" if password_env else ""
    server_args = [*command, "serve", "--config", str(config)]
    lines = [
        "Claude Desktop: the MCP Bundle is the easiest (docs/bundle.md); or add this to",
        f"  {claude_desktop_config_path(platform)}:",
        json.dumps(desktop, indent=2),
        "",
        "Claude Code:",
        f"  claude mcp add --scope user {SERVER_NAME}{env_flag} -- {shlex.join(server_args)}",
        "",
        "VS Code: add this to .vscode/mcp.json (or the user mcp.json: 'MCP: Open User Configuration'):",
        json.dumps(vscode, indent=2),
        "",
        "Cursor: add this to ~/.cursor/mcp.json (or .cursor/mcp.json in a project):",
        json.dumps(desktop, indent=2),
        "",
        "Any other client: the command is",
        f"  {shlex.join(server_args)}",
    ]
    if password_env is not None:
        lines.append(f"  with the password in the environment variable {password_env}.")
    return "\n".join(lines) + "\n"


def already_served(config: Path, account_id: str, others: Sequence[str]) -> str:
    """What setup says instead of "paste this" when ``config`` already held ``others``: a client set up
    for them starts the server with this file, which serves every account in it."""
    held = ", ".join(repr(other) for other in others)
    return (
        f"Nothing to add where a client already starts the server with {config} (for {held}): it serves "
        f"every account there, {account_id!r} included, once the client restarts it. Claude Code answers "
        '"already exists" to `claude mcp add` then: nothing to add. Only a client not set up yet needs '
        "these:\n"
    )
