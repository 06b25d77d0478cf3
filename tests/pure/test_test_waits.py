"""Every test-side wait goes through tests/support/patience.py: no deadline loop, no bare timeout.

A test module that counts down a deadline of its own (``deadline = time.monotonic() + 5``), or gives a
client, socket, thread or child a timeout as a bare number (``timeout=10``, ``settimeout(5)``,
``thread.join(10)``), waits as long on a loaded machine as on an idle one: that is how the suite's timing
flakes came. Such a wait is ``eventually(condition, within=...)`` or ``patient(seconds)``. A helper of
the tests takes its idle-machine seconds as ``within`` and scales them itself; a parameter named
``timeout`` holds seconds already scaled, so it has no bare number for a default.

An assert that bounds a duration from above (``time.monotonic() - started < 5``, or ``took <= LIMIT_S``
of a name that holds a time from the clock) fails on a loaded machine too: which limit ended something
is asserted from the error's own field, and how fast it ends belongs in scripts/bench.

``ALLOWED`` lists the few bare numbers that are the product's own argument under test, each with why.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"

#: (module, the line as written, stripped) -> why the bare number there is not a test-side wait.
ALLOWED: dict[tuple[str, str], str] = {
    (
        "tests/integration/asking/test_approval_browser.py",
        "decision = approve(message(), user, timeout=120, clock=clock)",
    ): "the approval page's lifetime under test: the test moves the page's own clock past it",
    (
        "tests/integration/writes/test_write_nothing_lost.py",
        "while time.time() % 1 > 0.2:  # start of a second: the next steps take a few ms",
    ): "waits for the start of a wall-clock second (the server counts UIDVALIDITY in seconds); "
    "it ends within a second by itself",
    (
        "tests/integration/team/test_team_instances.py",
        "outlived = time.time() + 1.5  # the 1 s lifetime under test, on the server's clock, passed",
    ): "the request state's lifetime under test (request_state_ttl_s = 1) on a server process's clock, "
    "which the test cannot move: the answer is given once it passed; nothing fails on the wait",
    (
        "tests/pure/test_confirm.py",
        "later = time.time() + 1.1  # tokens count whole seconds: the clock moved on, where the test slept",
    ): "a moment handed to the product's clock (confirmation tokens count whole seconds), not a deadline",
    (
        "tests/support/servers/gmail_server.py",
        "self.mail.changed.wait(0.05)",
    ): "the emulated server's IDLE poll tick: it wakes to look again, nothing fails when it passes",
    (
        "tests/support/servers/imapserver.py",
        "sock.settimeout(0.2)",
    ): "the syslog listener's poll tick: it wakes to "
    "see whether it should stop, nothing fails when it passes",
    **dict.fromkeys(
        [
            (
                "tests/support/clients/oidc_browser.py",
                "response = opener.open(urllib.request.Request(url, data=data), timeout=30)",
            ),
            (
                "tests/support/clients/oidc_browser.py",
                "with urllib.request.urlopen(url, timeout=30) as answer:",
            ),
            (
                "tests/support/clients/oidc_browser.py",
                "urllib.request.build_opener(_Stay()).open(url, timeout=30)",
            ),
        ],
        "runs as the BROWSER command login opens, a script of the standard library alone: it cannot import "
        "the suite's patience (it did, and every browser sign-in failed)",
    ),
    (
        "tests/support/clients/local_attacker.py",
        "with urllib.request.build_opener(_Stay()).open(request, timeout=10) as answer:",
    ): "runs as another OS user, a script of the standard library alone (beside oidc_browser.py); a probe "
    "that times out is one more refusal, nothing fails on it",
    (
        "tests/integration/sign_in/test_sign_in_failures.py",
        "assert abs(issued - (time.time() + offset)) < 60, issued - time.time()  # moved 22 s at most",
    ): "compares the provider's clock with the machine's (an offset), not how long something took",
    # The product's own promise of how soon, on the wall clock until the product takes a clock of the
    # tests' (issue 57 item 2): each is a fault of the product when it fails, never a wait to lengthen.
    (
        "tests/integration/surface/test_stdio.py",
        "assert time.monotonic() - started < 1.5",
    ): "the product's promise "
    "that closing stdin or SIGTERM ends it within a second (the SDK's client would kill it after 2 s)",
    (
        "tests/integration/watching/test_watch.py",
        "assert time.monotonic() - closing < 1.5",
    ): "the product's promise "
    "that closing stdin ends it at once with a mailbox watched (the SDK's client would wait 2 s)",
}

#: Calls whose first positional argument is a timeout in seconds.
_FIRST_IS_TIMEOUT = {"settimeout", "wait", "join", "result", "fail_after", "move_on_after", "timeout"}
_CLOCKS = {"monotonic", "time", "perf_counter"}
#: Calls whose second positional argument is a timeout in seconds (selenium's ``WebDriverWait(driver, 15)``).
_SECOND_IS_TIMEOUT = {"WebDriverWait"}
#: Library calls whose short timeout is a default the call does not show: each must be given one.
#: jeepney's ``open_dbus_connection`` authenticates within 1 s by default; a loaded full run took longer
#: and its socket, left with no time, raised BlockingIOError in ``test_keychain_greeting``. httpx's
#: clients and its module's requests give up after 5 s unless told.
_HIDDEN_TIMEOUTS = {
    "open_dbus_connection": "auth_timeout",
    **{
        f"httpx2.{name}": "timeout"
        for name in ("Client", "AsyncClient", "request", "stream", "get", "post", "put", "delete", "head")
    },
}


@dataclass(frozen=True)
class Finding:
    module: str
    line: int
    text: str
    what: str

    def __str__(self) -> str:
        return f"{self.module}:{self.line}: {self.what}: {self.text}"


def _called_name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _dotted_name(call: ast.Call) -> str:
    """``module.function`` where the call names its module (``httpx2.post``), else the bare name."""
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return f"{func.value.id}.{func.attr}"
    return _called_name(call)


def _is_clock_read(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and not node.args and _called_name(node) in _CLOCKS


def _is_clock_sum(node: ast.AST) -> bool:
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and _is_clock_read(node.left)


def _bare_seconds(node: ast.AST | None) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
        and node.value > 0
    )


def _timeout_keyword(name: str | None) -> bool:
    # ``timeout_s`` is the product's own spelling of a limit it enforces (an argument under test).
    return name is not None and (name == "timeout" or name.endswith("_timeout"))


def _timeout_parameter(name: str) -> bool:
    return _timeout_keyword(name) or name.endswith("timeout_s")


def _defaults(args: ast.arguments) -> list[tuple[ast.arg, ast.expr | None]]:
    positional = [*args.posonlyargs, *args.args]
    padded: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
    return [
        *zip(positional, [*padded, *args.defaults], strict=True),
        *zip(args.kwonlyargs, args.kw_defaults, strict=True),
    ]


def _reads_clock(node: ast.AST, clocked: frozenset[str] = frozenset()) -> bool:
    return any(
        _is_clock_read(part) or (isinstance(part, ast.Name) and part.id in clocked) for part in ast.walk(node)
    )


def _clocked_names(nodes: list[ast.AST]) -> frozenset[str]:
    """Names given a value from the clock, directly or through another such name (``started``, and
    ``took = time.monotonic() - started``), so that ``assert took <= LIMIT`` is seen as what it is
    (``nodes``: every node of the module)."""
    # Each value is walked once, for the clock and the names it reads; the names are then closed over.
    assigned = [
        (node.targets[0].id, list(ast.walk(node.value)))
        for node in nodes
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
    ]
    clocked = frozenset(name for name, parts in assigned if any(map(_is_clock_read, parts)))
    reads = [(name, {part.id for part in parts if isinstance(part, ast.Name)}) for name, parts in assigned]
    while grown := frozenset(name for name, names in reads if names & clocked) - clocked:
        clocked |= grown
    return clocked


def _bounds_a_duration_from_above(test: ast.AST, clocked: frozenset[str]) -> bool:
    """``time.monotonic() - started < 5`` (or ``5 > ...``, or ``took <= 5`` of a name given the clock's
    time): a wall-clock upper bound."""
    for compare in (part for part in ast.walk(test) if isinstance(part, ast.Compare)):
        sides = [compare.left, *compare.comparators]
        for smaller, op, larger in zip(sides, compare.ops, sides[1:], strict=False):
            ahead, behind = _reads_clock(smaller, clocked), _reads_clock(larger, clocked)
            if isinstance(op, ast.Lt | ast.LtE) and ahead and not behind:
                return True
            if isinstance(op, ast.Gt | ast.GtE) and behind and not ahead:
                return True
    return False


#: The kinds of node ``_why`` finds something wrong with (a module's other nodes are not looked at).
_MAY_BE_A_WAIT = (
    ast.Assert,
    ast.Assign,
    ast.AnnAssign,
    ast.While,
    ast.Call,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
)


def _why(node: ast.AST, clocked: frozenset[str] = frozenset()) -> str | None:
    """What is wrong with ``node`` as a test-side wait, if anything (``clocked``: the module's names
    that hold a time read from the clock)."""
    if isinstance(node, ast.Assert) and _bounds_a_duration_from_above(node.test, clocked):
        return "a wall-clock upper bound (assert which limit ended it, from the error; speed is bench's)"
    if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None and _is_clock_sum(node.value):
        return "a deadline of its own (use eventually(condition, within=...))"
    if isinstance(node, ast.While) and any(_is_clock_read(part) for part in ast.walk(node.test)):
        return "a loop against the clock (use eventually(condition, within=...))"
    if isinstance(node, ast.Call):
        for keyword in node.keywords:
            if _timeout_keyword(keyword.arg) and _bare_seconds(keyword.value):
                return f"a bare {keyword.arg} (use patient(seconds))"
        name = _called_name(node)
        hidden = _HIDDEN_TIMEOUTS.get(_dotted_name(node))
        if hidden is not None and hidden not in {keyword.arg for keyword in node.keywords}:
            return f"{_dotted_name(node)}() waits by its own default {hidden} (give it patient(seconds))"
        method = isinstance(node.func, ast.Attribute)
        if method and name in _FIRST_IS_TIMEOUT and node.args and _bare_seconds(node.args[0]):
            return f"a bare timeout of {name}() (use patient(seconds))"
        if name in {"wait_for", *_SECOND_IS_TIMEOUT} and len(node.args) > 1 and _bare_seconds(node.args[1]):
            return f"a bare timeout of {name}() (use patient(seconds))"
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        for arg, default in _defaults(node.args):
            if _timeout_parameter(arg.arg) and _bare_seconds(default):
                return f"parameter {arg.arg} defaults to bare seconds (name it within and scale it)"
    return None


def findings(source: str, module: str) -> list[Finding]:
    """Every wait in ``source`` that does not go through the suite's patience."""
    lines = source.splitlines()
    found = []
    nodes = list(ast.walk(ast.parse(source)))  # walked once: the walk is most of the check's time
    clocked = _clocked_names(nodes)
    for node in nodes:
        if not isinstance(node, _MAY_BE_A_WAIT):
            continue
        what = _why(node, clocked)
        if what is not None:
            line = getattr(node, "lineno", 0)
            found.append(Finding(module, line, lines[line - 1].strip(), what))
    return found


