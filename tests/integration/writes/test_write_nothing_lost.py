"""Nothing lost, proven: random sequences of writes, with connection resets, against real servers.

A hypothesis state machine (:class:`NothingLost`) drives the write tools through an in-process MCP client
(every envelope checked against its outputSchema by ``EnvelopeClient``; ``internal`` is never accepted)
for a fresh user with six messages, each with its own Message-ID and body, in INBOX and Archive (plus an
empty Trash). The account connects through a fault proxy; before a write a rule may arm a fault:

* ``idle_reset``: the idle connection is reset (RST) before the call;
* ``next_reply``: the connection is reset after N more bytes of whatever the server answers next;
* ``write_N``: the connection is reset instead of forwarding the answer to the call's N-th mail-changing
  command (UID MOVE/COPY/STORE/EXPUNGE, CREATE, RENAME, DELETE): sent, maybe done, never answered.

Rules: pick messages (imap_search_messages of one or two mailboxes, indices drawn; sometimes plus an id
that is stale by now), then move, copy, delete to Trash, delete for good (confirmation round trip), add,
remove or replace flags, or dry-run one of those; create a mailbox; rename or delete one (confirmation
round trip; INBOX, special-use, Trash and non-empty mailboxes are refused and nothing changes); follow an
undo next_action returned earlier.

After EVERY step an IMAP session of the test's own (direct, not through the proxy) lists every selectable
mailbox and fetches each message's Message-ID, flags and a hash of BODY.PEEK[TEXT], and checks:

* the content of every copy is intact (its hash is its Message-ID's);
* per Message-ID, the number of copies over all mailboxes is what the model allows: move, delete to Trash
  and flags keep it, copy adds one per copied message, a confirmed permanent delete removes one; a failed
  call (refusal, or ``unavailable`` after a fault) changed nothing at all (flags included);
* per mailbox, the messages are exactly where the results say (moved, copied, moved_to_trash, deleted);
  a message whose result is ``outcome_unknown`` (a fault hit its command) may have either fate and only
  that: a MOVE leaves it in exactly one of source and destination, Courier's COPY + STORE + UID EXPUNGE may
  also leave it in both, a permanent delete may or may not have removed it, never anything else;
  ``outcome_unknown``/``not_attempted``/``unavailable`` occur only when a fault fired; the truth found is
  then the model's state for the next step;
* every ``new_message_id`` resolves (imap_get_message returns that Message-ID, and the test's session
  finds it at that UID); the undo of a move or delete names exactly those ids;
* flags are those the result reports, and those of the messages not named are unchanged; ``\\Deleted``
  appears only on a message whose move or delete was interrupted;
* the set of mailboxes is the one expected (create, rename with its messages, delete of an empty one);
* imap_search_messages lists exactly the UIDs the test's session sees (a read after a write is fresh);
* on the proxy's wire, no mail-changing command was sent twice in one call (never replayed), and none at
  all by a dry run, a ``confirmation_required`` answer or a failed call.

A failed call changed nothing, with one server exception: Cyrus refuses a DELETE of a name it deleted in
the same second (its delayed delete), which counts as such a refusal.

Servers: Dovecot and Cyrus (UID MOVE) and Courier (no MOVE: UID COPY + STORE + UID EXPUNGE; Trash through
trash_mailbox; its RENAME and DELETE take 2 s each, so only every third sequence confirms one). Reproducible:
a fixed seed (``NOTHING_LOST_SEED`` overrides it) and no example database; no shrinking unless
``NOTHING_LOST_SHRINK=1`` (minutes against a server; the failure message lists the steps anyway). With
``-s`` each server prints what it covered and where the time went; on the 2-core development machine
(whole file 57 s, servers started included):

* dovecot: 23 sequences, 219 steps, 91 faults armed, 46 fired, 137 mail-changing commands on the wire;
  move ok 31 / partial 6 / unavailable 5, copy 52, trash 29, purge 17, flags 32, undo 4, mailboxes 16;
* courier: 12 sequences, 142 steps, 58 armed, 42 fired, 149 commands; move ok 12 / partial 17 /
  unavailable 3, copy 30, trash 11, purge 18, flags 12, undo 1, mailboxes 15;
* cyrus: 9 sequences, 104 steps, 39 armed, 21 fired, 59 commands; move 17, copy 16, rename 20, ...

Found on the way (regression tests at the end): a change sent to the wrong mailbox when the last mailbox
checked had no message left (a permanent delete removed a message nobody named), confirmation tokens
reused within one second, non-ASCII tokens ending as ``internal``; and (strict xfail) a DELETE Cyrus refuses
for a name deleted this second is reported as "already exists; choose another name".
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import re
import socket
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

import anyio
import imapclient
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, Phase, seed, settings
from hypothesis import strategies as st
from hypothesis.errors import FlakyStrategyDefinition
from hypothesis.stateful import RuleBasedStateMachine, get_state_machine_test, precondition, rule
from mcp import Client

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.asking import tokens as tokens_module
from mail_imap_mcp.asking.gate import ConfirmationGate
from mail_imap_mcp.config import Config
from mail_imap_mcp.envelope import ToolFailure
from mail_imap_mcp.server import build_server
from tests.support.accounts import account_settings
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import make_config
from tests.support.mail.mailgen import plain_message
from tests.support.patience import eventually
from tests.support.servers.courier import Courier
from tests.support.servers.cyrus import Cyrus
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.faultproxy import FaultProxy
from tests.support.servers.matrix import MatrixServer

APPLY = "imap_apply_to_messages"
FLAGS = "imap_update_message_flags"
MANAGE = "imap_manage_mailbox"

MACHINE_SETTINGS = settings(
    # Shrinking a failure re-runs sequences against the server for minutes: opt in (the failure message
    # lists the steps of the sequence that failed anyway).
    phases=[Phase.explicit, Phase.reuse, Phase.generate]
    + ([Phase.shrink] if os.environ.get("NOTHING_LOST_SHRINK") else []),
    stateful_step_count=12,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

#: Per server: (sequences, steps per sequence), sized for the CI budget (each step is a few tool calls
#: plus a full read of the account; Courier takes 40 ms per body FETCH and 2 s per RENAME or DELETE).
BUDGET = {"dovecot": (18, 12), "courier": (10, 12), "cyrus": (8, 10)}
SEED = int(os.environ.get("NOTHING_LOST_SEED", "20240610"))
#: The states of a background write that has ended (imap_get_operation).
FINISHED_STATES = {"ok", "partial", "failed", "canceled"}
#: Names (one level) the machine creates, renames to and deletes.
POOL = ("Projects", "Later", "Old")
FLAG_CHOICES = ("\\Seen", "\\Flagged", "\\Answered", "$Work")
FAULTS = ("none", "none", "none", "idle_reset", "next_reply", "write_1", "write_2", "write_3")
#: A client command that changes mail (after its tag).
_WRITE = re.compile(
    rb"^\S+ ((?:UID )?(?:MOVE|COPY|STORE|EXPUNGE)|CREATE|RENAME|DELETE|APPEND)\b", re.IGNORECASE
)
_SELECT = re.compile(rb"^\S+ (?:SELECT|EXAMINE) (.*)$", re.IGNORECASE)
_MESSAGE_ID = re.compile(rb"<[^<>\s]+>")
_FAULT_CODES = {"outcome_unknown", "not_attempted"}

Loc = tuple[str, int, int]  # mailbox, uidvalidity, uid
Counts = Counter[tuple[str, str]]  # (mailbox, Message-ID) -> copies


def loc_of(message_id: str) -> Loc:
    """``imap:{account}:{mailbox}:{uidvalidity}:{uid}`` (the mailbox may contain ':')."""
    head, uidvalidity, uid = message_id.rsplit(":", 2)
    return head.split(":", 2)[2], int(uidvalidity), int(uid)


# ---------------------------------------------------------------------------------------------------
# The truth: what an independent IMAP session sees
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Copy:
    mailbox: str
    uidvalidity: int
    uid: int
    mid: str
    digest: str
    flags: frozenset[str]  # lower case, without \recent


@dataclass
class Snapshot:
    mailboxes: dict[str, tuple[int, frozenset[str]]]  # name -> (UIDVALIDITY, LIST attributes, lower case)
    copies: dict[Loc, Copy]

    def counts(self) -> Counts:
        return Counter((c.mailbox, c.mid) for c in self.copies.values())

    def totals(self) -> Counter[str]:
        return Counter(c.mid for c in self.copies.values())

    def in_mailbox(self, mailbox: str) -> list[Copy]:
        return [c for c in self.copies.values() if c.mailbox == mailbox]

    def live(self, message_id: str) -> Copy | None:
        return self.copies.get(loc_of(message_id))

    def flags(self) -> dict[Loc, frozenset[str]]:
        return {loc: c.flags for loc, c in self.copies.items()}


class Observer:
    """A session of the test's own, straight to the server: lists and reads everything, changes nothing."""

    def __init__(self, server: MatrixServer, user: str) -> None:
        self.client: imapclient.IMAPClient = server.connect(user, tls=False, starttls=False)
        # imapclient sends some commands in two writes: without this each waits for a delayed ACK.
        self.client.socket().setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.unselect = self.client.has_capability("UNSELECT")
        self.digests: dict[tuple[str, int, int, str], str] = {}

    def snapshot(self) -> Snapshot:
        client = self.client
        boxes: dict[str, tuple[int, frozenset[str]]] = {}
        copies: dict[Loc, Copy] = {}
        for flags, _, name in client.list_folders():
            attributes = frozenset(f.decode().lower() for f in flags)
            if attributes & {"\\noselect", "\\nonexistent"}:
                continue
            state = client.select_folder(name, readonly=True)
            uidvalidity = int(state[b"UIDVALIDITY"])
            boxes[name] = (uidvalidity, attributes)
            if int(state[b"EXISTS"]):
                items = ["FLAGS", "BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)]"]
                found = client.fetch(client.search("ALL"), items)
                mids = {uid: message_id_of(data) for uid, data in found.items()}
                # A message's content never changes under its UID: read the body of new ones only (a
                # body FETCH costs Courier 40 ms). The Message-ID is part of the key, as Courier may give
                # a mailbox deleted and created again the same UIDVALIDITY.
                new = [uid for uid in found if (name, uidvalidity, uid, mids[uid]) not in self.digests]
                for uid, data in (client.fetch(new, ["BODY.PEEK[TEXT]"]) if new else {}).items():
                    text = data.get(b"BODY[TEXT]") or b""
                    self.digests[(name, uidvalidity, uid, mids[uid])] = hashlib.sha256(text).hexdigest()[:16]
                for uid, data in found.items():
                    copies[(name, uidvalidity, uid)] = Copy(
                        mailbox=name,
                        uidvalidity=uidvalidity,
                        uid=uid,
                        mid=mids[uid],
                        digest=self.digests[(name, uidvalidity, uid, mids[uid])],
                        flags=frozenset(
                            f.decode().lower() for f in data[b"FLAGS"] if f.lower() != b"\\recent"
                        ),
                    )
            if self.unselect:
                client.unselect_folder()
            else:
                client.close_folder()  # after EXAMINE: expunges nothing
        return Snapshot(boxes, copies)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.logout()


