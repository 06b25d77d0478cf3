"""``mail-imap-mcp index``'s progress against a real Dovecot: a bar when stderr is a terminal (run here
under a pseudo-terminal) showing messages, folders, MB, rate and ETA up to its final state, and plain
lines with the same facts when stderr is not a terminal."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

from tests.support.accounts import account_settings, config_toml
from tests.support.mail.mailgen import plain_message
from tests.support.patience import patient
from tests.support.servers.matrix import MatrixServer

ROOT = Path(__file__).resolve().parents[3]
#: The messages of each folder of the account (1,200 in all: the bar is drawn several times).
FOLDERS = {"INBOX": 700, "Archive": 500}


def seeded(dovecot: MatrixServer, tmp_path: Path) -> Path:
    user = dovecot.new_user()
    for folder, count in FOLDERS.items():
        dovecot.seed(
            user,
            folder,
            [plain_message(f"{folder} {i}", f"progress words {i}\r\n" * 20) for i in range(count)],
        )
    path = tmp_path / "config.toml"
    extra = f'\n[server]\nindex = true\nindex_dir = "{tmp_path / "index"}"\n'
    path.write_text(config_toml({"default": account_settings(dovecot, user)}) + extra)
    return path


def index_argv(config: Path) -> list[str]:
    return [sys.executable, "-m", "mail_imap_mcp", "--config", str(config), "index"]


def run_on_a_terminal(argv: list[str], columns: int = 160) -> tuple[int, str]:
    """Run ``argv`` with stderr on a pseudo-terminal ``columns`` wide; its exit code and what the
    terminal received."""
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    process = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=terminal, stdin=subprocess.DEVNULL, cwd=ROOT
    )
    os.close(terminal)
    received = bytearray()
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # EIO: the terminal's last writer is gone
            break
        if not chunk:
            break
        received += chunk
    os.close(controller)
    assert process.stdout is not None
    process.stdout.read()
    return process.wait(timeout=patient(120)), received.decode("utf-8", "replace")


def test_on_a_terminal_the_bar_shows_messages_folders_mb_rate_and_eta(
    dovecot: MatrixServer, tmp_path: Path
) -> None:
    total = sum(FOLDERS.values())
    code, screen = run_on_a_terminal(index_argv(seeded(dovecot, tmp_path)))
    assert code == 0, screen
    # tqdm redraws its line with a carriage return: each state of the bar is one piece.
    states = [piece.strip() for piece in re.split(r"[\r\n]+", screen) if "msg" in piece]
    assert len(states) >= 3, screen
    bar = re.compile(
        r"^default: +(?P<percent>\d+)%\|.*\| (?P<done>\d+)/(?P<total>\d+) "
        r"\[(?P<elapsed>[\d:]+)<(?P<eta>[\d:?]+), +(?P<rate>[\d.?]+)msg/s, "
        r"folder (?P<folder>\d)/(?P<folders>\d), (?P<mb>[\d.]+) MB\]$"
    )
    parsed = [bar.match(state) for state in states]
    assert all(parsed), [state for state, match in zip(states, parsed, strict=True) if not match]
    final = parsed[-1]
    assert final is not None
    assert (final["percent"], final["done"], final["total"]) == ("100", str(total), str(total))
    assert (final["folder"], final["folders"]) == ("2", "2")
    assert final["eta"] == "00:00" and float(final["rate"]) > 0 and float(final["mb"]) > 0.1
    # It moved: messages, folders and MB grew through the run.
    done = [int(m["done"]) for m in parsed if m is not None]
    assert done == sorted(done) and done[0] < total
    first = parsed[0]
    assert first is not None and (first["done"], first["folder"], first["mb"]) == ("0", "0", "0.0")
    assert {m["folder"] for m in parsed if m is not None} == {"0", "1", "2"}
    megabytes = [float(m["mb"]) for m in parsed if m is not None]
    assert megabytes == sorted(megabytes) and megabytes[0] < megabytes[-1]
    assert "index default:" not in screen  # no plain lines on a terminal


def test_when_stderr_is_no_terminal_plain_lines_say_the_same(dovecot: MatrixServer, tmp_path: Path) -> None:
    total = sum(FOLDERS.values())
    done = subprocess.run(
        index_argv(seeded(dovecot, tmp_path)), capture_output=True, text=True, timeout=patient(120), cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == f"index default: 2 folder(s), {total} message(s) to index"
    assert re.fullmatch(
        rf"index default: {total}/{total} messages, folder 2/2, [\d.]+ MB, \d+ msg/s, ETA 0 s", lines[-1]
    ), lines
    assert "\r" not in done.stderr and "msg/s]" not in done.stderr  # no bar