#: What a module must hold to have a finding at all: only those are parsed (half the modules).
_MAY_WAIT = re.compile(
    r"timeout|monotonic\(|perf_counter\(|time\(\)|fail_after|move_on_after|wait_for|\.\w+\(\s*[\d.]|"
    + "|".join(map(re.escape, [*_HIDDEN_TIMEOUTS, *_SECOND_IS_TIMEOUT]))
)


def test_no_test_module_waits_by_a_clock_or_a_bare_number_of_its_own() -> None:
    # One test reads the sources, for both checks.
    sources = sorted(path for path in TESTS.rglob("*.py") if path != TESTS / "support" / "patience.py")
    texts = {path: path.read_text() for path in sources}
    every = [
        finding
        for path, text in texts.items()
        if _MAY_WAIT.search(text)
        for finding in findings(text, str(path.relative_to(ROOT)))
    ]
    found = [finding for finding in every if (finding.module, finding.text) not in ALLOWED]
    assert not found, "waits outside tests/support/patience.py:\n" + "\n".join(map(str, found))
    gone = set(ALLOWED) - {(finding.module, finding.text) for finding in every}
    assert not gone, f"allowed but gone (remove them from ALLOWED): {sorted(gone)}"


def test_each_kind_of_wait_of_its_own_is_found() -> None:
    source = """
import socket, subprocess, time
def helper(timeout: float = 5.0): ...
def other(*, connect_timeout=3, page_load_timeout_s=30.0): ...
deadline = time.monotonic() + 5
while time.monotonic() < deadline: pass
assert time.monotonic() - started < 5
subprocess.run(["x"], timeout=60)
socket.socket().settimeout(2)
thread.join(10)
asyncio.wait_for(step(), 5)
open_dbus_connection(bus=bus)
httpx2.AsyncClient()
WebDriverWait(browser, 15)
took = time.monotonic() - started
assert took <= LIMIT_S, took
finished = time.perf_counter()
spent = finished - begun
assert 2 > spent
"""
    lines = sorted(finding.line for finding in findings(source, "m.py"))
    assert lines == [3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 16, 19]