def message_id_of(data: dict[bytes, Any]) -> str:
    # Courier echoes the section as HEADER.FIELDS ("MESSAGE-ID"), the others without quotes.
    header = next(v for k, v in data.items() if k.startswith(b"BODY[HEADER"))
    match = _MESSAGE_ID.search(header or b"")
    return match.group().decode() if match else ""


# ---------------------------------------------------------------------------------------------------
# Faults and the wire
# ---------------------------------------------------------------------------------------------------


class StepFaults(FaultProxy):
    """The fault proxy, plus ``cut_write(n)``: reset the connection instead of forwarding the answer to
    the n-th mail-changing command sent after arming. ``fired`` counts the resets that happened."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        super().__init__(upstream_host, upstream_port)
        self.cut_nth: int | None = None
        self._mark = 0
        self.fired = 0

    def _open(self, client: socket.socket) -> None:
        # Forward each command at once: with Nagle, a command the client wrote in two pieces waits for
        # the server's delayed ACK (40 ms on Cyrus) before its second piece is forwarded.
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super()._open(client)
        with self._lock:
            newest = self._connections[max(self._connections)] if self._connections else None
        if newest is not None and newest.upstream is not None:
            with contextlib.suppress(OSError):
                newest.upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def cut_write(self, nth: int) -> None:
        with self._lock:
            self._mark = len(self._log)
            self.cut_nth = nth

    def disarm(self) -> None:
        self.cut_nth = None
        self.pass_through()

    def _apply_reset_rule(self, conn: Any, data: bytes) -> tuple[bytes, bool]:
        nth = self.cut_nth
        if nth is not None:
            with self._lock:
                sent = b"".join(chunk for ident, chunk in self._log[self._mark :] if ident == conn.ident)
            if len(write_commands(sent)) >= nth:
                self.cut_nth = None
                self.fired += 1
                return b"", True
        forward, cut = super()._apply_reset_rule(conn, data)
        if cut:
            self.fired += 1
        return forward, cut


def write_commands(sent: bytes) -> list[bytes]:
    """The mail-changing commands in ``sent`` (complete lines), each keyed by the mailbox selected then."""
    selected = b""
    found: list[bytes] = []
    for line in sent.split(b"\r\n")[:-1]:
        if match := _SELECT.match(line):
            selected = match.group(1)
        elif _WRITE.match(line):
            found.append(selected + b" | " + line.split(b" ", 1)[1])
    return found


# ---------------------------------------------------------------------------------------------------
# Expectations: what the mailboxes may look like after a step
# ---------------------------------------------------------------------------------------------------


@dataclass
class Scenario:
    """One way the step may have ended: these mailboxes, ``base`` counts plus, for each message whose
    outcome is unknown, one of its ``choices`` (count changes)."""

    mailboxes: frozenset[str]
    base: Counts
    choices: list[list[Counts]] = field(default_factory=list)

    def matches(self, names: frozenset[str], counts: Counts) -> bool:
        if names != self.mailboxes:
            return False
        for picked in itertools.product(*self.choices):
            total = Counter(self.base)
            for delta in picked:
                total.update(delta)
            if +total == +counts and not any(v < 0 for v in total.values()):
                return True
        return False

    def total_bounds(self, mid: str) -> tuple[int, int]:
        base = sum(n for (_, m), n in self.base.items() if m == mid)
        low = high = base
        for options in self.choices:
            values = [sum(n for (_, m), n in delta.items() if m == mid) for delta in options]
            low, high = low + min(values), high + max(values)
        return low, high


def unchanged(pre: Snapshot) -> list[Scenario]:
    return [Scenario(frozenset(pre.mailboxes), pre.counts())]


# ---------------------------------------------------------------------------------------------------
# The MCP client, in a thread of its own
# ---------------------------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def mcp_client(config: Config) -> AsyncIterator[EnvelopeClient]:
    app = AppContext.from_config(config)
    try:
        async with Client(build_server(config, app)) as client:
            yield EnvelopeClient(client)
    finally:
        await anyio.to_thread.run_sync(app.close)


@dataclass
class Coverage:
    sequences: int = 0
    steps: int = 0
    faults_armed: int = 0
    faults_fired: int = 0
    write_commands: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    seconds: Counter[str] = field(default_factory=Counter)  # where the time went
    #: Runs that Hypothesis stopped because a sequence it had seen drew differently (see run_budget).
    diverged: int = 0

    def line(self, server: str) -> str:
        top = ", ".join(f"{k} {v}" for k, v in sorted(self.outcomes.items()))
        return (
            f"nothing-lost[{server}]: {self.sequences} sequences ({self.diverged} runs stopped on replayed "
            f"draws that diverged), {self.steps} steps, {self.faults_armed} "
            f"faults armed, {self.faults_fired} fired, {self.write_commands} mail-changing commands on the "
            f"wire; {top}; seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in self.seconds.most_common())
        )


# ---------------------------------------------------------------------------------------------------
# The state machine
# ---------------------------------------------------------------------------------------------------


class NothingLost(RuleBasedStateMachine):
    server: ClassVar[MatrixServer]
    portal: ClassVar[BlockingPortal]
    proxy: ClassVar[StepFaults]
    coverage: ClassVar[Coverage]
    #: Confirmed mailbox renames and deletes per sequence (None: any number), in every n-th sequence only
    #: (others: none); Courier takes 2 s for each.
    mailbox_changes: ClassVar[tuple[int | None, int]] = (None, 1)

    def __init__(self) -> None:
        super().__init__()
        with self.timed("setup"):
            self.setup()

    def setup(self) -> None:
        server = self.server
        self.fallback = isinstance(server, Courier)  # no MOVE: COPY + STORE + UID EXPUNGE
        self.user = server.new_user()
        self.inbox, self.archive = "INBOX", server.mailbox_name("Archive")
        self.trash = server.mailbox_name("Trash")
        token = self.user.replace("-", "")
        messages = [
            plain_message(f"message {i}", f"body {i} of {token}\r\n", message_id=f"<m{i}.{token}@lost.test>")
            for i in range(6)
        ]
        server.seed(self.user, self.inbox, messages[:4], flags=["", "\\Seen", "", "\\Flagged"])
        server.seed(self.user, self.archive, messages[4:], flags=["$Work", ""])
        server.seed(self.user, self.trash, [])
        self.observer = Observer(server, self.user)
        self.pre = self.observer.snapshot()
        self.contents = {c.mid: c.digest for c in self.pre.copies.values()}
        assert len(self.contents) == 6 and len(set(self.contents.values())) == 6
        #: The model: per Message-ID, the copies there must be over all mailboxes.
        self.total = self.pre.totals()
        self.tainted: set[str] = set()  # Message-IDs whose move/delete was interrupted (\Deleted allowed)
        self.undo_pool: list[dict[str, Any]] = []
        self.seen_ids: list[str] = []
        self.log: list[str] = []
        changes, every = self.mailbox_changes
        self.changes_left = changes if self.coverage.sequences % every == 0 else 0
        self.deleted_at: dict[str, float] = {}
        self.last_call: Any = None
        self.last_answer: Any = None
        extra = {"trash_mailbox": self.trash} if self.fallback else {}
        settings_ = account_settings(
            server, self.user, host="127.0.0.1", port=self.proxy.port, security="plain", ca_file=None, **extra
        )
        config = make_config(
            {"default": settings_},
            write_enabled=True,
            allow_permanent_delete=True,
            confirm_without_elicitation=True,
        )
        self.proxy.disarm()
        self._client = self.portal.wrap_async_context_manager(mcp_client(config))
        self.mcp = self._client.__enter__()
        self.coverage.sequences += 1

    def teardown(self) -> None:
        self.proxy.disarm()
        self._client.__exit__(None, None, None)
        self.observer.close()

    # ------------------------------------------------------------------ helpers

    def fail(self, message: str) -> None:
        before = sorted(
            (c.mailbox, c.uidvalidity, c.uid, c.mid, sorted(c.flags)) for c in self.pre.copies.values()
        )
        raise AssertionError(
            f"{message}\nsteps so far:\n  "
            + "\n  ".join(self.log)
            + f"\nlast call: {self.last_call}\nits answer: {self.last_answer}\nbefore it: {before}"
        )

    def check(self, condition: bool, message: str) -> None:
        if not condition:
            self.fail(message)

    @contextlib.contextmanager
    def timed(self, what: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.coverage.seconds[what] += time.perf_counter() - started

    def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        with self.timed(f"{tool}:{args.get('action') or args.get('operation')}"):
            envelope: dict[str, Any] = self.portal.call(self.mcp.call, tool, args)
            envelope = self.finished(envelope)
        self.last_call, self.last_answer = (tool, args), envelope["data"] or envelope["error"]
        if not envelope["success"]:
            self.check(envelope["error"]["code"] != "internal", f"{tool} ended as internal: {envelope}")
        return envelope

    def finished(self, envelope: dict[str, Any]) -> dict[str, Any]:
        """A write that went on in the background (past the inline time, e.g. reconnecting after a fault
        on a loaded machine) polled to its end, answered as the call would have answered inline: its
        result as the data, or its error. Regression: one full run judged such an answer as if it listed
        every message, and failed ("neither in messages nor in issues")."""
        data = envelope["data"] if envelope["success"] else None
        # imap_update_message_flags names the reference "background", imap_apply_to_messages "operation".
        running = next(
            (ref for key in ("background", "operation") if isinstance(ref := (data or {}).get(key), dict)),
            None,
        )
        if running is None:
            return envelope
        self.coverage.outcomes["background"] += 1
        arguments = {"operation_id": running["operation_id"]}

        def finished() -> dict[str, Any] | None:
            polled = self.portal.call(self.mcp.call, "imap_get_operation", arguments)
            self.check(polled["success"], f"imap_get_operation failed: {polled}")
            detail: dict[str, Any] = polled["data"]
            return detail if detail["operation"]["state"] in FINISHED_STATES else None

        detail = eventually(finished, within=60, interval=0.1, what="a background write finished")
        if detail["error"] is not None:
            return {**envelope, "success": False, "data": None, "error": detail["error"]}
        return {**envelope, "data": detail["result"]}

    def protected(self) -> set[str]:
        """What imap_manage_mailbox never renames or deletes."""
        special = {"\\trash", "\\drafts", "\\sent", "\\junk", "\\archive", "\\all", "\\flagged"}
        names = {name for name, (_, attrs) in self.pre.mailboxes.items() if attrs & special}
        return names | {"INBOX", self.trash}

    def search(self, mailbox: str) -> list[str]:
        """The message ids imap_search_messages lists; they must be exactly the UIDs the test sees."""
        with self.timed("imap_search_messages"):
            data = self.portal.call(
                self.mcp.ok, "imap_search_messages", {"mailbox": mailbox, "limit": 50, "snippet_chars": 0}
            )
        ids = [m["message_id"] for m in data["messages"]]
        seen = sorted(loc_of(i)[1:] for i in ids)
        truth = sorted((c.uidvalidity, c.uid) for c in self.pre.in_mailbox(mailbox))
        self.check(seen == truth, f"search of {mailbox!r} lists {seen}, the mailbox holds {truth}")
        self.seen_ids.extend(i for i in ids if i not in self.seen_ids)
        return ids

    def pick(self, data: st.DataObject) -> list[str]:
        """Messages from one or two mailboxes (searched), sometimes plus an id that no longer exists."""
        boxes = sorted({c.mailbox for c in self.pre.copies.values()})
        count = data.draw(st.sampled_from([1, 1, 1, 2]), label="mailboxes") if len(boxes) > 1 else 1
        chosen = data.draw(st.lists(st.sampled_from(boxes), min_size=count, max_size=count, unique=True))
        ids: list[str] = []
        for mailbox in chosen:
            found = self.search(mailbox)
            indices = data.draw(
                st.lists(st.integers(0, len(found) - 1), min_size=1, max_size=3, unique=True), label="picked"
            )
            ids += [found[i] for i in indices]
        stale = [i for i in self.seen_ids if self.pre.live(i) is None]
        if stale and data.draw(st.integers(0, 5), label="stale") == 0:
            ids.append(data.draw(st.sampled_from(stale), label="stale id"))
        return ids

    def arm(self, data: st.DataObject) -> str:
        """Arm a fault for the next call (see the module docstring); the proxy log restarts here."""
        fault = data.draw(st.sampled_from(FAULTS), label="fault")
        self._fired_before = self.proxy.fired
        if fault == "idle_reset":
            if self.proxy.reset_connections():
                self.proxy.fired += 1
        elif fault == "next_reply":
            self.proxy.reset_after(data.draw(st.integers(0, 300), label="after bytes"))
        elif fault.startswith("write_"):
            self.proxy.cut_write(int(fault[-1]))
        if fault != "none":
            self.coverage.faults_armed += 1
        return fault

    def disarm(self) -> bool:
        """Whether the armed fault fired."""
        self.proxy.disarm()
        fired = self.proxy.fired > self._fired_before
        self.coverage.faults_fired += fired
        return fired

    def wire(self, *, writes_allowed: bool) -> None:
        """No mail-changing command sent twice (never replayed); none at all unless allowed."""
        sent = write_commands(self.proxy.sent())
        self.coverage.write_commands += len(sent)
        again = [c for c, n in Counter(sent).items() if n > 1]
        self.check(not again, f"a write was sent again in one call: {again}")
        if not writes_allowed:
            self.check(not sent, f"mail-changing commands sent where none may be: {sent}")
        self.proxy.clear_log()

    def settle(self, scenarios: list[Scenario], label: str) -> Snapshot:
        """Read the truth, check it against the scenarios, and make it the state for the next step."""
        with self.timed("check"):
            post = self.observer.snapshot()
        for copy in post.copies.values():
            self.check(
                self.contents.get(copy.mid) == copy.digest,
                f"{label}: a message that is not one of the seeded ones, or whose body changed: {copy}",
            )
            if "\\deleted" in copy.flags:
                self.check(copy.mid in self.tainted, f"{label}: {copy} is marked \\Deleted")
        totals = post.totals()
        for mid in self.contents:
            low = min(s.total_bounds(mid)[0] for s in scenarios)
            high = max(s.total_bounds(mid)[1] for s in scenarios)
            now = totals[mid]
            self.check(now >= low, f"{label}: LOST {mid}: {now} copies, the model needs at least {low}")
            self.check(
                now <= high, f"{label}: DUPLICATED {mid}: {now} copies, the model allows at most {high}"
            )
        names = frozenset(post.mailboxes)
        counts = post.counts()
        if not any(s.matches(names, counts) for s in scenarios):
            expected = [(sorted(s.mailboxes), sorted((+s.base).items()), s.choices) for s in scenarios]
            self.fail(
                f"{label}: the mailboxes are not as the results say.\n  now: {sorted(names)} "
                f"{sorted(counts.items())}\n  expected one of: {expected}"
            )
        self.total = totals
        self.pre = post
        self.coverage.steps += 1
        return post

    def note(self, label: str, envelope: dict[str, Any], fault: str, fired: bool) -> str:
        """Log the step; return the outcome word for the coverage counts."""
        if envelope["success"]:
            data = envelope["data"]
            outcome = data.get("status", "ok")
            issues = Counter(i["code"] for i in data.get("issues", []))
            detail = f"{outcome} {dict(issues)}" if issues else outcome
        else:
            outcome = detail = envelope["error"]["code"]
        self.log.append(f"{label} [fault {fault}{' fired' if fired else ''}] -> {detail}")
        self.coverage.outcomes[f"{label.split('(')[0]}:{outcome}"] += 1
        return str(outcome)

    # ------------------------------------------------------------------ moving, copying, deleting

    def apply(self, data: st.DataObject, args: dict[str, Any], label: str) -> None:
        """Run imap_apply_to_messages (after the confirmation round trip for a permanent delete) and check
        the mailboxes against its per-message results."""
        pre = self.pre
        action, permanent, dry = args["action"], args.get("permanent", False), args.get("dry_run", False)
        groups = {loc_of(i)[0] for i in args["message_ids"]}
        stale = any(pre.live(i) is None for i in args["message_ids"])
        # Codes a failure may have; "!" marks a call that must fail.
        refusals = {"not_found", "conflict"} if stale else set()
        if action in ("move", "copy") and args["destination_mailbox"] not in pre.mailboxes:
            refusals |= {"not_found", "!"}  # an undo back to a mailbox renamed or deleted since
        if action == "move" and args["destination_mailbox"] in groups:
            refusals |= {"invalid_input", "!"}
        if action == "delete" and not permanent and self.trash in groups:
            refusals |= {"invalid_input", "!"}
        self.proxy.clear_log()
        if permanent and not dry:
            asked = self.call(APPLY, args)
            self.wire(writes_allowed=False)
            if not asked["success"] and asked["error"]["code"] == "confirmation_required":
                self.settle(unchanged(pre), f"{label} before confirmation")
                args = asked["data"]["next_action"]["arguments"]
                self.check("confirm_token" in args, f"no token in {asked['data']['next_action']}")
            else:
                self.judge_apply(args, asked, refusals, fired=False, label=label, fault="none")
                return
        fault = self.arm(data)
        envelope = self.call(APPLY, args)
        fired = self.disarm()
        self.judge_apply(args, envelope, refusals, fired=fired, label=label, fault=fault)

    def judge_apply(
        self,
        args: dict[str, Any],
        envelope: dict[str, Any],
        refusals: set[str],
        *,
        fired: bool,
        label: str,
        fault: str,
    ) -> None:
        pre = self.pre
        self.note(label, envelope, fault, fired)
        if not envelope["success"]:
            code = envelope["error"]["code"]
            allowed = refusals | ({"unavailable"} if fired else set())
            self.check(
                code in allowed, f"{label}: failed with {code} (allowed: {sorted(allowed)}): {envelope}"
            )
            self.wire(writes_allowed=False)
            self.settle(unchanged(pre), label)
            self.check(self.pre.flags() == pre.flags(), f"{label}: a failed call changed flags")
            return
        self.check("!" not in refusals, f"{label}: expected a refusal: {envelope}")
        data = envelope["data"]
        dry = data["dry_run"]
        self.wire(writes_allowed=not dry)
        permanent = data["permanent"]
        destination = data["destination_mailbox"]
        base = pre.counts()
        choices: list[list[Counts]] = []
        resolved: list[tuple[str, str, str]] = []  # new id, Message-ID, source id
        for result in data["results"]:
            source = pre.live(result["message_id"])
            outcome = result["outcome"]
            self.check(
                (outcome == "not_found") == (source is None),
                f"{label}: {result} but the message {'exists' if source else 'does not exist'}",
            )
            if source is None:
                continue
            if dry:
                self.check(outcome.startswith("would_"), f"{label}: dry run, yet {result}")
                continue
            here, there = (source.mailbox, source.mid), (destination, source.mid)
            if outcome in {"moved", "moved_to_trash"}:
                base[here] -= 1
                base[there] += 1
            elif outcome == "copied":
                base[there] += 1
            elif outcome == "deleted":
                base[here] -= 1
            elif outcome == "outcome_unknown":
                self.check(fired, f"{label}: outcome_unknown with no fault fired")
                if permanent:
                    choices.append([Counter(), Counter({here: -1})])
                elif data["action"] == "copy":
                    choices.append([Counter(), Counter({there: 1})])
                else:
                    self.tainted.add(source.mid)
                    options = [Counter(), Counter({here: -1, there: 1})]
                    if self.fallback:
                        options.append(Counter({there: 1}))
                    choices.append(options)
                if permanent:
                    self.tainted.add(source.mid)
            else:
                self.check(outcome == "not_attempted" and fired, f"{label}: unexpected {result}")
            if outcome in {"moved", "moved_to_trash", "copied"}:
                self.check(result["new_message_id"] is not None, f"{label}: no new_message_id in {result}")
                resolved.append((result["new_message_id"], source.mid, result["message_id"]))
            else:
                self.check(result["new_message_id"] is None, f"{label}: a new_message_id for {result}")
        issues = {i["code"] for i in data["issues"]}
        self.check(fired or not issues & _FAULT_CODES, f"{label}: {issues} with no fault fired")
        if "outcome_unknown" in issues:
            self.check(data["next_action"]["tool"] != APPLY, f"{label}: next_action repeats the call")
        post = self.settle([Scenario(frozenset(pre.mailboxes), base, choices)], label)
        for new_id, mid, _ in resolved:
            copy = post.live(new_id)
            self.check(copy is not None and copy.mid == mid, f"{label}: {new_id} is {copy}, not {mid}")
            read = self.portal.call(
                self.mcp.ok, "imap_get_message", {"message_id": new_id, "body_max_chars": 100}
            )
            headers = {k.lower(): v for k, v in read["message"]["headers"].items()}
            self.check(headers.get("message-id") == mid, f"{label}: {new_id} reads as {headers}")
        if data["action"] != "copy" and not permanent and not dry:
            undone = sorted(i for u in data["undo"] for i in u["arguments"]["message_ids"])
            self.check(undone == sorted(n for n, _, _ in resolved), f"{label}: undo {data['undo']}")
            for undo in data["undo"]:
                self.undo_pool.append(undo["arguments"])
        self.seen_ids.extend(n for n, _, _ in resolved)

    def draw_destination(self, data: st.DataObject, ids: list[str]) -> str:
        """Mostly a mailbox other than the messages' own (a move there is refused)."""
        sources = {loc_of(i)[0] for i in ids}
        others = sorted(set(self.pre.mailboxes) - sources)
        if others and data.draw(st.integers(0, 5), label="elsewhere"):
            return data.draw(st.sampled_from(others), label="destination")
        return data.draw(st.sampled_from(sorted(self.pre.mailboxes)), label="destination")

    def changeable(self, *, empty: bool = False) -> list[str]:
        """Mailboxes imap_manage_mailbox may rename or delete (not protected; ``empty``: holding nothing)."""
        boxes = sorted(self.pre.mailboxes)
        return [b for b in boxes if b not in self.protected() and not (empty and self.pre.in_mailbox(b))]

    def draw_mailbox(self, data: st.DataObject, *, empty: bool = False) -> str:
        """Mostly a mailbox imap_manage_mailbox may change, sometimes one it must refuse to."""
        boxes = sorted(self.pre.mailboxes)
        open_ = self.changeable(empty=empty)
        if open_ and data.draw(st.integers(0, 4), label="changeable"):
            return data.draw(st.sampled_from(open_), label="mailbox")
        return data.draw(st.sampled_from(boxes), label="mailbox")

    def draw_dry(self, data: st.DataObject) -> dict[str, Any]:
        return {"dry_run": True} if data.draw(st.integers(0, 9), label="dry") == 0 else {}

    @precondition(lambda self: self.pre.copies)
    @rule(data=st.data())
    def move(self, data: st.DataObject) -> None:
        ids = self.pick(data)
        destination = self.draw_destination(data, ids)
        args = {
            "message_ids": ids,
            "action": "move",
            "destination_mailbox": destination,
            **self.draw_dry(data),
        }
        self.apply(data, args, f"move({len(ids)} -> {destination})")

    @precondition(lambda self: self.pre.copies)
    @rule(data=st.data())
    def copy(self, data: st.DataObject) -> None:
        ids = self.pick(data)
        destination = self.draw_destination(data, ids)
        args = {
            "message_ids": ids,
            "action": "copy",
            "destination_mailbox": destination,
            **self.draw_dry(data),
        }
        self.apply(data, args, f"copy({len(ids)} -> {destination})")

    @precondition(lambda self: self.pre.copies)
    @rule(data=st.data())
    def delete_to_trash(self, data: st.DataObject) -> None:
        ids = self.pick(data)
        self.apply(
            data, {"message_ids": ids, "action": "delete", **self.draw_dry(data)}, f"trash({len(ids)})"
        )

    @precondition(lambda self: self.pre.copies)
    @rule(data=st.data())
    def delete_for_good(self, data: st.DataObject) -> None:
        ids = self.pick(data)
        args = {"message_ids": ids, "action": "delete", "permanent": True, **self.draw_dry(data)}
        self.apply(data, args, f"purge({len(ids)})")

    @precondition(lambda self: self.undo_pool)
    @rule(data=st.data())
    def undo(self, data: st.DataObject) -> None:
        args = self.undo_pool.pop(data.draw(st.integers(0, len(self.undo_pool) - 1), label="undo"))
        self.apply(data, dict(args), f"undo({len(args['message_ids'])} -> {args['destination_mailbox']})")

    # ------------------------------------------------------------------ flags

    @precondition(lambda self: self.pre.copies)
    @rule(data=st.data())
    def flags(self, data: st.DataObject) -> None:
        pre = self.pre
        ids = self.pick(data)
        operation = data.draw(st.sampled_from(["add", "remove", "replace"]), label="operation")
        flags = data.draw(st.lists(st.sampled_from(FLAG_CHOICES), min_size=1, max_size=3, unique=True))
        args = {"message_ids": ids, "operation": operation, "flags": flags, **self.draw_dry(data)}
        label = f"flags({operation} {' '.join(flags)} on {len(ids)})"
        self.proxy.clear_log()
        fault = self.arm(data)
        envelope = self.call(FLAGS, args)
        fired = self.disarm()
        self.note(label, envelope, fault, fired)
        stale = any(pre.live(i) is None for i in ids)
        if not envelope["success"]:
            code = envelope["error"]["code"]
            allowed = ({"not_found", "conflict"} if stale else set()) | ({"unavailable"} if fired else set())
            self.check(code in allowed, f"{label}: failed with {code}: {envelope}")
            self.wire(writes_allowed=False)
            self.settle(unchanged(pre), label)
            self.check(self.pre.flags() == pre.flags(), f"{label}: a failed call changed flags")
            return
        data_ = envelope["data"]
        self.wire(writes_allowed=not data_["dry_run"])
        issues = {i["code"]: i for i in data_["issues"]}
        self.check(fired or not issues.keys() & _FAULT_CODES, f"{label}: {issues} with no fault fired")
        post = self.settle(unchanged(pre), label)
        wanted = {f.lower() for f in flags}
        reported = {loc_of(m["message_id"]): m for m in data_["messages"]}
        unknown = {loc_of(i["message_id"]) for i in data_["issues"] if i["code"] == "outcome_unknown"}
        for loc, before in pre.flags().items():
            after = post.copies[loc].flags
            target = {
                "add": before | wanted,
                "remove": before - wanted,
                "replace": wanted | (before & {"\\deleted"}),
            }[operation]
            if loc in reported:
                shown = {f.lower() for f in reported[loc]["flags"]}
                self.check(shown == target, f"{label}: {loc} reported {shown}, expected {target}")
                if not data_["dry_run"]:
                    self.check(after == target, f"{label}: {loc} has {after}, reported {shown}")
                    continue
            if loc in unknown:
                self.check(
                    after in (before, target), f"{label}: {loc} has {after}: neither {before} nor {target}"
                )
                continue
            self.check(after == before, f"{label}: {loc} changed from {before} to {after} (not reported)")
        for given in ids:
            live = pre.live(given) is not None
            handled = loc_of(given) in reported or given in {i["message_id"] for i in data_["issues"]}
            self.check(handled, f"{label}: {given} neither in messages nor in issues")
            if not live:
                self.check(loc_of(given) not in reported, f"{label}: a result for the stale {given}")

    # ------------------------------------------------------------------ mailboxes

    def manage(self, data: st.DataObject, args: dict[str, Any], label: str, refused: bool) -> None:
        """Run imap_manage_mailbox (with the confirmation round trip for rename and delete)."""
        pre = self.pre
        self.proxy.clear_log()
        if args["action"] != "create":
            asked = self.call(MANAGE, args)
            self.wire(writes_allowed=False)
            if refused:
                self.note(label, asked, "none", False)
                self.check(
                    not asked["success"] and asked["error"]["code"] == "invalid_input",
                    f"{label}: expected invalid_input: {asked}",
                )
                self.settle(unchanged(pre), label)
                return
            self.check(
                not asked["success"] and asked["error"]["code"] == "confirmation_required",
                f"{label}: expected confirmation_required: {asked}",
            )
            self.settle(unchanged(pre), f"{label} before confirmation")
            args = asked["data"]["next_action"]["arguments"]
            if self.changes_left is not None:
                self.changes_left -= 1
        fault = self.arm(data)
        envelope = self.call(MANAGE, args)
        fired = self.disarm()
        self.note(label, envelope, fault, fired)
        if not envelope["success"]:
            code = envelope["error"]["code"]
            allowed = ({"invalid_input"} if refused else set()) | ({"unavailable"} if fired else set())
            # Cyrus (delete_mode: delayed) keeps a deleted mailbox under a name with a timestamp in seconds:
            # a second DELETE of the same name within that second is refused ("Mailbox already exists").
            tombstone = (
                isinstance(self.server, Cyrus)
                and args["action"] == "delete"
                and time.monotonic() - self.deleted_at.get(args["mailbox"], -10.0) < 2.0
                and "already exists" in envelope["error"]["message"]
            )
            self.check(code in allowed or tombstone, f"{label}: failed with {code}: {envelope}")
            self.wire(writes_allowed=tombstone)
            self.settle(unchanged(pre), label)
            return
        self.check(not refused, f"{label}: expected a refusal: {envelope}")
        self.wire(writes_allowed=True)
        result = envelope["data"]
        mailbox = args["mailbox"]
        self.check(result["mailbox"] == mailbox, f"{label}: acted on {result['mailbox']!r}")
        names = frozenset(pre.mailboxes)
        counts = pre.counts()
        if args["action"] == "create":
            done = Scenario(names | {mailbox}, counts)
        elif args["action"] == "delete":
            done = Scenario(names - {mailbox}, counts)
            self.deleted_at[mailbox] = time.monotonic()
        else:
            target = args["destination_mailbox"]
            moved = Counter({(target if box == mailbox else box, mid): n for (box, mid), n in counts.items()})
            done = Scenario((names - {mailbox}) | {target}, moved)
        if result["status"] == "partial":
            self.check(fired, f"{label}: partial with no fault fired: {result}")
            # A delete renames the mailbox aside first: cut after that, the answer names where it is now.
            now = result["result_mailbox"]
            aside = [Scenario((names - {mailbox}) | {now}, counts)] if now not in (None, mailbox) else []
            self.settle([*unchanged(pre), done, *aside], label)
        else:
            self.check(result["changed"] and not result["issues"], f"{label}: {result}")
            self.settle([done], label)

    @rule(data=st.data())
    def create_mailbox(self, data: st.DataObject) -> None:
        name = self.server.mailbox_name(data.draw(st.sampled_from(POOL), label="name"))
        exists = name in self.pre.mailboxes
        self.proxy.clear_log()
        fault = self.arm(data)
        envelope = self.call(MANAGE, {"action": "create", "mailbox": name})
        fired = self.disarm()
        label = f"create({name})"
        self.note(label, envelope, fault, fired)
        pre = self.pre
        if not envelope["success"]:
            code = envelope["error"]["code"]
            allowed = ({"invalid_input"} if exists else set()) | ({"unavailable"} if fired else set())
            self.check(code in allowed, f"{label}: failed with {code}: {envelope}")
            self.wire(writes_allowed=False)
            self.settle(unchanged(pre), label)
            return
        self.check(not exists, f"{label}: created a mailbox that exists: {envelope}")
        self.wire(writes_allowed=True)
        done = Scenario(frozenset(pre.mailboxes) | {name}, pre.counts())
        if envelope["data"]["status"] == "partial":
            self.check(fired, f"{label}: partial with no fault fired")
            self.settle([*unchanged(pre), done], label)
        else:
            self.settle([done], label)

    @precondition(lambda self: self.changes_left != 0 and self.changeable())
    @rule(data=st.data())
    def rename_mailbox(self, data: st.DataObject) -> None:
        source = self.draw_mailbox(data)
        target = self.server.mailbox_name(data.draw(st.sampled_from(POOL), label="new name"))
        refused = source in self.protected() or target in self.pre.mailboxes
        args = {"action": "rename", "mailbox": source, "destination_mailbox": target}
        self.manage(data, args, f"rename({source} -> {target})", refused)

    @precondition(lambda self: self.changes_left != 0 and self.changeable(empty=True))
    @rule(data=st.data())
    def delete_mailbox(self, data: st.DataObject) -> None:
        source = self.draw_mailbox(data, empty=True)
        refused = source in self.protected() or bool(self.pre.in_mailbox(source))
        self.manage(data, {"action": "delete", "mailbox": source}, f"delete_mailbox({source})", refused)


