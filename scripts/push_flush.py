"""Whether one NOOP on a NOTIFY connection (RFC 5465) tells every change another client made before it,
on a throwaway Dovecot: the question behind the index's freshness from push (docs/index.md).

Run it with ``scripts/push_flush [--trials N]``. A watching connection sets ``NOTIFY SET STATUS`` for
several folders (INBOX among them; none selected) with CONDSTORE enabled, and keeps what its STATUS
responses say of each. In each trial another connection changes one folder (or two) and is answered: an
APPEND, a flag or keyword change (MODSEQ only), ``\\Seen`` set, an expunge, a MOVE, or a message file
written into the Maildir behind Dovecot's back; the watcher then ends IDLE (``DONE``, in half the trials)
and sends ``NOOP``, sometimes at once, sometimes after a pause of up to 0.6 s (Dovecot waits 0.5 s
before it looks on its own). Once NOOP is answered, the watcher's view of each changed folder (MESSAGES,
UIDNEXT, UIDVALIDITY, HIGHESTMODSEQ) is compared with a ``STATUS`` asked on a third connection: a
difference is a miss, counted by kind of change. Zero misses over thousands of trials is what lets a
quiet NOTIFY connection stand in for a STATUS of every folder.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from raw_imap import RawImap  # noqa: E402
from tests.support.mail.mailgen import plain_message  # noqa: E402
from tests.support.servers.dovecot import Dovecot  # noqa: E402  (after the path above)

FOLDERS = ("INBOX", "Work", "Lists/Python", "Archive", "Receipts")
ITEMS = ("MESSAGES", "UIDNEXT", "UIDVALIDITY", "HIGHESTMODSEQ")
STATUS_LINE = re.compile(rb'^\* STATUS ("(?:[^"\\]|\\.)*"|\S+) \((.*)\)\s*$')
View = dict[str, dict[str, int]]


def quoted(name: str) -> bytes:
    return b'"' + name.encode() + b'"'


def statuses(lines: list[bytes]) -> View:
    """The STATUS responses among ``lines``, by mailbox."""
    found: View = {}
    for line in lines:
        match = STATUS_LINE.match(line)
        if match is None:
            continue
        name = match.group(1).strip(b'"').decode()
        words = match.group(2).split()
        found.setdefault(name, {}).update(
            {words[i].decode().upper(): int(words[i + 1]) for i in range(0, len(words) - 1, 2)}
        )
    return found


def truth(checker: RawImap, name: str) -> dict[str, int]:
    lines = checker.command(b"STATUS " + quoted(name) + b" (" + " ".join(ITEMS).encode() + b")")
    return statuses(lines)[name]


class Trials:
    def __init__(self, dovecot: Dovecot, user: str, seed: int) -> None:
        self.dovecot, self.user = dovecot, user
        self.random = random.Random(seed)
        port, password = dovecot.plain_port, dovecot.password
        self.watcher = RawImap(port).login(user, password)
        self.writer = RawImap(port).login(user, password)
        self.checker = RawImap(port).login(user, password)
        for connection in (self.watcher, self.checker):
            connection.command(b"ENABLE CONDSTORE")
        names = b" ".join(quoted(name) for name in FOLDERS)
        answer = self.watcher.command(
            b"NOTIFY SET STATUS (mailboxes (" + names + b") (MessageNew MessageExpunge FlagChange))"
        )
        self.view: View = {name: truth(self.checker, name) for name in FOLDERS}
        for name, values in statuses(answer).items():
            self.view[name].update(values)
        self.idling: bytes | None = None
        self.selected: str | None = None
        self.number = 0

    def _select(self, name: str) -> list[int]:
        if self.selected != name:
            self.writer.command(b"SELECT " + quoted(name))
            self.selected = name
        lines = self.writer.command(b"UID SEARCH ALL")
        return [int(uid) for line in lines if line.startswith(b"* SEARCH") for uid in line.split()[2:]]

    def change(self, kind: str, name: str) -> list[str]:
        """Make a change of ``kind`` in ``name`` from the writer (answered on return); the folders changed."""
        self.number += 1
        if kind == "append":
            if self.random.random() < 0.5 and self.selected is not None:
                self.writer.command(b"UNSELECT")
                self.selected = None
            message = plain_message(f"pushed {self.number}", "text")
            self.writer.command(b"APPEND " + quoted(name), message)
            return [name]
        if kind == "external":  # a file written into the Maildir, as an MDA that bypasses Dovecot does
            self.dovecot.seed(self.user, name, [plain_message(f"dropped {self.number}", "text")])
            return [name]
        uids = self._select(name)
        if not uids:
            self.writer.command(b"APPEND " + quoted(name), plain_message("filler", "text"))
            uids = self._select(name)
        uid = str(self.random.choice(uids)).encode()
        if kind == "flag":
            flag = self.random.choice([b"\\Flagged", b"$Label1", b"\\Answered"])
            sign = self.random.choice([b"+", b"-"])
            self.writer.command(b"UID STORE " + uid + b" " + sign + b"FLAGS (" + flag + b")")
        elif kind == "seen":
            sign = self.random.choice([b"+", b"-"])
            self.writer.command(b"UID STORE " + uid + b" " + sign + b"FLAGS (\\Seen)")
        elif kind == "expunge":
            self.writer.command(b"UID STORE " + uid + b" +FLAGS.SILENT (\\Deleted)")
            self.writer.command(b"UID EXPUNGE " + uid)
        elif kind == "move":
            target = self.random.choice([other for other in FOLDERS if other != name])
            self.writer.command(b"UID MOVE " + uid + b" " + quoted(target))
            return [name, target]
        return [name]

    def look(self, idle: bool, pause: float) -> None:
        """Whatever the watcher was told, then DONE (when idling) and NOOP, the view kept up to date."""
        if pause:
            time.sleep(pause)
        told: list[bytes] = []
        if self.idling is not None:
            self.watcher.sock.sendall(b"DONE\r\n")
            told += self.watcher.until(self.idling)
            self.idling = None
        told += self.watcher.command(b"NOOP")
        for name, values in statuses(told).items():
            self.view.setdefault(name, {}).update(values)
        if idle:
            self.idling = self.watcher.send(b"IDLE")
            while not self.watcher.read().startswith(b"+ "):
                pass

    def run(self, trials: int, kinds: list[str]) -> tuple[Counter[str], Counter[str]]:
        done: Counter[str] = Counter()
        missed: Counter[str] = Counter()
        for _ in range(trials):
            kind = self.random.choice(kinds)
            idle = self.random.random() < 0.5
            if idle and self.idling is None:
                self.look(idle=True, pause=0)  # the change happens while the watcher is in IDLE
            pause = self.random.choice([0.0, 0.0, 0.0, self.random.uniform(0, 0.6)])
            changed = self.change(kind, self.random.choice(FOLDERS))
            self.look(idle=False, pause=pause)
            done[kind] += 1
            for name in changed:
                real = truth(self.checker, name)
                if any(self.view[name].get(item) != real[item] for item in ITEMS):
                    missed[kind] += 1
                    print(f"missed: {kind} in {name}: watcher {self.view[name]} server {real}", flush=True)
                    self.view[name].update(real)  # counted once
        return done, missed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=2000, help="changes made and checked (default 2000)")
    parser.add_argument("--seed", type=int, default=1, help="of the random choices (default 1)")
    parser.add_argument(
        "--external", action="store_true", help="also write message files into the Maildir behind Dovecot"
    )
    arguments = parser.parse_args()
    kinds = ["append", "flag", "seen", "expunge", "move"] + (["external"] if arguments.external else [])
    with Dovecot() as dovecot:
        user = dovecot.new_user()
        for name in FOLDERS:
            dovecot.seed(user, name, [plain_message(f"{name} {n}", "text") for n in range(20)])
        started = time.monotonic()
        done, missed = Trials(dovecot, user, arguments.seed).run(arguments.trials, kinds)
        took = time.monotonic() - started
    for kind in kinds:
        print(f"{kind}: {done[kind]} changes, {missed[kind]} not told before NOOP was answered")
    print(f"{sum(done.values())} changes, {sum(missed.values())} missed, {took:.0f} s")


if __name__ == "__main__":
    main()
