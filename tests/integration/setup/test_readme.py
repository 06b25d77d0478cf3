"""The README's user path, run as written: install (README.md), Claude Desktop config, `check` and the
meaning extra (docs/install.md).

The snippets are taken from those pages (the fenced block after each ``<!-- readme-test: NAME -->``
marker), so they cannot drift from what works. Only the placeholders a user replaces are
substituted: the repository URL, ``/home/you``, and the account values (this test's Dovecot).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.patience import patient
from tests.support.run.readme import INSTALL, readme_block
from tests.support.servers.dovecot import Dovecot
from tests.support.shared.readme import pinned

ROOT = Path(__file__).resolve().parents[3]
#: What each line of the README's install may take (on an idle machine; scaled by patience).
INSTALL_LINE_S = 600
#: The limit of each test (pytest-timeout's, scaled as the install's waits are): the first one that uses
#: the install waits for every line of it, then runs for a minute or two.
pytestmark = pytest.mark.timeout(INSTALL_LINE_S * len(readme_block("install").splitlines()) + 300)
DEV_TOOLS = ("pytest", "mypy", "ruff", "hypothesis", "matplotlib", "numpy", "trustme")


def test_runtime_lock_is_the_dev_lock_without_development_tools() -> None:
    runtime, dev = pinned(ROOT / "requirements-runtime.lock"), pinned(ROOT / "requirements.lock")
    assert {"mcp", "imapclient", "pydantic", "nh3", "tenacity"} <= runtime.keys()
    assert not [tool for tool in DEV_TOOLS if tool in runtime]
    assert {name: dev[name] for name in runtime if name in dev} == {
        name: version for name, version in runtime.items() if name in dev
    }, "versions differ: run scripts/lock"
    # The runtime lock is for every platform: what the (Linux) development lock lacks is another
    # platform's alone (Windows' keychain backend, colorama...).
    text = (ROOT / "requirements-runtime.lock").read_text()
    for name in runtime.keys() - dev.keys():
        (line,) = re.findall(rf"^{re.escape(name)}==.*$", text, re.MULTILINE | re.IGNORECASE)
        assert "sys_platform == 'win32'" in line or "emscripten" in line, line


@pytest.fixture(scope="module")
def installed_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh HOME in which the README's install commands ran, line by line, as written."""
    home = tmp_path_factory.mktemp("home")
    env = {"HOME": str(home), "PATH": os.environ["PATH"], "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    for line in readme_block("install").splitlines():
        command = line.replace("<repository URL>", shlex.quote(str(ROOT)))
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=home,
            env=env,
            capture_output=True,
            text=True,
            timeout=patient(INSTALL_LINE_S),
        )
        assert done.returncode == 0, f"README install step failed: {line}\n{done.stdout}\n{done.stderr}"
    return home


@pytest.mark.slow
def test_readme_install_pulls_no_development_tools(installed_home: Path) -> None:
    pip = installed_home / ".local/share/mail-imap-mcp/bin/pip"
    listed = subprocess.run([pip, "list", "--format=json"], capture_output=True, text=True, check=True)
    names = {package["name"].lower() for package in json.loads(listed.stdout)}
    assert "mail-imap-mcp" in names
    assert not [tool for tool in DEV_TOOLS if tool in names]


@pytest.mark.slow
def test_readme_install_ships_the_repositorys_config_example(installed_home: Path) -> None:
    # The installed wheel holds a real copy of config.example.toml, the file at the repository root.
    server = installed_home / ".local/share/mail-imap-mcp/bin/mail-imap-mcp"
    done = subprocess.run(
        [server, "config-example"], capture_output=True, text=True, timeout=patient(30), check=True
    )
    assert done.stdout == (ROOT / "config.example.toml").read_text(encoding="utf-8")


def account_values(dovecot: Dovecot, user: str) -> dict[str, str]:
    """What the user types into the README's placeholders, for this test's Dovecot."""
    return {
        "MAIL_IMAP_DEFAULT_HOST": dovecot.host,
        "MAIL_IMAP_DEFAULT_PORT": str(dovecot.tls_port),
        "MAIL_IMAP_DEFAULT_USER": user,
        "MAIL_IMAP_DEFAULT_PASS": dovecot.password,
        "MAIL_IMAP_DEFAULT_SECURE": "true",
    }