# ---------------------------------------------------------------------------------------------------
# The test, per server
# ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def portal() -> Iterator[BlockingPortal]:
    with start_blocking_portal("asyncio") as running:
        yield running


@pytest.mark.slow
@pytest.mark.parametrize("server_name", list(BUDGET))
def test_random_writes_with_resets_lose_and_duplicate_nothing(
    server_name: str, request: pytest.FixtureRequest, portal: BlockingPortal
) -> None:
    server: MatrixServer = request.getfixturevalue(server_name)
    coverage = Coverage()
    with StepFaults(server.host, server.plain_port) as proxy:
        machine = type(
            f"NothingLost_{server_name}",
            (NothingLost,),
            {
                "server": server,
                "portal": portal,
                "proxy": proxy,
                "coverage": coverage,
                "mailbox_changes": (1, 3) if isinstance(server, Courier) else (None, 1),
            },
        )
        try:
            run_budget(machine, coverage, *BUDGET[server_name])
        finally:
            print(coverage.line(server_name))
    assert coverage.faults_fired > 0 and coverage.outcomes


def run_budget(machine: type[RuleBasedStateMachine], coverage: Coverage, sequences: int, steps: int) -> None:
    """Run ``sequences`` sequences of the machine, from a fixed seed and no example database: every run (CI
    included) tries the same sequences, as long as the servers answer alike.

    A fault makes the outcome of a write depend on timing (whether the server committed it before the
    reset), and the draws of the next steps depend on the mailboxes that result. When Hypothesis meets a
    sequence it has seen, drawing differently this time, it stops with FlakyStrategyDefinition (once in
    about eight full runs, on Courier, 2026-11-23): that is no lost or duplicated message (every step
    checked so far held), so the rest of the budget runs from the next seed, at most twice more."""
    for attempt in range(3):
        left = max(1, sequences - coverage.sequences)
        budget = settings(MACHINE_SETTINGS, max_examples=left, stateful_step_count=steps)
        try:
            seed(SEED + attempt)(get_state_machine_test(machine, settings=budget))()
            return
        except FlakyStrategyDefinition:
            coverage.diverged += 1
            if coverage.sequences >= sequences:
                return  # the budget ran (Hypothesis starts more sequences than it counts as examples)
            if attempt == 2:
                raise


