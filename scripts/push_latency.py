"""How long after another client's ``APPEND`` is answered a watching connection hears of the new message,
on a throwaway Dovecot: IDLE in the examined mailbox, and NOTIFY (RFC 5465) for a mailbox not selected.

Run it with ``scripts/push_latency [--rounds N]``. It decides whether the index's freshness check may
trust a quiet watcher instead of asking the server (docs/index.md, "The freshness rule"): the index
promises that a message the server had when the call started is found, so a watcher vouches for a folder
only if the server tells it of every change before the next call can start. A push that comes hundreds of
milliseconds after the change was answered leaves a window in which the server has the message and the
watcher has heard nothing: a quiet watcher then vouches for nothing, unless it asks first
(``scripts/push_flush``: one NOOP on a NOTIFY connection, which Dovecot answers after telling every change).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from raw_imap import RawImap  # noqa: E402
from tests.support.mail.mailgen import plain_message  # noqa: E402
from tests.support.servers.dovecot import Dovecot  # noqa: E402  (after the path above)


def measure(port: int, user: str, password: str, rounds: int, *, notify: bool) -> list[float]:
    """Milliseconds from the APPEND's tagged OK to the watcher's EXISTS (IDLE) or STATUS (NOTIFY)."""
    watcher, writer = RawImap(port), RawImap(port)
    for connection in (watcher, writer):
        connection.command(b'LOGIN "%s" "%s"' % (user.encode(), password.encode()))
    if notify:
        watcher.command(b"NOTIFY SET (mailboxes (Watched) (MessageNew MessageExpunge FlagChange))")
    else:
        watcher.command(b"EXAMINE Watched")
    delays = []
    for number in range(rounds):
        watcher.sock.sendall(b"i IDLE\r\n")
        watcher.wait_for(b"+ ", 5)
        time.sleep(0.2)
        writer.command(b"APPEND Watched", plain_message(f"pushed {number}", "text"))
        answered = time.monotonic()
        heard = watcher.wait_for(b"STATUS" if notify else b"EXISTS", 120)
        delays.append((time.monotonic() - answered) * 1000 if heard else float("inf"))
        watcher.sock.sendall(b"DONE\r\n")
        watcher.wait_for(b"i OK", 5)
    return delays


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10, help="appends per way of watching (default 10)")
    rounds = parser.parse_args().rounds
    with Dovecot() as dovecot:
        user = dovecot.new_user()
        dovecot.seed(user, "Watched", [plain_message("first", "text")])
        for notify in (False, True):
            delays = measure(dovecot.plain_port, user, dovecot.password, rounds, notify=notify)
            print(
                f"{'NOTIFY' if notify else 'IDLE'}: the watcher heard of the new message "
                f"{statistics.median(delays):.0f} ms (median; min {min(delays):.0f}, max {max(delays):.0f}) "
                f"after the APPEND was answered, {rounds} appends"
            )


if __name__ == "__main__":
    main()
