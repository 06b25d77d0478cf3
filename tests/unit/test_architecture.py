"""The shape of the house (issue 21), checked on every run so it cannot erode unnoticed.

Layers point one way: envelope <- imap <- operations <- tools <- server, subscriptions, transport, cli; mime and
content are pure (no IMAP, no MCP). Modules stay small enough to read, imports form no cycle, and
imapclient's exceptions are caught where the IMAP layer classifies them, not in every module.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
PACKAGE = SRC / "mail_imap_mcp"
SCRIPTS = ROOT / "scripts"

MAX_MODULE_LINES = 500
MAX_TOOL_MODULE_LINES = 250
MAX_MODULES_CATCHING_IMAP_LIBRARY_ERRORS = 1

#: What each layer must not import (as ``mail_imap_mcp.<name>``).
_TOP = ("transport", "server", "subscriptions", "cli")
_ABOVE_OPERATIONS = ("presentation", "services", "app", "asking", "tools")
#: The ways of asking the user (everything of ``asking/`` but its records, which tools and services hand
#: ``app.ask``): only the registry that builds each call's ``ask``, and the root that plugs the page in,
#: reach them.
_WAYS = ("asking.ask", "asking.gate", "asking.page", "asking.tokens", "asking.choose", "asking.answers")
#: What asking's page and its review know nothing of.
_BELOW_ASKING = (
    "imap",
    "smtp",
    "index",
    "mime",
    "query",
    "envelope",
    "state",
    "operations",
    "presentation",
    "services",
    "app",
    "tools",
)
FORBIDDEN_IMPORTS = {
    "envelope": ("imap", "index", "mime", "content", "query", "operations", *_ABOVE_OPERATIONS, *_TOP),
    # Shared state knows no mail and no MCP: keys, values, times to live, channels, and who asks.
    "state": (
        "imap",
        "index",
        "mime",
        "content",
        "query",
        "envelope",
        "operations",
        *_ABOVE_OPERATIONS,
        *_TOP,
    ),
    "query": ("imap", "index", "mime", "content", "envelope", "operations", *_ABOVE_OPERATIONS, *_TOP),
    "mime": ("imap", "index", "operations", "envelope", *_ABOVE_OPERATIONS, *_TOP),
    "content": ("imap", "index", "operations", *_ABOVE_OPERATIONS, *_TOP),
    # Sockets, TLS, deadlines, SASL and tokens: below every protocol, the same for IMAP and SMTP.
    "net": (
        "imap",
        "smtp",
        "managesieve",
        "index",
        "mime",
        "content",
        "query",
        "envelope",
        "state",
        "operations",
        *_ABOVE_OPERATIONS,
        *_TOP,
    ),
    # What services speak about mail, whatever the protocol (ids, records, roles, domain errors, the backend
    # Protocols): below every protocol, which implements it.
    "mail": ("imap", "index", "smtp", "managesieve", "credentials", "operations", *_ABOVE_OPERATIONS, *_TOP),
    "imap": ("index", "smtp", "managesieve", "credentials", "operations", *_ABOVE_OPERATIONS, *_TOP),
    # Reading and creating the user's local files safely: paths, descriptors, names; no protocol, no MCP
    # (the Windows access-list rule of config/ is the one thing it borrows).
    "local_files": (
        "net",
        "imap",
        "smtp",
        "index",
        "mime",
        "content",
        "query",
        "envelope",
        "state",
        "credentials",
        "operations",
        *_ABOVE_OPERATIONS,
        *_TOP,
    ),
    # SMTP submission beside imap/: net/'s sockets, TLS and SASL, its own errors; no IMAP, nothing above.
    "smtp": (
        "imap",
        "index",
        "query",
        "envelope",
        "state",
        "credentials",
        "operations",
        *_ABOVE_OPERATIONS,
        *_TOP,
    ),
    # Credentials apart from any protocol: the settings, net/'s OAuth client and token types, the keychain,
    # the sign-in (its flow, stores, lock and record); a protocol gets them from the application root.
    "credentials": (
        "imap",
        "smtp",
        "index",
        "mime",
        "content",
        "query",
        "state",
        "operations",
        *_ABOVE_OPERATIONS,
        *_TOP,
    ),
    # The local index sits beside imap/: it syncs through it and answers query/'s trees, each engine
    # compiling them itself (index/engine.py).
    "index": ("operations", *_ABOVE_OPERATIONS, *_TOP),
    "operations": (*_ABOVE_OPERATIONS, *_TOP),
    # Search by meaning's model, vectors and fusion know no mail store: the index hands them its texts.
    "meaning": ("imap", "index", "operations", *_ABOVE_OPERATIONS, *_TOP),
    "presentation": ("services", "tools", *_TOP),
    # What each capability is, allows and costs: settings, annotations, budget shares and the one gate.
    "capabilities": ("presentation", "services", "app", "asking", "tools", *_TOP),
    "app": ("services", "tools", *_TOP),
    # Services raise domain errors and return records; what the model reads is presentation's.
    # ... and reach a protocol through the call's backend, never a protocol's package (ManageSieve's
    # among them; the named few of SERVICES_REACHING_IMAP aside).
    "services": ("presentation", "tools", "managesieve", *_TOP),
    "tools": ("managesieve", *_TOP),
    # Ready-made prompts: templates naming tools by name (never importing one), completed from the
    # caller's accounts and mailboxes.
    "prompts": ("tools", *_TOP),
    # Asking the user (``app.ask``): above the services and the approval page, below the tools.
    "asking": ("presentation", "services", "tools", *_TOP),
    # What a tool and its services use of their call (``call.Call``): a Protocol the per-call view provides.
    "call": ("presentation", "services", "app", "tools", *_WAYS, "tool_calls", *_TOP),
    # The tools bound to the application (each call's view, its ask and gate): only the server imports it.
    "tool_calls": _TOP,
    # What a call may ask its user (``Ask``, ``Confirm``) and gets back (``Done``, ``Waiting``): records the
    # tools and services hand ``app.ask``, knowing no way of asking.
    "asking.records": ("imap", "smtp", "index", "mime", "query", "state", "presentation", *_WAYS, *_TOP),
    # The approval page's server: a renderer's request, a loopback listener, a decision; it knows no mail
    # (a draft's renderer is services/send_page.py), no mail protocol and no other way of asking.
    # It refuses another OS user's connection through net/local_peer.py.
    "asking.page_server": (*_BELOW_ASKING, "asking.records", *_WAYS, *_TOP),
    # What the user is asked to approve (``Review``): one generic record, knowing nothing else of the house.
    "asking.review": (*_BELOW_ASKING, "net", "asking.records", "asking.page_server", *_WAYS, *_TOP),
}
# The ways of asking, below the one entry point (``asking.ask``, which the registry hands each call): they
# know neither the composition root nor what is above it.
# ManageSieve beside imap/ and smtp/: mail/'s Sieve Protocol and errors on net/'s sockets, TLS and SASL;
# no other protocol, nothing above (as submission, which in turn knows nothing of it).
FORBIDDEN_IMPORTS["managesieve"] = ("smtp", *FORBIDDEN_IMPORTS["smtp"])
FORBIDDEN_IMPORTS["smtp"] = ("managesieve", *FORBIDDEN_IMPORTS["smtp"])
for _way in _WAYS[1:]:
    FORBIDDEN_IMPORTS[_way] = ("presentation", "services", "app", "tools", "asking.ask", *_TOP)
# Only the registry that hands each call its ``ask`` reaches the ways; the root builds the gate and the page.
for _layer in ("presentation", "services", "capabilities"):
    FORBIDDEN_IMPORTS[_layer] = (*FORBIDDEN_IMPORTS[_layer], *_WAYS)
FORBIDDEN_IMPORTS["app"] = (*FORBIDDEN_IMPORTS["app"], "asking.ask")
# Below every protocol: nothing there reads or creates the user's local files.
for _layer in ("envelope", "state", "query", "net"):
    FORBIDDEN_IMPORTS[_layer] = (*FORBIDDEN_IMPORTS[_layer], "local_files")
# Nothing below the tools and services shows an approval page.
for _layer in (
    "envelope",
    "state",
    "query",
    "mail",
    "mime",
    "content",
    "net",
    "imap",
    "smtp",
    "managesieve",
    "index",
    "operations",
    "local_files",
    "credentials",
):
    FORBIDDEN_IMPORTS[_layer] = (*FORBIDDEN_IMPORTS[_layer], "asking")


@functools.cache
def tree_of(source: str) -> ast.Module:
    """``source`` parsed once per process: most tests here read every module of src (each parsing them
    all again took a third of this module's CPU). Read only."""
    return ast.parse(source)


@functools.cache
def nodes_of(source: str) -> tuple[ast.AST, ...]:
    """Every node of ``source`` (``ast.walk``), once per process. Read only."""
    return tuple(ast.walk(tree_of(source)))


def module_name(path: Path, base: Path) -> str:
    parts = list(path.relative_to(base).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(base: Path, under: Path) -> dict[str, Path]:
    return {module_name(path, base): path for path in sorted(under.rglob("*.py"))}


def imported(path: Path, name: str) -> Iterator[str]:
    """Every module ``path`` imports, at its top or inside a function (a lazy import is an import)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in nodes_of(path.read_text(encoding="utf-8")):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def import_graph(known: dict[str, Path]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        targets = {target for target in imported(path, name) if target in known and target != name}
        # A module's own package's __init__ is not a dependency worth a cycle.
        graph[name] = {target for target in targets if not name.startswith(target + ".")}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                return [*stack[stack.index(target) :], target]
            if target not in state and (cycle := visit(target)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_no_module_in_src_is_over_500_lines() -> None:
    long = {
        name: lines(path) for name, path in modules(SRC, PACKAGE).items() if lines(path) > MAX_MODULE_LINES
    }
    assert long == {}


def tool_modules() -> list[Path]:
    """Every module of ``tools/`` but its ``__init__``: a tool's module, or each module of a tool's package
    (``tools/<tool>/``: its spec and dispatch in ``__init__.py``, a module per flow), spec and registry."""
    return [
        path
        for path in sorted((PACKAGE / "tools").rglob("*.py"))
        if path != PACKAGE / "tools" / "__init__.py"
    ]


def test_no_tool_module_is_over_250_lines() -> None:
    """Issue 79: a tool that outgrows 250 lines becomes a package with a module per flow."""
    long = {
        path.relative_to(PACKAGE).as_posix(): lines(path)
        for path in tool_modules()
        if lines(path) > MAX_TOOL_MODULE_LINES
    }
    assert long == {}


#: A module above this share of its cap is near it: it is listed in :data:`NEAR_CAP_LIST` and may not grow.
NEAR_CAP = 0.9

#: The ratchet (issue 79): the modules above :data:`NEAR_CAP` of their cap, each with the lines it may not
#: pass and the split to make before it grows. The list only shrinks.
NEAR_CAP_LIST = Path(__file__).with_name("modules_near_their_cap.txt")

#: At most this many modules may sit above :data:`NEAR_CAP` of their cap (lines in :data:`NEAR_CAP_LIST`).
MAX_MODULES_NEAR_THEIR_CAP = 5


@dataclasses.dataclass(frozen=True)
class NearCap:
    """One line of :data:`NEAR_CAP_LIST`: a module near its cap, the lines it may not pass, its split."""

    lines: int
    split: str


def cap_of(path: Path) -> int:
    in_tools = path.is_relative_to(PACKAGE / "tools") and path != PACKAGE / "tools" / "__init__.py"
    return MAX_TOOL_MODULE_LINES if in_tools else MAX_MODULE_LINES


def near_their_cap(paths: dict[str, Path]) -> dict[str, int]:
    """The modules of ``paths`` above :data:`NEAR_CAP` of their cap, each with its lines."""
    return {name: lines(path) for name, path in paths.items() if lines(path) > NEAR_CAP * cap_of(path)}


def read_near_cap_list(text: str) -> dict[str, NearCap]:
    """The lines of :data:`NEAR_CAP_LIST` (``module lines split``, ``#`` comments), by module."""
    listed: dict[str, NearCap] = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        module, count, split = line.split(maxsplit=2)
        assert module not in listed, f"{module} is listed twice in {NEAR_CAP_LIST.name}"
        listed[module] = NearCap(int(count), split)
    return listed


def near_cap_faults(near: dict[str, int], listed: dict[str, NearCap]) -> list[str]:
    """What breaks the ratchet: a module near its cap that is not listed, a listed one that grew past its
    record (naming its split), or one whose record is stale (it shrank, or is no longer near its cap)."""
    faults = []
    for module, count in sorted(near.items()):
        if module not in listed:
            faults.append(
                f"{module} has {count} lines, above {NEAR_CAP:.0%} of its cap: split it by concern into a "
                "well-named sibling module (the list of modules near their cap only shrinks)"
            )
        elif count > listed[module].lines:
            faults.append(
                f"{module} grew to {count} lines past its {listed[module].lines}: split it first "
                f"({listed[module].split})"
            )
        elif count < listed[module].lines:
            faults.append(f"{module} shrank to {count} lines: lower its record in {NEAR_CAP_LIST.name}")
    faults.extend(
        f"{module} is no longer above {NEAR_CAP:.0%} of its cap: delete its line in {NEAR_CAP_LIST.name}"
        for module in sorted(set(listed) - set(near))
    )
    return faults


def test_modules_near_their_cap_may_not_grow() -> None:
    """Issue 58 reported the modules above 90% of their cap, and they filled anyway; issue 79 makes the
    report a ratchet: the committed list is exactly the modules above 90% of their cap, none may grow
    past its recorded lines, and the list holds at most :data:`MAX_MODULES_NEAR_THEIR_CAP` lines."""
    near = near_their_cap(
        {path.relative_to(PACKAGE).as_posix(): path for path in sorted(PACKAGE.rglob("*.py"))}
    )
    listed = read_near_cap_list(NEAR_CAP_LIST.read_text(encoding="utf-8"))
    for module, count in sorted(near.items()):
        print(f"near its cap: {module} {count}/{cap_of(PACKAGE / module)} lines")
    assert near_cap_faults(near, listed) == []
    assert len(listed) <= MAX_MODULES_NEAR_THEIR_CAP


def test_the_near_cap_ratchet_names_each_fault(tmp_path: Path) -> None:
    full, half = tmp_path / "full.py", tmp_path / "half.py"
    full.write_text("x = 1\n" * 451)
    half.write_text("x = 1\n" * 250)
    assert near_their_cap({"full": full, "half": half}) == {"full": 451}
    listed = read_near_cap_list(
        "# a comment\n\na.py 460  into a_parts.py\nb.py 470  into b_parts.py\nc.py 480 x\n"
    )
    assert listed["a.py"] == NearCap(460, "into a_parts.py")
    faults = near_cap_faults({"a.py": 461, "b.py": 469, "new.py": 455}, listed)
    assert [fault.split()[0] for fault in faults] == ["a.py", "b.py", "new.py", "c.py"]
    assert "split it first (into a_parts.py)" in faults[0] and "lower its record" in faults[1]
    assert "above 90% of its cap" in faults[2] and "delete its line" in faults[3]
    assert near_cap_faults({"a.py": 460, "b.py": 470, "c.py": 480}, listed) == []
    tool = PACKAGE / "tools" / "probe.py"  # not written: a tool module's cap is read from its place
    assert (
        cap_of(tool) == cap_of(PACKAGE / "tools" / "probe" / "__init__.py") == MAX_TOOL_MODULE_LINES
        and cap_of(PACKAGE / "tools" / "__init__.py") == MAX_MODULE_LINES
    )
    assert PACKAGE / "tools" / "get_attachment" / "as_text.py" in tool_modules()


@pytest.mark.parametrize("layer", sorted(FORBIDDEN_IMPORTS))
def test_layer_imports_point_one_way(layer: str) -> None:
    known = modules(SRC, PACKAGE)
    forbidden = tuple(f"mail_imap_mcp.{name}" for name in FORBIDDEN_IMPORTS[layer])
    wrong = sorted(
        f"{name} imports {target}"
        for name, path in known.items()
        if name == f"mail_imap_mcp.{layer}" or name.startswith(f"mail_imap_mcp.{layer}.")
        for target in imported(path, name)
        if target in forbidden or target.startswith(tuple(prefix + "." for prefix in forbidden))
    )
    assert wrong == []


def test_nothing_but_the_entry_point_imports_the_command_line() -> None:
    """The command line (``cli/``: ``serve``, ``check``, ``setup``, ``index``, ``login``...) is the top:
    only ``python -m mail_imap_mcp`` (``__main__.py``) and ``cli/`` itself import it."""
    wrong = sorted(
        f"{name} imports {target}"
        for name, path in modules(SRC, PACKAGE).items()
        if name not in ("mail_imap_mcp.cli", "mail_imap_mcp.__main__")
        and not name.startswith("mail_imap_mcp.cli.")
        for target in imported(path, name)
        if target == "mail_imap_mcp.cli" or target.startswith("mail_imap_mcp.cli.")
    )
    assert wrong == []


#: The standard library's network modules: only ``net/`` imports them.
_NETWORK_MODULES = ("socket", "ssl", "select")
#: Text only a SASL message or a token's fetch carries: only ``net/`` writes it.
_SASL_MARKERS = ("auth=Bearer", "n,a=", "subprocess.Popen")
#: The protocol packages: IMAP, SMTP submission and ManageSieve.
_PROTOCOL_PACKAGES = ("mail_imap_mcp.imap.", "mail_imap_mcp.smtp.", "mail_imap_mcp.managesieve.")


def test_sockets_tls_and_sasl_live_in_net_alone() -> None:
    """No protocol package (``imap/``) opens a socket, wraps TLS, waits with ``select``, writes a SASL
    message or runs a token command: those are ``net/``'s, so SMTP submission uses the same pieces."""
    wrong = sorted(
        f"{name} imports {target}"
        for name, path in modules(SRC, PACKAGE).items()
        if name.startswith(_PROTOCOL_PACKAGES)
        for target in imported(path, name)
        if target in _NETWORK_MODULES or target.startswith(tuple(f"{m}." for m in _NETWORK_MODULES))
    ) + sorted(
        f"{name} holds {marker!r}"
        for name, path in modules(SRC, PACKAGE).items()
        if name.startswith(_PROTOCOL_PACKAGES)
        for marker in _SASL_MARKERS
        if marker in path.read_text(encoding="utf-8")
    )
    assert wrong == []


#: The index engines' packages: each engine (its store, compiler, schema, places) is a subpackage of
#: ``index/engines/``, whose ``__init__.py`` is the application root's choice among them.
ENGINES = PACKAGE / "index" / "engines"
ENGINE_CHOICE = "mail_imap_mcp.index.engines"


def engine_packages() -> tuple[str, ...]:
    return tuple(f"{ENGINE_CHOICE}.{path.parent.name}" for path in sorted(ENGINES.glob("*/__init__.py")))


def in_package(name: str, packages: tuple[str, ...]) -> bool:
    return name in packages or name.startswith(tuple(f"{package}." for package in packages))


def test_sqlite_is_reached_through_the_index_store_alone() -> None:
    """The local index keeps its engine behind one interface (``index/store.py``): only its SQLite
    engine (``index/engines/sqlite/``, and ``index/engines/tantivy/`` that ranks beside it) imports
    ``sqlite3``, so a server-grade engine can replace it in one place. The others are the state's file,
    behind the state's own interface (``state/file_store.py``, a ``Store``), and the switch to WAL that
    both SQLite files share (``state/sqlite_wal.py``: two openers of a new file at once)."""
    sqlite_engines = (f"{ENGINE_CHOICE}.sqlite", f"{ENGINE_CHOICE}.tantivy")
    wrong = sorted(
        name
        for name, path in modules(SRC, PACKAGE).items()
        if any(target == "sqlite3" or target.startswith("sqlite3.") for target in imported(path, name))
        and not in_package(name, sqlite_engines)
        and name not in {"mail_imap_mcp.state.file_store", "mail_imap_mcp.state.sqlite_wal"}
    )
    assert wrong == []


def test_index_engines_are_subpackages() -> None:
    """Each engine is a package of ``index/engines/`` (not modules named by an engine prefix): beside the
    choice (``index/engines/__init__.py``) the folder holds packages alone, and no module outside them
    imports an engine's driver (``sqlite3`` aside, checked above: ``psycopg``, ``tantivy``)."""
    assert {path.name for path in ENGINES.glob("*.py")} == {"__init__.py"}
    assert {name.rpartition(".")[2] for name in engine_packages()} >= {"sqlite", "postgresql", "tantivy"}
    drivers = ("psycopg", "psycopg_pool", "tantivy")
    wrong = sorted(
        f"{name} imports {target}"
        for name, path in modules(SRC, PACKAGE).items()
        if not in_package(name, engine_packages())
        for target in imported(path, name)
        if target.partition(".")[0] in drivers
    )
    assert wrong == []


def test_an_index_engine_is_chosen_in_one_place_and_reached_through_its_interface() -> None:
    """Outside an engine's own package only ``index/engines/__init__.py`` (the application root's choice)
    names one: services, tools and the rest of ``index/`` see the store, the engine and the query tree
    alone, so an engine is added or replaced in one place (issue 50)."""
    engines = engine_packages()
    wrong = sorted(
        f"{name} -> {target}"
        for name, path in modules(SRC, PACKAGE).items()
        if not in_package(name, engines) and name != ENGINE_CHOICE
        for target in imported(path, name)
        if in_package(target, engines)
    )
    assert wrong == []


def test_the_query_package_imports_only_itself_and_the_standard_library() -> None:
    """``query/`` is pure: an index or a Gmail compiler reads its trees without any IMAP or MCP."""
    wrong = sorted(
        f"{name} imports {target}"
        for name, path in modules(SRC, PACKAGE / "query").items()
        for target in imported(path, name)
        if not target.startswith("mail_imap_mcp.query")
        and target.partition(".")[0] not in {*sys.stdlib_module_names, "__future__"}
    )
    assert wrong == []


#: Where a capability name may be tested: the server's profile, and the two modules that send commands
#: (those modules only: ``session_writes`` and the other command families ask the profile).
#: ManageSieve's session reads its own protocol's capabilities into ``mail/sieve.py``'s record (its profile).
CAPABILITY_TESTERS = (
    "mail_imap_mcp.imap.session",
    "mail_imap_mcp.imap.wire",
    "mail_imap_mcp.managesieve.session",
)
CAPABILITY_PACKAGES = ("mail_imap_mcp.imap.personality",)

#: Capability names (of RFC 9051 and the extensions servers announce) that name nothing else, and the
#: prefixes of those with a value (``AUTH=PLAIN``, ``THREAD=REFERENCES``...): a comparison with one is a
#: capability test wherever it is (X-GM-EXT-1 alone: X-GM-LABELS and X-GM-MSGID are FETCH items).
ONLY_CAPABILITIES = frozenset(
    {"IMAP4REV1", "IMAP4REV2", "UIDPLUS", "CONDSTORE", "QRESYNC", "LIST-STATUS", "LIST-EXTENDED"}
    | {"SPECIAL-USE", "CREATE-SPECIAL-USE", "X-GM-EXT-1", "SEARCHRES", "WITHIN", "LITERAL+", "LITERAL-"}
    | {"LOGINDISABLED", "ESORT", "SASL-IR", "CHILDREN", "OBJECTID", "MULTIAPPEND", "CATENATE", "XLIST"}
)
CAPABILITY_PREFIXES = ("AUTH=", "THREAD=", "SORT=", "UTF8=", "COMPRESS=", "CONTEXT=", "STATUS=")
#: Capability names that also name a command or a response: ``command == "MOVE"`` is no capability
#: test, ``"MOVE" in offered`` is (written as the profile holds them: upper case).
ALSO_COMMANDS = frozenset(
    {"MOVE", "SORT", "THREAD", "ESEARCH", "NOTIFY", "IDLE", "ENABLE", "ID", "NAMESPACE", "UNSELECT"}
    | {"STARTTLS", "BINARY", "QUOTA", "ACL", "METADATA"}
)
#: Methods that test a string or a set against another.
TESTING_METHODS = frozenset(
    {"startswith", "endswith", "removeprefix", "removesuffix", "partition", "rpartition", "split", "find"}
    | {"index", "count", "issubset", "issuperset", "isdisjoint", "intersection", "__contains__"}
)


def capability_literal(node: ast.expr, *, only: bool) -> bool:
    """Whether ``node`` is a capability name written out (text, bytes, or an f-string such as
    ``f"AUTH={mechanism}"``), or a set, tuple or list holding one; ``only``: a name that names
    nothing else."""
    if isinstance(node, ast.Set | ast.Tuple | ast.List):
        return any(capability_literal(item, only=only) for item in node.elts)
    if isinstance(node, ast.JoinedStr):
        head = node.values[0] if node.values else None
        return isinstance(head, ast.Constant) and capability_literal(head, only=True)
    if not isinstance(node, ast.Constant) or not isinstance(node.value, str | bytes):
        return False
    text = node.value.decode("ascii", "replace") if isinstance(node.value, bytes) else node.value
    if text.upper().startswith(CAPABILITY_PREFIXES) or text.upper() in ONLY_CAPABILITIES:
        return True
    return not only and text in ALSO_COMMANDS


def capability_tests(source: str) -> list[int]:
    """Lines of ``source`` that test capabilities themselves.

    Capabilities are what is named like them (``session.capabilities``, ``offered_capabilities``,
    ``client.capabilities()``) and every name bound from them (``for name in capabilities``, a
    comprehension over them, ``offered = client.offered_capabilities``...). A test is a comparison (``in``,
    ``==``, ``<=``...) or a string or set method (``startswith``, ``removeprefix``, ``issubset``...) on
    them; a comparison or such a method with a name only a capability has (``"UIDPLUS"``, ``"AUTH="``,
    ``f"THREAD={x}"``); ``"MOVE" in something`` (a capability name that is also a command's, looked for
    in a collection); or a call of ``has_capability``.
    """
    derived: set[str] = set()

    def named(name: str) -> bool:
        return "capabilit" in name.lower() or name in derived

    def about_capabilities(node: ast.expr) -> bool:
        """Whether ``node`` is capabilities, or a value reached from them by attributes, calls of
        their methods, subscripts, conversions or comprehensions (``c.upper() for c in ...``)."""
        if isinstance(node, ast.Name):
            return named(node.id)
        if isinstance(node, ast.Attribute):
            return named(node.attr) or about_capabilities(node.value)
        if isinstance(node, ast.Subscript | ast.Starred):
            return about_capabilities(node.value)
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name) and node.func.id in {
                "set",
                "frozenset",
                "tuple",
                "list",
                "sorted",
            }:
                return any(about_capabilities(arg) for arg in node.args)
            return about_capabilities(node.func)
        if isinstance(node, ast.GeneratorExp | ast.ListComp | ast.SetComp | ast.DictComp):
            return any(about_capabilities(generator.iter) for generator in node.generators)
        if isinstance(node, ast.IfExp):
            return about_capabilities(node.body) or about_capabilities(node.orelse)
        if isinstance(node, ast.BoolOp):
            return any(about_capabilities(value) for value in node.values)
        return False

    def targets(node: ast.AST) -> Iterator[tuple[ast.expr, ast.expr]]:
        """Each ``(target, value)`` binding in ``node``; a loop's target is bound from what it loops over."""
        if isinstance(node, ast.Assign):
            yield from ((target, node.value) for target in node.targets)
        elif isinstance(node, ast.AnnAssign | ast.AugAssign | ast.NamedExpr) and node.value is not None:
            yield node.target, node.value
        elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
            yield node.target, node.iter

    growing = True
    while growing:  # until no binding adds a name reached from capabilities
        before = len(derived)
        for node in nodes_of(source):
            for target, value in targets(node):
                if about_capabilities(value):
                    derived.update(name.id for name in ast.walk(target) if isinstance(name, ast.Name))
        growing = len(derived) > before

    def tests(node: ast.AST) -> bool:
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            looked_for = node.left if isinstance(node.ops[0], ast.In | ast.NotIn) else None
            return any(about_capabilities(side) or capability_literal(side, only=True) for side in sides) or (
                looked_for is not None and capability_literal(looked_for, only=False)
            )
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            return False
        tested = node.func.value
        return node.func.attr == "has_capability" or (
            node.func.attr in TESTING_METHODS
            and (
                about_capabilities(tested)
                or any(capability_literal(x, only=True) for x in [tested, *node.args])
            )
        )

    return sorted({node.lineno for node in nodes_of(source) if tests(node)})


def may_test_capabilities(name: str) -> bool:
    return name in CAPABILITY_TESTERS or any(
        name == package or name.startswith(package + ".") for package in CAPABILITY_PACKAGES
    )


def test_capabilities_are_tested_only_by_the_servers_profile() -> None:
    testing = {
        name: capability_tests(path.read_text(encoding="utf-8"))
        for name, path in modules(SRC, PACKAGE).items()
        if not may_test_capabilities(name)
    }
    assert {name: lines for name, lines in testing.items() if lines} == {}


def test_the_capability_check_sees_a_capability_test() -> None:
    source = (
        'a = "MOVE" in session.capabilities\n'
        'b = {"LIST-STATUS"} <= caps_capabilities\n'
        'c = client.has_capability("IDLE")\n'
        "d = session.profile.moves\n"
        "names = (c.decode() if isinstance(c, bytes) else c for c in capabilities)\n"
        'e = {n.upper().removeprefix("AUTH=") for n in names if n.upper().startswith("AUTH=")}\n'
        "offered = client.offered_capabilities\n"
        'f = "SORT" in offered\n'
        'g = any(name.startswith("THREAD=") for name in announced)\n'
        'h = f"AUTH={mechanism}" in announced\n'
        'i = "UIDPLUS" == name\n'
        'j = {"MOVE", "UIDPLUS"}.issubset(announced)\n'
        'k = b"CONDSTORE" in {c.upper() for c in direct.capabilities()}\n'
        'l = command == "MOVE"\n'
        'm = command in ("MOVE", "COPY")\n'
        'n = getattr(context, "client_capabilities", None) is not None and typ == "ENABLED"\n'
        'raise ExtensionMissing("MOVE or UIDPLUS", "move")\n'
    )
    assert capability_tests(source) == [1, 2, 3, 6, 8, 9, 10, 11, 12, 13]


def test_the_capability_check_sees_how_errors_parsed_sasl_mechanisms_before_the_profile_named_them() -> None:
    before = """
class MechanismNotOffered(ConnectFailed):
    def __init__(self, account_id: str, config: AccountConfig, capabilities: Iterable[bytes | str]) -> None:
        names = (c.decode("ascii", "replace") if isinstance(c, bytes) else c for c in capabilities)
        self.offered = sorted(
            {name.upper().removeprefix("AUTH=") for name in names if name.upper().startswith("AUTH=")}
        )
"""
    assert capability_tests(before) == [6]


PLANS = [
    "imap.search.plan",
    "imap.search.merge",
    "mail.cursors",
    "imap.search.position",
    "imap.search.dated_plan",
]


@pytest.mark.parametrize("module", PLANS)
def test_the_search_plan_its_merge_and_cursors_send_nothing(module: str) -> None:
    """``imap/search/`` plans a page's reads and merges its candidates, ``mail/cursors.py`` writes its cursor, as data: none of
    those modules reaches a connection, nor an IMAP library through the project's modules it imports
    (the executors, ``execute.py`` and ``position_read.py``, and ``sort.py`` send what they plan)."""
    sending = ("session", "wire", "pipeline", "pool", "connection", "search.execute", "search.position_read")
    known = modules(SRC, PACKAGE)
    seen: set[str] = set()
    todo = [f"mail_imap_mcp.{module}"]
    reached = []
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for target in imported(known[name], name):
            if target.startswith(tuple(f"mail_imap_mcp.imap.{n}" for n in sending)) or target.partition(".")[
                0
            ] in {"imaplib", "imapclient"}:
                reached.append(f"{name} -> {target}")
            elif target in known:
                todo.append(target)
    assert reached == []


def test_whether_mailboxes_are_read_at_once_is_decided_by_one_rule_outside_the_tools() -> None:
    asking = {
        name
        for name, path in modules(SRC, PACKAGE).items()
        if "reads_at_once" in path.read_text(encoding="utf-8")
    }
    assert asking == {
        "mail_imap_mcp.imap.search.plan",  # the rule
        "mail_imap_mcp.imap.pages",  # the page by one position reads by it
    }


def project_imports(path: Path, name: str) -> set[str]:
    """The modules of this project ``path`` imports (names imported from them left out)."""
    known = modules(SRC, PACKAGE)
    return {target for target in imported(path, name) if target in known and target != name}


def own_tool(name: str) -> str:
    """The tool a module of ``tools/`` belongs to: ``mail_imap_mcp.tools.<tool>`` (its package or module)."""
    return ".".join(name.split(".")[:3])


def test_a_tool_module_imports_no_other_module_of_tools_but_its_spec_and_its_models() -> None:
    """A tool's pydantic models sit beside it in ``tools/<tool>_models.py``, which imports no tool; a tool
    that is a package (``tools/<tool>/``) imports its own modules, and no other tool's."""
    tools = PACKAGE / "tools"
    wrong = sorted(
        f"{name} imports {target}"
        for name, path in modules(SRC, tools).items()
        if path not in {tools / "__init__.py", tools / "spec.py", tools / "registry.py"}
        for target in project_imports(path, name)
        if target.startswith("mail_imap_mcp.tools")
        and target not in {"mail_imap_mcp.tools.spec", f"{name}_models"}
        and not (path.parent != tools and own_tool(target) == own_tool(name))
    )
    assert wrong == []
    assert not (tools / "_shared").exists()


def test_no_import_cycle_in_src() -> None:
    assert find_cycle(import_graph(modules(SRC, PACKAGE))) is None


def test_no_import_cycle_in_scripts() -> None:
    known = {
        f"scripts.{name}" if name else "scripts": path for name, path in modules(SCRIPTS, SCRIPTS).items()
    }
    # Scripts import each other by their bare names (scripts/ is on sys.path when they run).
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        bare = {target.removeprefix("scripts.") for target in imported(path, name)}
        graph[name] = {other for other in known if other != name and other.removeprefix("scripts.") in bare}
    assert find_cycle(graph) is None


TESTS = ROOT / "tests"


def is_test_module(name: str) -> bool:
    """``tests.integration.search.test_search`` and the like: a module pytest collects tests from."""
    return name.startswith("tests.") and name.rpartition(".")[2].startswith("test_")


def imported_test_modules(path: Path, name: str) -> set[str]:
    """The test modules ``path`` imports (``from tests.x import test_y`` names one too)."""
    return {target for target in imported(path, name) if is_test_module(target) and target != name}


def test_no_test_module_imports_another() -> None:
    """What tests share lives in a conftest or in tests/support (``tests/support/shared/<module>.py`` for
    what one test module's tests share with another's): importing a test module runs its tests' module
    code in another module and ties the two modules' moves together."""
    importing = {
        name: sorted(targets)
        for name, path in modules(ROOT, TESTS).items()
        if (targets := imported_test_modules(path, name))
    }
    assert importing == {}


#: tests/support keeps its modules in packages by concern (servers, clients, mail, run, shared): at most
#: this many at its top.
MAX_SUPPORT_TOP_MODULES = 25


def test_tests_support_keeps_its_modules_in_packages_by_concern() -> None:
    top = sorted(path.name for path in (TESTS / "support").glob("*.py") if path.name != "__init__.py")
    assert len(top) <= MAX_SUPPORT_TOP_MODULES, top


def test_the_test_import_check_sees_each_form(tmp_path: Path) -> None:
    module = tmp_path / "test_x.py"
    module.write_text(
        "from tests.integration.search.test_search import seed\n"
        "from tests.integration.search import test_threads\n"
        "def test_y():\n    import tests.pure.test_query\n"
        "from tests.support.patience import patient\n"
    )
    assert imported_test_modules(module, "tests.integration.x.test_x") == {
        "tests.integration.search.test_search",
        "tests.integration.search.test_threads",
        "tests.pure.test_query",
    }


def test_no_html_rendering_under_imap() -> None:
    imap = modules(SRC, PACKAGE / "imap")
    assert not [name for name in imap if name.rpartition(".")[2].startswith("html")]
    users = sorted(
        name
        for name, path in imap.items()
        for target in imported(path, name)
        if target.startswith("mail_imap_mcp.content.html")
    )
    assert users == []


#: imapclient's exceptions, and imaplib's (``IMAP4.error``, ``IMAP4.abort``, ``IMAP4.readonly``).
IMAP_LIBRARY_ERRORS = {
    "IMAPClientError",
    "IMAPClientAbortError",
    "IMAPClientReadOnlyError",
    "LoginError",
    "CapabilityError",
    "IllegalStateError",
    "InvalidCriteriaError",
    "ProtocolError",
}
#: The modules that may import imaplib or imapclient: the wire, the error classification, the parsers
#: and the session's command wrappers.
MAX_MODULES_IMPORTING_IMAP_LIBRARIES = 5


def catches_imap_library_error(source: str) -> bool:
    """Whether ``source`` has an ``except`` naming an imapclient or imaplib exception."""
    for node in nodes_of(source):
        if isinstance(node, ast.ExceptHandler) and node.type is not None:
            names = {n.id for n in ast.walk(node.type) if isinstance(n, ast.Name)}
            dotted = {ast.unparse(n) for n in ast.walk(node.type) if isinstance(n, ast.Attribute)}
            if names & IMAP_LIBRARY_ERRORS or any("IMAP4" in name for name in dotted):
                return True
    return False


def imports_imap_library(path: Path, name: str) -> bool:
    return any(target.partition(".")[0] in {"imaplib", "imapclient"} for target in imported(path, name))


def test_imap_library_errors_are_caught_in_the_wire_alone() -> None:
    catching = sorted(
        name
        for name, path in modules(SRC, PACKAGE).items()
        if catches_imap_library_error(path.read_text(encoding="utf-8"))
    )
    assert len(catching) <= MAX_MODULES_CATCHING_IMAP_LIBRARY_ERRORS, catching


def test_imaplib_and_imapclient_are_imported_only_by_a_few_modules_of_the_imap_layer() -> None:
    importing = sorted(
        name for name, path in modules(SRC, PACKAGE).items() if imports_imap_library(path, name)
    )
    assert all(name.startswith("mail_imap_mcp.imap.") for name in importing), importing
    assert len(importing) <= MAX_MODULES_IMPORTING_IMAP_LIBRARIES, importing


def test_the_library_error_check_sees_each_form() -> None:
    assert catches_imap_library_error("try:\n    x()\nexcept imaplib.IMAP4.abort:\n    pass\n")
    assert catches_imap_library_error("try:\n    x()\nexcept (OSError, LoginError):\n    pass\n")
    assert not catches_imap_library_error("try:\n    x()\nexcept OSError:\n    pass\n")


def test_the_cycle_finder_finds_a_cycle() -> None:
    # The checks above pass on an empty answer; make sure the finder is not blind.
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


#: What the IMAP layer may take from ``mail_imap_mcp.envelope``: ``Issue``, the plain record of one
#: item's problem in a partial answer (code, stage, message), which knows no tool, argument or setting.
#: Envelope errors (``ToolFailure``, ``ErrorCode``, ``NextAction``) are the failure registry's to build
#: (``presentation/failures.py``): the IMAP layer raises typed errors that carry the facts.
IMAP_MAY_IMPORT_FROM_ENVELOPE = frozenset({"Issue"})


def envelope_imports(path: Path) -> Iterator[str]:
    """The names ``path`` imports from ``mail_imap_mcp.envelope`` (a module imported whole: its name)."""
    for node in nodes_of(path.read_text(encoding="utf-8")):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("mail_imap_mcp.envelope"):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.startswith("mail_imap_mcp.envelope"))


def test_the_imap_layer_builds_no_envelope_error() -> None:
    imap = modules(SRC, PACKAGE / "imap")
    mentions = sorted(
        name for name, path in imap.items() if "ToolFailure" in path.read_text(encoding="utf-8")
    )
    assert mentions == [], "raise a typed error of imap/errors.py; presentation/failures.py words it"
    imports = sorted(
        f"{name} imports {target}"
        for name, path in imap.items()
        for target in envelope_imports(path)
        if target not in IMAP_MAY_IMPORT_FROM_ENVELOPE
    )
    assert imports == []


#: Envelope errors a service must not build: it raises a domain error (typed, in ``imap/``) that the
#: failure registry words. ``NextAction`` stays allowed: a next step of an answer that succeeded (the
#: undo calls of a replaced draft) is no failure.
SERVICES_MAY_NOT_IMPORT_FROM_ENVELOPE = frozenset({"ToolFailure", "ErrorCode"})


def test_services_build_no_envelope_error() -> None:
    services = modules(SRC, PACKAGE / "services")
    imports = sorted(
        f"{name} imports {target}"
        for name, path in services.items()
        for target in envelope_imports(path)
        if target in SERVICES_MAY_NOT_IMPORT_FROM_ENVELOPE or target.startswith("mail_imap_mcp.envelope")
    )
    assert imports == [], "raise a domain error of imap/; presentation/failures.py's REGISTRY words it"


#: The services that still reach ``imap/`` themselves, each with the reason; every other service speaks
#: ``mail/`` alone (its records, errors and the backend Protocols of ``mail/backend.py``, reached through
#: ``Call.mail``). A ratchet: a service that starts importing ``imap/`` fails, and one that stops must
#: leave the list. Issue 79 asks at most 5; the rest move as their IMAP steps become backend methods.
SERVICES_REACHING_IMAP = {
    "invitations": "reads the calendar part by BODYSTRUCTURE and imap/parts.py",
    "send_draft": "files the sent copy, a streamed APPEND (imap/budget.py), after the submission",
}


def test_services_import_no_imap_beyond_the_named_few() -> None:
    services = modules(SRC, PACKAGE / "services")
    reaching = {
        name.rpartition(".")[2]
        for name, path in services.items()
        if any(target.startswith("mail_imap_mcp.imap") for target in imported(path, name))
    }
    assert sorted(reaching - set(SERVICES_REACHING_IMAP)) == [], "speak mail/ (mail/backend.py), not imap/"
    assert sorted(set(SERVICES_REACHING_IMAP) - reaching) == [], "it speaks mail/ alone now: drop it here"


def test_the_imap_layer_names_no_setting() -> None:
    # ``config.setting(...)`` spells a setting as the user writes it: user wording, the registry's.
    imap = modules(SRC, PACKAGE / "imap")
    naming = sorted(name for name, path in imap.items() if ".setting(" in path.read_text(encoding="utf-8"))
    assert naming == []


def test_the_envelope_import_check_sees_envelope_errors(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from mail_imap_mcp.envelope import Issue, ToolFailure\nimport mail_imap_mcp.envelope.model\n"
    )
    assert list(envelope_imports(module)) == ["Issue", "ToolFailure", "mail_imap_mcp.envelope.model"]


#: The SDK's unpublished parts: reached only from mail_imap_mcp/sdk.py (checked by test_sdk_contract.py).
SDK_PRIVATE = (
    "session._connection",
    "._lowlevel_server",
    "mcp.server.mcpserver.tools.base",
    "mcp.server.mcpserver.utilities",
)


def test_the_sdks_unpublished_parts_are_reached_from_one_module() -> None:
    reaching = {
        name
        for name, path in modules(SRC, PACKAGE).items()
        if any(marker in path.read_text(encoding="utf-8") for marker in SDK_PRIVATE)
    }
    assert reaching == {"mail_imap_mcp.sdk"}


def test_the_command_line_starts_without_the_mcp_sdk() -> None:
    """``check``, ``config-example`` and ``--version`` load no MCP SDK, server or transport: importing
    them took 1.8 s of CPU per run, a third of it is left (``serve`` imports the rest itself). Nor do
    ``index``, ``login``, ``status`` and ``setup``: ``index`` took the SDK in through the operations' progress
    (1.1 CPU-seconds for ``index --status``, 0.35 without it)."""
    probe = (
        "import sys, mail_imap_mcp.cli, mail_imap_mcp.cli.index, mail_imap_mcp.cli.login, mail_imap_mcp.cli.setup\n"
        "heavy = ('mcp', 'mcp_types', 'starlette', 'uvicorn', 'mail_imap_mcp.server', 'mail_imap_mcp.transport')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


#: The functions that apply the failure registry (``presentation/failures.py``): a domain error in the
#: envelope's words. The tool runner (:func:`mail_imap_mcp.presentation.failures.run`) applies them to
#: every tool call; besides it, only the CLI's ``check`` (its own boundary), ``presentation/writes.py``
#: (a bulk write's per-mailbox refusals and a write's audit line), ``presentation/issues.py`` (the issue of
#: a step a service went on past), the resource reads of ``server.py`` and ``subscriptions/mailbox_resource.py`` and the
#: prompts' completions of ``prompts/registry.py`` (their own boundaries: no tool call) reach them.
REGISTRY_APPLIERS = frozenset({"REGISTRY", "tool_failure", "envelope_of", "failure_of"})
MAY_APPLY_THE_REGISTRY = frozenset(
    {
        "mail_imap_mcp.presentation.failures",
        "mail_imap_mcp.presentation.writes",
        "mail_imap_mcp.presentation.issues",
        "mail_imap_mcp.cli",
        "mail_imap_mcp.server",
        "mail_imap_mcp.subscriptions.mailbox_resource",
        "mail_imap_mcp.prompts.registry",
    }
)
FAILURES_MODULE = "mail_imap_mcp.presentation.failures"


def _forwarded(value: ast.expr, parameter: str) -> bool:
    """``value`` is the caller's own parameter, or that parameter kept as ``self._<parameter>`` (the pool
    makes its connections at their first use)."""
    if isinstance(value, ast.Attribute):
        return (
            value.attr == f"_{parameter}" and isinstance(value.value, ast.Name) and value.value.id == "self"
        )
    return isinstance(value, ast.Name) and value.id == parameter


def registry_uses(path: Path, name: str) -> Iterator[str]:
    """The registry's appliers ``path`` imports from ``presentation/failures.py`` or reaches as an
    attribute of that module, and every call that passes ``translate=`` (a connection's hook that once
    applied the registry under the tools; tests still give it to a bare connection)."""
    package = name.rpartition(".")[0]
    aliases: set[str] = set()
    for node in nodes_of(path.read_text(encoding="utf-8")):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                if base == FAILURES_MODULE and alias.name in REGISTRY_APPLIERS:
                    yield alias.name
                elif f"{base}.{alias.name}" == FAILURES_MODULE:
                    aliases.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            aliases.update(a.asname for a in node.names if a.name == FAILURES_MODULE and a.asname)
        elif isinstance(node, ast.Call):
            # The pool forwards its own parameter to its connections: only a value given here counts.
            given = [
                k for k in node.keywords if k.arg == "translate" and not _forwarded(k.value, "translate")
            ]
            yield from ("translate=" for _ in given)
    for node in nodes_of(path.read_text(encoding="utf-8")):
        if (
            isinstance(node, ast.Attribute)
            and node.attr in REGISTRY_APPLIERS
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
        ):
            yield node.attr


def test_services_return_records_and_only_presentation_words_them() -> None:
    """Issue 58 item 4: a service hands back what went wrong as a domain record (a failed step keeps its
    error: ``imap/step_failure.StepFailed``) and presentation words it; no service reaches the failure
    registry, neither by import (the layer rule) nor through the application (no ``AppContext.failure_of``
    nor any other applier of the registry on it)."""
    from mail_imap_mcp.app import AppContext

    services = PACKAGE / "services"
    reached = sorted(
        f"{name}: {node.attr}"
        for name, path in modules(SRC, services).items()
        for node in nodes_of(path.read_text(encoding="utf-8"))
        if isinstance(node, ast.Attribute) and node.attr in REGISTRY_APPLIERS
    )
    assert reached == []
    assert [name for name in REGISTRY_APPLIERS if hasattr(AppContext, name)] == []
    wrong = sorted(
        f"{name} imports {target}"
        for name, path in modules(SRC, services).items()
        for target in imported(path, name)
        if target == "mail_imap_mcp.presentation" or target.startswith("mail_imap_mcp.presentation.")
    )
    assert wrong == []


def test_the_failure_registry_is_applied_at_one_boundary() -> None:
    """Issue 34 item 5: a domain error leaves the IMAP layer as it is (no connection's ``translate``),
    and the tool runner words it, as httpx's ``map_httpcore_exceptions()`` does at its one boundary; no
    tool or service builds the failure the runner would build."""
    uses = sorted(
        f"{name}: {use}"
        for name, path in modules(SRC, PACKAGE).items()
        for use in registry_uses(path, name)
        if name not in MAY_APPLY_THE_REGISTRY or use == "translate="
    )
    assert uses == [], "raise the domain error: the tool runner (presentation/failures.run) words it"


def test_the_registry_check_sees_each_form(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from mail_imap_mcp.presentation.failures import envelope_of, run\n"
        "from mail_imap_mcp.presentation import failures as said\n"
        "said.tool_failure(x, None)\n"
        "said.run(h, a, b)\n"
        "AccountConnection('a', c, translate=f)\n"
        "AccountConnection('a', c, translate=translate)\n"
    )
    assert sorted(registry_uses(module, "mail_imap_mcp.tools.m")) == [
        "envelope_of",
        "tool_failure",
        "translate=",
    ]
    relative = tmp_path / "r.py"
    relative.write_text("from .failures import envelope_of\n")
    assert list(registry_uses(relative, "mail_imap_mcp.presentation.r")) == ["envelope_of"]


#: What asks the user or gates a capability: a tool reaches none of it (it asks through ``app.ask`` once,
#: and its capability's gate runs in the registry or where its connection is taken).
_ASKING_AND_GATES = frozenset(
    {
        "elicit",
        "confirmations",
        "approval_page",
        "asks_on_page",
        "require_approval",
        "require_send_approval",
        "on_page",
        "settle",
        "approval_way",
        "require_user",
        "progress_asked",
        "stop_asked",
        "client_can_ask_user",
        "user_approvals",
        "current_call",
        "permits",
        "gate",
        "Cancelled",
    }
)


def test_no_tool_module_asks_the_user_or_runs_a_gate_itself() -> None:
    found: dict[str, list[str]] = {}
    for path in tool_modules():
        if path.name in ("registry.py", "spec.py"):  # the declarations' readers, not tools
            continue
        names = [
            node.attr
            if isinstance(node, ast.Attribute)
            else node.id
            if isinstance(node, ast.Name)
            else alias.name
            for node in nodes_of(path.read_text(encoding="utf-8"))
            for alias in (node.names if isinstance(node, ast.ImportFrom) else [None])  # type: ignore[list-item]
            if isinstance(node, ast.Attribute | ast.Name) or alias is not None
        ]
        hits = sorted({name for name in names if name in _ASKING_AND_GATES})
        if hits:
            found[path.relative_to(PACKAGE).as_posix()] = hits
    assert found == {}, "a tool asks through app.ask and leaves gates to its capability"


def test_no_tool_module_imports_the_composition_root() -> None:
    """Issue 58 item 5: a tool (and the registry that lists them) uses its call (``call.Call``), which the
    per-call view provides (``tool_calls.py`` builds it), never ``app.py`` itself."""
    wrong = sorted(
        f"{name} imports {target}"
        for name, path in modules(SRC, PACKAGE / "tools").items()
        for target in imported(path, name)
        if target == "mail_imap_mcp.app" or target.startswith("mail_imap_mcp.app.")
    )
    assert wrong == []


#: Where the ways of asking, the page and the gates live: a tool module imports none of them (it hands ``app.ask`` an
#: ``asking.records.Ask`` or ``Confirm``; the registry builds the call's ``ask``).
_WAYS_OF_ASKING = (
    *(f"mail_imap_mcp.{way}" for way in _WAYS),
    "mail_imap_mcp.asking.page_server",
    "mail_imap_mcp.asking.review",
    "mail_imap_mcp.envelope.user_call",
)


def asking_imports(path: Path, name: str) -> list[str]:
    """The ways of asking ``path`` imports (modules, or names imported from them)."""
    return sorted(
        {
            target
            for target in imported(path, name)
            if any(target == way or target.startswith(f"{way}.") for way in _WAYS_OF_ASKING)
        }
    )


def test_the_asking_import_check_sees_each_form(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from mail_imap_mcp.asking.gate import ConfirmationGate\n"
        "import mail_imap_mcp.asking.page_server.page\n"
        "from mail_imap_mcp.envelope import user_call\n"
        "from mail_imap_mcp.asking.records import Confirm\n"
        "from mail_imap_mcp.asking import choose\n"
    )
    assert asking_imports(module, "mail_imap_mcp.tools.m") == [
        "mail_imap_mcp.asking.choose",
        "mail_imap_mcp.asking.gate",
        "mail_imap_mcp.asking.gate.ConfirmationGate",
        "mail_imap_mcp.asking.page_server.page",
        "mail_imap_mcp.envelope.user_call",
    ]


#: What an answer of ``app.ask`` is, or holds: testing a result against one of them picks a route.
_ROUTE_TYPES = frozenset({"Operation", "Done", "Waiting", "Asked"})


def route_picks(path: Path, name: str) -> list[str]:
    """Where ``path`` picks a way of asking: an import of a way (:data:`_WAYS_OF_ASKING`), a read of an
    error's ``details``, an ``isinstance`` against an answer of ``app.ask`` (:data:`_ROUTE_TYPES`)."""
    found: list[tuple[int, str]] = []
    for node in nodes_of(path.read_text(encoding="utf-8")):
        if isinstance(node, ast.Attribute) and node.attr == "details" and isinstance(node.ctx, ast.Load):
            found.append((node.lineno, f"line {node.lineno} reads {ast.unparse(node)}"))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "isinstance"
            and len(node.args) == 2
            and {part.id for part in ast.walk(node.args[1]) if isinstance(part, ast.Name)} & _ROUTE_TYPES
        ):
            found.append((node.lineno, f"line {node.lineno} tests {ast.unparse(node)}"))
    return [f"imports {target}" for target in asking_imports(path, name)] + [
        said for _, said in sorted(found)
    ]


def test_no_tool_picks_a_route() -> None:
    """Issue 79 item 2: a tool hands ``app.ask`` a record and words the ``Done`` or ``Waiting`` it gets back
    (``.answer(waiting=...)``); which way asked the user, and what to do when one cannot, is ``asking/``'s
    (``asking.choose``). No tool imports a way, reads a failure's details or tests an answer's type."""
    found = {
        name: route_picks(path, name)
        for name, path in modules(SRC, PACKAGE / "tools").items()
        if not name.endswith((".registry", ".spec")) and route_picks(path, name)
    }
    assert found == {}, "a tool asks through app.ask and words Done or Waiting with .answer()"


def test_the_route_check_sees_each_form(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from mail_imap_mcp.asking.choose import Way\n"
        "def handle(app, asked):\n"
        "    try:\n"
        "        done = app.ask(asked)\n"
        "    except ToolFailure as failure:\n"
        "        if failure.details.get('approval') == 'unavailable':\n"
        "            return None\n"
        "    return done if not isinstance(done, (Operation, int)) else None\n"
    )
    assert route_picks(module, "mail_imap_mcp.tools.m") == [
        "imports mail_imap_mcp.asking.choose",
        "imports mail_imap_mcp.asking.choose.Way",
        "line 6 reads failure.details",
        "line 8 tests isinstance(done, (Operation, int))",
    ]


#: The only context variables: what a log line and a progress notification need of the call under way.
#: Whether the client can ask its user, what the user approved, the call's arguments, whether it listens
#: for progress and whether a waiting caller stopped are handed down with the call (``UserCall``,
#: ``ConfirmationGate.for_call``, ``app.ask``), never carried by a ContextVar.
_CONTEXT_VARIABLES = {"current_request_id", "progress_reporter"}


def test_no_context_variable_holds_approval_state() -> None:
    found: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        for node in nodes_of(path.read_text(encoding="utf-8")):
            if isinstance(node, ast.AnnAssign | ast.Assign) and "ContextVar(" in ast.unparse(
                node.value or node
            ):
                targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
                found |= {ast.unparse(target) for target in targets}
    assert found == _CONTEXT_VARIABLES


#: What a keychain, a file lock or a token needs: ``config/`` holds settings and imports none of it.
_NO_SETTING = ("keyring", "jeepney", "fcntl", "msvcrt")


def test_config_holds_settings_alone() -> None:
    """``config/`` is the pydantic settings every layer reads: it imports no keyring, no file lock and
    nothing of the package outside itself (no token code of ``net/``, nothing of ``credentials/``)."""
    wrong = sorted(
        f"{name} imports {target}"
        for name, path in modules(SRC, PACKAGE).items()
        if in_package(name, ("mail_imap_mcp.config",))
        for target in imported(path, name)
        if target.split(".")[0] in _NO_SETTING
        or (target.startswith("mail_imap_mcp.") and not target.startswith("mail_imap_mcp.config"))
    )
    assert wrong == []


#: What a protocol may take from ``net/tokens.py``: the types of what it is handed, nothing that fetches.
_CREDENTIAL_TYPES = frozenset(
    {"AccessToken", "Credentials", "PasswordLogin", "TokenSource", "TokenUnavailable", "SignInRequired"}
)
#: What builds credentials: outside ``credentials/``, only the application root and the command line.
_CREDENTIAL_BUILDERS = frozenset(
    {
        "Logins",
        "credentials_for",
        "SharedToken",
        "FixedToken",
        "token_source_for",
        "command_fetcher",
        "sign_in_fetcher",
        "client_credentials_fetcher",
    }
)
_TOKEN_MODULES = ("mail_imap_mcp.net.tokens", "mail_imap_mcp.net.oauth")
_MAY_BUILD_CREDENTIALS = ("mail_imap_mcp.app", "mail_imap_mcp.cli", "mail_imap_mcp.credentials")


def names_used(path: Path) -> set[str]:
    """Every name ``path`` imports, defines, reads or reaches as an attribute."""
    found: set[str] = set()
    for node in nodes_of(path.read_text(encoding="utf-8")):
        if isinstance(node, ast.alias):
            found.add(node.asname or node.name.rpartition(".")[2])
            found.add(node.name.rpartition(".")[2])
        elif isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            found.add(node.name)
    return found


def token_sources_defined(path: Path) -> list[str]:
    """The classes of ``path`` that are token sources (a ``token`` and an ``invalidate`` method)."""
    return [
        node.name
        for node in nodes_of(path.read_text(encoding="utf-8"))
        if isinstance(node, ast.ClassDef)
        and {"token", "invalidate"} <= {item.name for item in node.body if isinstance(item, ast.FunctionDef)}
    ]


@pytest.mark.parametrize("protocol", ["imap", "smtp"])
def test_a_protocol_builds_no_token_source(protocol: str) -> None:
    """A protocol takes the account's credentials from the application root: it imports nothing of
    ``credentials/``, takes only the types of ``net/tokens.py`` and ``SignInRequired``, and defines
    no token source of its own."""
    wrong: list[str] = []
    for name, path in modules(SRC, PACKAGE).items():
        if not in_package(name, (f"mail_imap_mcp.{protocol}",)):
            continue
        for node in nodes_of(path.read_text(encoding="utf-8")):
            module = (node.module or "") if isinstance(node, ast.ImportFrom) else ""
            if in_package(module, ("mail_imap_mcp.credentials",)):
                wrong.append(f"{name} imports {module}")
            elif isinstance(node, ast.ImportFrom) and module in _TOKEN_MODULES:
                wrong += [
                    f"{name} imports {module}.{alias.name}"
                    for alias in node.names
                    if alias.name not in _CREDENTIAL_TYPES
                ]
        wrong += [f"{name} defines the token source {cls}" for cls in token_sources_defined(path)]
    assert wrong == []


def test_credentials_are_built_by_the_application_root_alone() -> None:
    """Token sources and the fetchers behind them are built in ``credentials/``, handed out by the
    application root (``app/``) and the command line (``cli/``): no protocol, service or transport
    builds one (the send path takes the credentials the root gave the account's connections)."""
    wrong = sorted(
        f"{name} uses {used}"
        for name, path in modules(SRC, PACKAGE).items()
        if not in_package(name, _MAY_BUILD_CREDENTIALS)
        for used in names_used(path) & _CREDENTIAL_BUILDERS
    )
    assert wrong == []


#: The gate's own module: every other runs a capability's gate through the capability it was handed
#: (a tool's own, at the call in ``tool_calls.py`` or at its write connection), never one it names.
GATES_DEFINED_IN = "mail_imap_mcp.capabilities"
#: Where a write tool's step reaches its write connection: the tool's module and what it calls below.
_STEPS_BELOW_TOOLS = ("mail_imap_mcp.services", "mail_imap_mcp.operations")


def named_gates(source: str) -> list[str]:
    """Each ``WRITING.gate(...)`` (or ``.permits``, ``.allows``) of ``source``: a capability's gate run by
    its name, where the gate of the call's own capability should run."""
    return sorted(
        f"{node.func.value.id}.{node.func.attr}"
        for node in nodes_of(source)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in {"gate", "permits", "allows"}
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id.isupper()
    )


def reaches_write_connection(tool_module: str) -> bool:
    """Whether ``tool_module``'s step (in a tool's package, any of its modules), or a service or operation it
    imports (however deep), takes a write connection (``app.write_connection``), where the gate of a
    capability checked at the connection runs."""
    known = modules(SRC, PACKAGE)
    todo, seen = [tool_module, f"{tool_module}_models"], set()
    while todo:
        name = todo.pop()
        if name in seen or name not in known:
            continue
        seen.add(name)
        if ".write_connection(" in known[name].read_text(encoding="utf-8"):
            return True
        todo += [
            target
            for target in project_imports(known[name], name)
            if in_package(target, _STEPS_BELOW_TOOLS) or own_tool(target) == own_tool(tool_module)
        ]
    return False


def test_a_capabilitys_gate_is_its_own() -> None:
    """A capability's gate refuses wherever its switch is off (tests/pure/test_capabilities.py's table);
    here, that the gate which runs is the tool's own: no module runs a capability's gate by name, and every
    tool of a switched capability checked at the connection takes one, so its gate runs before it writes.
    A capability checked at the call is gated by ``tool_calls.py`` before its tool."""
    from mail_imap_mcp.tools.registry import TOOLS

    named = {
        name: found
        for name, path in modules(SRC, PACKAGE).items()
        if name != GATES_DEFINED_IN and (found := named_gates(path.read_text(encoding="utf-8")))
    }
    assert named == {}
    unchecked = sorted(
        spec.name
        for spec in TOOLS
        if spec.capability.setting is not None
        and spec.capability.checked == "connection"
        and not reaches_write_connection(spec.handle.__module__)
    )
    assert unchecked == []


def test_the_gate_checks_see_a_gate_run_by_name_and_a_tool_that_takes_no_write_connection() -> None:
    assert named_gates("WRITING.gate(config, account)\nspec.capability.gate(config, account)\n") == [
        "WRITING.gate"
    ]
    # imap_cancel_operation takes none (stopping an operation has no switch: it is checked at the call) ...
    assert not reaches_write_connection("mail_imap_mcp.tools.cancel_operation")
    # ... imap_update_message_flags takes one through the services it imports.
    assert reaches_write_connection("mail_imap_mcp.tools.update_message_flags")
