"""How the tests' GNOME Keyring fails under concurrent clients (issue 57's keychain flake).

Run it with ``scripts/keychain_stress [--runs N] [--clients N] [--rounds N]``. Each run starts the
tests' keychain (tests/support/servers/secret_service.py: gnome-keyring-daemon on a session bus of its own, its
login keyring unlocked) and at once ``--clients`` processes, each storing, reading and deleting entries
through keyring's SecretService backend as mail-imap-mcp does (one D-Bus connection per call). A run
fails when a client does; the last line of each failing client is printed, and whether the daemon
ended (its log's ``Bail out!`` and ``CRITICAL`` lines). What it showed (GNOME Keyring 42.1): with two
clients, now and then ``ItemNotFoundException`` (the ``default`` alias not resolving for an instant) or
``Failed to create the collection: Prompt dismissed`` (keyring then asked for a new collection, whose
prompt cannot be shown headless); with six, also the daemon aborting, and then every caller's
``Message recipient disconnected from message bus without replying``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.servers.secret_service import daemon_running, running_secret_service  # noqa: E402

_CLIENT = """
import sys
from keyring.backends.SecretService import Keyring
keychain, client = Keyring(), sys.argv[1]
for n in range(int(sys.argv[2])):
    keychain.set_password("stress", f"{client}-{n}", "secret")
    assert keychain.get_password("stress", f"{client}-{n}") == "secret"
    keychain.get_password("stress", f"old-{client}")
    keychain.delete_password("stress", f"{client}-{n}")
"""


def one_run(root: Path, clients: int, rounds: int) -> tuple[list[str], bool, str]:
    """The failing clients' last lines, whether the daemon ended, and its log's telling lines."""
    failures: list[str] = []
    ended = False
    try:
        with running_secret_service(root) as service:
            env = os.environ | service.environment()
            processes = [
                subprocess.Popen(
                    [sys.executable, "-c", _CLIENT, str(number), str(rounds)],
                    env=env,
                    stderr=subprocess.PIPE,
                    text=True,
                )
                for number in range(clients)
            ]
            for process in processes:
                _, errors = process.communicate()
                if process.returncode:
                    failures.append((errors.strip().splitlines() or ["(no output)"])[-1])
            ended = not daemon_running(service.pid)
    except RuntimeError:  # the harness says the daemon ended during the run
        ended = True
    telling = "\n".join(
        line
        for line in (root / "gnome-keyring.log").read_text().splitlines()
        if "Bail out" in line or "CRITICAL" in line
    )
    return failures, ended, telling


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--clients", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    failed = aborted = 0
    with tempfile.TemporaryDirectory(prefix="keychain-stress-") as scratch:
        for run in range(args.runs):
            failures, ended, telling = one_run(Path(scratch) / str(run), args.clients, args.rounds)
            failed += bool(failures)
            aborted += ended
            if failures:
                print(f"run {run}: {len(failures)} of {args.clients} clients failed; daemon ended: {ended}")
                for line in sorted(set(failures)):
                    print(f"  {line}")
                if telling:
                    print("  daemon's log: " + telling.replace("\n", "\n  daemon's log: "))
    print(
        f"{failed} of {args.runs} runs failed ({args.clients} clients, {args.rounds} rounds); daemon ended in {aborted}"
    )


if __name__ == "__main__":
    main()