@pytest.mark.slow
@pytest.mark.anyio
async def test_readme_claude_desktop_config_starts_a_working_server(
    installed_home: Path, dovecot: Dovecot, user: str
) -> None:
    (server,) = json.loads(readme_block("client-config", INSTALL))["mcpServers"].values()
    values = account_values(dovecot, user)
    assert set(server["env"]) == set(values), "the README's variables changed: update this test"
    params = StdioServerParameters(
        command=server["command"].replace("/home/you", str(installed_home)),
        args=server["args"],
        # The only addition: this Dovecot's certificate is self-signed.
        env={**values, "MAIL_IMAP_DEFAULT_CA_FILE": str(dovecot.ca_file), "HOME": str(installed_home)},
    )
    async with Client(params) as client:
        mcp = EnvelopeClient(client)
        (account,) = (await mcp.ok("imap_list_accounts"))["accounts"]
        assert (account["account_id"], account["username"]) == ("default", user)
        assert (await mcp.ok("imap_list_mailboxes"))["mailboxes"][0]["name"] == "INBOX"
        assert (await mcp.ok("imap_search_messages"))["total"] == 0


@pytest.mark.slow
def test_readme_check_command_logs_in(installed_home: Path, dovecot: Dovecot, user: str) -> None:
    command = readme_block("check", INSTALL)
    for placeholder, value in (
        ("imap.fastmail.com", dovecot.host),
        ("you@fastmail.com", user),
        ("an-app-password", dovecot.password),
    ):
        assert placeholder in command
        command = command.replace(placeholder, value)
    env = {
        "HOME": str(installed_home),
        "PATH": os.environ["PATH"],
        # Not in the README's command: this Dovecot's port and self-signed certificate.
        "MAIL_IMAP_DEFAULT_PORT": str(dovecot.tls_port),
        "MAIL_IMAP_DEFAULT_CA_FILE": str(dovecot.ca_file),
        # The README's login is an address; this Dovecot's is a bare name, so name the address.
        "MAIL_IMAP_DEFAULT_ADDRESSES": "you@fastmail.com",
    }
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=installed_home,
        env=env,
        capture_output=True,
        text=True,
        timeout=patient(60),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith(
        f"ok   default: {dovecot.host}:{dovecot.tls_port} (tls) as {user}: logged in"
    )
    assert done.stderr == ""


@pytest.mark.slow
def test_readme_install_leaves_search_by_meaning_out_and_check_says_how_to_add_it(
    installed_home: Path, dovecot: Dovecot, user: str
) -> None:
    # Issue 80: the lean install has no meaning extra (no numpy: see above); with the index on, `check`
    # says search by meaning is unavailable, naming the README's command to add it, as this install's pip.
    config = installed_home / "meaning.toml"
    config.write_text(
        f'[server]\nindex = true\n[accounts.default]\nhost = "{dovecot.host}"\nport = {dovecot.tls_port}\n'
        f'username = "{user}"\npassword_env = "MEANING_PASSWORD"\nca_file = "{dovecot.ca_file}"\n'
    )
    server = installed_home / ".local/share/mail-imap-mcp/bin/mail-imap-mcp"
    done = subprocess.run(
        [server, "check", "--config", str(config)],
        env={"HOME": str(installed_home), "PATH": os.environ["PATH"], "MEANING_PASSWORD": dovecot.password},
        capture_output=True,
        text=True,
        timeout=patient(60),
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    add = readme_block("meaning", INSTALL).strip().replace("~", str(installed_home), 1)
    assert (
        f"note    search by meaning (default): unavailable: the meaning extra is not installed: add it with {add} "
        in (done.stdout)
    ), done.stdout


@pytest.mark.parametrize(("service", "installs"), [("/nonexistent/dovecot/imap", True), ("/bin/sh", False)])
def test_regression_bootstrap_installs_dovecot_imapd_when_only_its_imap_service_is_missing(
    service: str, installs: bool
) -> None:
    # Issue 8: with dovecot-core present and dovecot-imapd removed (another IMAP server package does
    # that), scripts/demo and scripts/test checked only for `dovecot` and the demo died in Dovecot.
    script = (
        f"source {shlex.quote(str(ROOT / 'scripts' / '_bootstrap.sh'))}\n"
        'apt_install() { echo "would install: $*"; }\n'
        "ensure_dovecot\n"
    )
    done = subprocess.run(
        ["bash", "-c", script],
        capture_output=True,
        text=True,
        timeout=patient(30),
        env={**os.environ, "DOVECOT_IMAP_SERVICE": service},
        check=True,
    )
    assert ("would install: dovecot-imapd" in done.stdout) is installs