def test_run_budget_runs_the_rest_from_the_next_seed_when_replayed_draws_diverge() -> None:
    """Regression (a full run, 2026-11-23): FlakyStrategyDefinition ended the Courier machine after 4 of its
    10 sequences. Here a machine whose draws depend, for a while, on a counter outside them."""
    coverage, calls = Coverage(), itertools.count()

    class Diverging(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            coverage.sequences += 1

        @rule(data=st.data())
        def step(self, data: st.DataObject) -> None:
            if next(calls) in range(3, 30):  # then never again, as a fault's timing
                data.draw(st.integers(0, 10))

    run_budget(Diverging, coverage, sequences=30, steps=5)
    assert coverage.diverged >= 1 and coverage.sequences >= 30


# ---------------------------------------------------------------------------------------------------
# Regressions the machine found (fixed in confirmation.py)
# ---------------------------------------------------------------------------------------------------


def test_the_same_request_confirmed_twice_in_one_second_gets_a_new_token(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A mailbox deleted, created again and deleted again within one second: the second confirmation
    must work. Tokens were ``expires.hmac(request, expires)``, so the second one equalled the first, already
    used one, and the confirmed call was refused ("this token was already used")."""
    gate = ConfirmationGate()
    monkeypatch.setattr(tokens_module.time, "time", lambda: 1_000_000.0)
    request = {"account_id": "default", "action": "delete", "mailbox": "Projects"}
    what = "delete the empty mailbox 'Projects'"
    tokens = []
    for _ in range(2):
        with pytest.raises(ToolFailure) as asked:
            gate.require(MANAGE, request, what, user="")
        token = asked.value.details["confirm_token"]
        gate.require(MANAGE, {**request, "confirm_token": token}, what, user="")
        tokens.append(token)
    assert tokens[0] != tokens[1]


@pytest.mark.parametrize("token", ["1.\u00e9", "\u00b2\u00b3.abc.def", "9" * 20 + ".\u0660.x"])
def test_a_non_ascii_confirm_token_is_invalid_input_not_internal(
    token: str, dovecot: Dovecot, portal: BlockingPortal
) -> None:
    """int() takes any Unicode digit and hmac.compare_digest raises TypeError on non-ASCII text: such a
    confirm_token ended as ``internal``."""
    user = dovecot.new_user()
    dovecot.seed(user, "Old", [])
    config = make_config({"default": account_settings(dovecot, user)}, write_enabled=True)
    with portal.wrap_async_context_manager(mcp_client(config)) as mcp:
        args = {"action": "delete", "mailbox": "Old", "confirm_token": token}
        envelope = portal.call(mcp.fail, MANAGE, args, "invalid_input")
        assert envelope["error"]["details"]["parameter"] == "confirm_token"
    with dovecot.connect(user) as client:
        assert client.folder_exists("Old")


@pytest.mark.parametrize("permanent", [False, True], ids=["to_trash", "permanent"])
def test_a_stale_id_listed_last_does_not_redirect_the_change_to_its_mailbox(
    permanent: bool, dovecot: Dovecot, portal: BlockingPortal
) -> None:
    """Ids from Archive and (last) from INBOX, the INBOX one gone meanwhile. The change was sent while
    INBOX, the last mailbox checked, was still selected: ``UID MOVE``/``UID EXPUNGE`` of the Archive UID
    hit the INBOX message with that UID, a message nobody named (for good, with permanent)."""
    user = dovecot.new_user()
    inbox = [
        plain_message(f"inbox {i}", f"inbox body {i}\r\n", message_id=f"<i{i}@stale.test>") for i in range(2)
    ]
    dovecot.seed(user, "INBOX", inbox)
    dovecot.seed(user, "Archive", [plain_message("kept", "archived\r\n", message_id="<a0@stale.test>")])
    dovecot.seed(user, "Trash", [])
    observer = Observer(dovecot, user)
    try:
        before = observer.snapshot()
        (archived,) = before.in_mailbox("Archive")
        (gone,) = [c for c in before.in_mailbox("INBOX") if c.mid == "<i1@stale.test>"]
        with dovecot.connect(user) as other:  # another client removes the INBOX message (UID 2)
            other.select_folder("INBOX")
            other.add_flags([gone.uid], [b"\\Deleted"])
            other.uid_expunge([gone.uid])
        ids = [f"imap:default:{c.mailbox}:{c.uidvalidity}:{c.uid}" for c in (archived, gone)]
        config = make_config(
            {"default": account_settings(dovecot, user)},
            write_enabled=True,
            allow_permanent_delete=True,
            confirm_without_elicitation=True,
        )
        args: dict[str, Any] = {"message_ids": ids, "action": "delete", "permanent": permanent}
        with portal.wrap_async_context_manager(mcp_client(config)) as mcp:
            if permanent:
                asked = portal.call(mcp.fail, APPLY, args, "confirmation_required")
                args = asked["data"]["next_action"]["arguments"]
            data = portal.call(mcp.ok, APPLY, args)
        assert [r["outcome"] for r in data["results"]] == [
            "deleted" if permanent else "moved_to_trash",
            "not_found",
        ]
        after = observer.snapshot()
        assert after.counts()[("INBOX", "<i0@stale.test>")] == 1, "a message nobody named was changed"
        assert after.counts()[("Archive", "<a0@stale.test>")] == 0
        assert after.counts()[("Trash", "<a0@stale.test>")] == (0 if permanent else 1)
    finally:
        observer.close()


def test_regression_a_delete_of_a_name_cyrus_deleted_this_second_is_done_through_a_name_aside(
    cyrus: Cyrus, portal: BlockingPortal
) -> None:
    """Cyrus (delete_mode: delayed) refuses a DELETE of a name deleted within the same second ("Mailbox
    already exists"). The tool deletes through a fresh name aside (issue 47 item 9), so that refusal no
    longer arises: the empty mailbox made again under the name is deleted, and no error asks to retry."""
    user = cyrus.new_user()
    config = make_config({"default": account_settings(cyrus, user)}, write_enabled=True)
    tries = 10
    with (
        cyrus.connect(user, tls=False, starttls=False) as other,
        portal.wrap_async_context_manager(mcp_client(config)) as mcp,
    ):
        # The other's delete, its make again and the tool's delete must fall in one wall-clock second,
        # or the refusal this is about cannot arise and the test passes without testing it. A try that
        # crossed into the next second (a loaded machine) is made again, under a fresh name.
        for attempt in range(tries):
            name = cyrus.mailbox_name(f"Again{attempt}")
            other.create_folder(name)
            request = {"action": "delete", "mailbox": name}
            asked = portal.call(mcp.fail, MANAGE, request, "confirmation_required")
            while time.time() % 1 > 0.2:  # start of a second: the next steps take a few ms
                time.sleep(0.01)
            second = int(time.time())
            other.delete_folder(name)
            other.create_folder(name)
            envelope = portal.call(mcp.call, MANAGE, asked["data"]["next_action"]["arguments"])
            in_one_second = int(time.time()) == second
            assert envelope["success"] and envelope["data"]["changed"], envelope
            assert not other.folder_exists(name)
            assert [box for box in other.list_folders() if "-deleting-" in box[2]] == []
            if in_one_second:
                break
        else:
            pytest.fail(
                f"the delete, the make again and the tool's delete never fell in one second ({tries} tries)"
            )
