"""The server where POSIX signals, rlimits and process groups are missing, simulated on Linux
(tests/support/windows_like.py says what is hidden and what is not simulated): it lists its tools,
searches, reads a message, extracts a PDF's text, keeps a 1 GiB decompression bomb under the memory limit
and stops when stdin closes; the extraction child, without rlimits, is held to its memory by the parent.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from email.message import EmailMessage
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.support.accounts import account_settings, config_toml, env_account
from tests.support.clients.envelope_client import INITIALIZE_REQUEST, EnvelopeClient
from tests.support.mail.documents import CORPUS
from tests.support.mail.mailgen import crlf
from tests.support.patience import patient
from tests.support.servers.dovecot import Dovecot
from tests.support.windows_like import HIDE, SERVER_PRELUDE, server_code


def with_documents() -> bytes:
    msg = EmailMessage()
    msg["From"] = "Ana <ana@example.org>"
    msg["To"] = "Test User <user@example.org>"
    msg["Subject"] = "Contract and a bomb"
    msg.set_content("The contract is attached.\n")
    for name in ("pdf_text", "pdf_flate_bomb"):
        item = CORPUS[name]
        msg.add_attachment(item.data, maintype="application", subtype="pdf", filename=item.filename)
    return crlf(msg)


def server_env(dovecot: Dovecot, user: str, home: Path) -> dict[str, str]:
    return {**env_account(dovecot, user), "HOME": str(home), "PATH": os.environ["PATH"]}


@pytest.mark.anyio
async def test_the_server_serves_reads_and_extracts_without_posix_process_control(
    tmp_path: Path, dovecot: Dovecot, user: str
) -> None:
    dovecot.seed(user, "INBOX", [with_documents()])
    params = StdioServerParameters(
        command=sys.executable, args=["-c", server_code("serve")], env=server_env(dovecot, user, tmp_path)
    )
    async with Client(params) as client:
        mcp = EnvelopeClient(client)
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert {"imap_search_messages", "imap_get_message", "imap_get_attachment"} <= tools
        (found,) = (await mcp.ok("imap_search_messages", {"subject": "contract"}))["messages"]
        message = await mcp.ok("imap_get_message", {"message_id": found["message_id"]})
        assert "The contract is attached." in json.dumps(message)
        pdf = await mcp.ok("imap_get_attachment", {"message_id": found["message_id"], "part_id": "2"})
        assert "Contract total: 4,250.00 EUR" in pdf["text"]
        bomb = await mcp.call("imap_get_attachment", {"message_id": found["message_id"], "part_id": "3"})
        assert not bomb["success"] and bomb["error"]["code"] == "limit_exceeded", bomb
        assert bomb["error"]["details"]["limit"] == "decompressed_stream_bytes"
        # The server goes on after the bomb.
        again = await mcp.ok("imap_get_attachment", {"message_id": found["message_id"], "part_id": "2"})
        assert again["text"] == pdf["text"]


def test_the_server_stops_when_stdin_closes(tmp_path: Path, dovecot: Dovecot, user: str) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", server_code("serve")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env(dovecot, user, tmp_path),
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(INITIALIZE_REQUEST).encode() + b"\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == INITIALIZE_REQUEST["id"]
        proc.stdin.close()
        assert proc.wait(timeout=patient(10)) == 0  # ended by itself (how fast is not a test's)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert b"Traceback" not in proc.stderr.read() if proc.stderr else True


CHILD_PROBE = """
import json, sys
from pathlib import Path
from mail_imap_mcp.content.sandbox import SandboxLimits, run_in_sandbox
from mail_imap_mcp.content.documents import ExtractionError
from mail_imap_mcp.processes import HAS_PROCESS_GROUPS
path, megabytes = sys.argv[1], int(sys.argv[2])
params = {"format": "pdf", "path": path, "offset": 0, "max_chars": 1000, "hard_cap": 1000,
          "memory_bytes": megabytes << 20}
try:
    result = run_in_sandbox("document", params, SandboxLimits(10, 10, megabytes << 20, 1 << 20))
    print(json.dumps({"groups": HAS_PROCESS_GROUPS, "text": result.get("text")}))
except ExtractionError as exc:
    print(json.dumps({"groups": HAS_PROCESS_GROUPS, "code": exc.code, "limit": exc.limit}))
"""


@pytest.mark.parametrize(("megabytes", "limited"), [(24, True), (512, False)])
def test_the_extraction_child_without_rlimits_is_held_to_its_memory_by_the_parent(
    tmp_path: Path, megabytes: int, limited: bool
) -> None:
    # The child has no RLIMIT_AS here: the parent reads its resident memory and stops it past the limit
    # (24 MiB: the interpreter and the PDF parser need more), and lets it work within one (512 MiB).
    path = tmp_path / "a.pdf"
    path.write_bytes(CORPUS["pdf_text"].data)
    done = subprocess.run(
        [sys.executable, "-c", SERVER_PRELUDE + CHILD_PROBE, str(path), str(megabytes)],
        capture_output=True,
        text=True,
        timeout=patient(60),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["groups"] is False
    if limited:
        assert (answer["code"], answer["limit"]) == ("limit_exceeded", "memory"), answer
    else:
        assert "Contract total" in answer["text"], answer


def test_the_simulation_hides_what_it_says_from_the_project_only() -> None:
    probe = """
import importlib, os, signal, sys
import mail_imap_mcp.processes as processes
hidden = []
for name in ("resource", "fcntl", "termios", "pwd", "grp"):
    try:
        exec(f"import {name}", {"__name__": "mail_imap_mcp.probe"})
    except ImportError:
        hidden.append(name)
import resource  # the standard library's own import still works
print(hidden, processes.HAS_PROCESS_GROUPS, hasattr(os, "killpg"), hasattr(signal, "SIGHUP"))
"""
    done = subprocess.run(
        [sys.executable, "-c", HIDE + probe], capture_output=True, text=True, timeout=patient(30), check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [
        "['resource',",
        "'fcntl',",
        "'termios',",
        "'pwd',",
        "'grp']",
        "False",
        "False",
        "False",
    ]


def test_a_password_file_is_judged_by_its_access_list_where_there_is_no_getuid(
    tmp_path: Path, dovecot: Dovecot, user: str
) -> None:
    """Where ``os.getuid`` is missing (Windows) mode bits say nothing of who may read a file: its access
    list decides, and one that cannot be read refuses the file, naming the setting, as a file open to
    others is refused; the same file and config log in where POSIX owner and mode decide."""
    secret = tmp_path / "work.password"
    secret.write_text(dovecot.password + "\n")
    secret.chmod(0o600)
    config = tmp_path / "config.toml"
    config.write_text(
        config_toml({"work": account_settings(dovecot, user, password_env=None, password_file=secret)})
    )
    env = {"HOME": str(tmp_path), "PATH": os.environ["PATH"]}
    posix = subprocess.run(
        [sys.executable, "-m", "mail_imap_mcp", "check", "--config", str(config)],
        env=env,
        capture_output=True,
        text=True,
        timeout=patient(60),
        check=False,
    )
    assert posix.returncode == 0 and posix.stdout.startswith("ok   work: "), posix.stdout + posix.stderr
    windows = subprocess.run(
        [sys.executable, "-c", server_code("check", "--config", str(config))],
        env=env,
        capture_output=True,
        text=True,
        timeout=patient(60),
        check=False,
    )
    assert windows.returncode == 1
    assert (
        f"password_file in [accounts.work]: {secret} must be yours alone, but its access list cannot be read"
        in windows.stdout
    )
    assert dovecot.password not in windows.stdout + windows.stderr