def test_waits_through_patience_and_clocks_given_to_the_product_pass() -> None:
    source = """
import time
from tests.support.patience import eventually, patient
def helper(within: float = 5.0, timeout: float | None = None): ...
subprocess.run(["x"], timeout=patient(60))
lock.acquire(timeout=0)
leases.hold("INBOX", time.monotonic() + 0.1)
eventually(lambda: done, within=5)
open_dbus_connection(bus=bus, auth_timeout=patient(5))
httpx2.post(url, timeout=patient(10))
params.get("x")
assert time.monotonic() - started >= 0.5  # a lower bound stays exact
took = time.monotonic() - started
assert took > 0.5 and 0.5 <= took
now = time.time()
assert issued < now + 60  # an instant compared with one from the clock
"""
    assert findings(source, "m.py") == []


def test_the_browser_script_login_opens_imports_the_standard_library_alone() -> None:
    # It runs as the BROWSER command, outside the suite: an import of tests.support.patience there
    # failed every browser sign-in (its waits are allowed bare numbers above).
    tree = ast.parse((TESTS / "support" / "clients" / "oidc_browser.py").read_text())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert {name.split(".")[0] for name in imported} <= set(sys.stdlib_module_names) | {"__future__"}


def test_regression_a_tests_bulk_write_answers_inline_unless_it_asks_for_the_background() -> None:
    # A full run failed when a dry run on a loaded machine outlasted the product's 1.5 s inline wait
    # (background_after_s) and answered as a background operation with no results: the tests' configs
    # wait the most the setting takes, and a test of the background path says 0.
    from mail_imap_mcp.config.settings import ServerSettings
    from tests.support.accounts import INLINE_FOR_TESTS_S, server_toml
    from tests.support.clients.in_process import make_config

    product = ServerSettings.model_fields["background_after_s"]
    assert make_config({}).server.background_after_s == INLINE_FOR_TESTS_S > (product.default or 0)
    assert make_config({}, background_after_s=0).server.background_after_s == 0
    assert f"background_after_s = {INLINE_FOR_TESTS_S}" in server_toml(write_enabled=True)  # a serve child's


def test_regression_no_property_test_has_a_deadline() -> None:
    # Hypothesis's default 200 ms per example is a wall-clock bound; three property tests ran under it.
    from hypothesis import settings

    assert settings().deadline is None
