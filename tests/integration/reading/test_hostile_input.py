"""Hostile input: every tool's arguments fuzzed from its published ``inputSchema``, plus hand-written attacks.

Each call goes MCP client -> server -> a recording TCP relay -> a real Dovecot (``security = "plain"`` on
loopback, so the relay sees readable protocol bytes). What this module establishes:

* Every call returns an envelope that validates against the tool's ``outputSchema`` and is never an
  ``internal`` error; an ``invalid_input`` failure names the offending parameter.
* Nothing reaches the IMAP server that the user did not mean. After every call the bytes the server was
  sent are parsed as IMAP commands and checked: they parse as whole, well-formed commands (an injected
  CRLF would show up as a stray command), only read-only commands are used (``EXAMINE``, never
  ``SELECT``; ``BODY.PEEK``, never ``BODY[...]``), the mailbox, UID and every search string arrive exactly
  as given, rejected input sends nothing at all, and Dovecot never answers ``BAD``.
* Read tools never change flags: a snapshot of every message's flags in every mailbox (EXAMINE, then
  FETCH FLAGS of all UIDs, ignoring ``\\Recent``) is the same before and after the fuzz run.
* The password appears nowhere: not in envelopes (this module's scenarios, and at the end of the session
  every envelope any test saw), log records (DEBUG, including imapclient's protocol log), a stdio
  server's stderr, or ``mail-imap-mcp check`` output.

Schema fuzzing uses hypothesis-jsonschema for every property of the (flat) input schema; the object
itself is assembled with ``st.fixed_dictionaries`` because hypothesis-jsonschema 0.23's object strategy
relies on a Hypothesis internal (``many.more()``) that current Hypothesis no longer has.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import logging
import os
import socket
import subprocess
import sys
import unicodedata
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema
from mcp import Client

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.config import Config
from mail_imap_mcp.mail.ids import MessageRef, parse_message_id
from mail_imap_mcp.query import parse, search_keys
from mail_imap_mcp.query.structure import split
from mail_imap_mcp.server import build_server
from mail_imap_mcp.state import ANONYMOUS_CALLER
from tests.support.accounts import PASSWORD_ENV, config_toml
from tests.support.clients.envelope_client import SEEN, EnvelopeClient
from tests.support.clients.in_process import make_config
from tests.support.mail.cursors import forge_cursor
from tests.support.mail.mail_state import flag_snapshot
from tests.support.mail.mailgen import corpus, plain_message
from tests.support.patience import patient
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.oauth2 import IntrospectionEndpoint, TokenHelper, new_token
from tests.support.wire import Atom, Command, ImapRecorder, check_traffic, examined, flat_tokens, token_bytes

pytestmark = pytest.mark.anyio

SERVER = str(Path(sys.executable).parent / "mail-imap-mcp")

#: Examples per tool and strategy family in the fuzz run (every read tool x 3 families), times
#: MIM_FUZZ_SCALE (default 1; e.g. 10 for a long exploratory run with MIM_FUZZ_RANDOM=1).
FUZZ_SCALE = float(os.environ.get("MIM_FUZZ_SCALE", "1"))
FUZZ_EXAMPLES = {
    family: max(1, round(count * FUZZ_SCALE))
    for family, count in {"schema": 70, "mutated": 90, "hostile": 50}.items()
}
FUZZ_SETTINGS = settings(
    deadline=None,
    database=None,
    # The same examples every run (a failure reproduces, the run time is stable) unless asked otherwise.
    derandomize=os.environ.get("MIM_FUZZ_RANDOM") != "1",
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)

# ---------------------------------------------------------------------------------------------------
# The environment: two users, one mailbox tree each, an MCP client talking through the relay
# ---------------------------------------------------------------------------------------------------


@dataclass
class FuzzEnv:
    dovecot: Dovecot
    user: str
    other_user: str
    recorder: ImapRecorder
    app: AppContext
    client: EnvelopeClient
    message_ids: list[str]
    other_message_ids: list[str]
    mailboxes: list[str]
    cursor: str
    calls: int = 0

    async def call(self, tool: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], list[Command]]:
        """Call a tool, check the envelope and the traffic it caused; return both."""
        self.recorder.take()
        envelope = await self.client.call(tool, arguments)
        commands = check_traffic(self.recorder.take())
        self.calls += 1
        check_call(tool, arguments, envelope, commands)
        return envelope, commands


#: Mailbox names that are awkward for IMAP quoting, modified UTF-7 and message-id parsing. (Dovecot 2.3
#: crashes on a name holding both '"' and '\\', so those two get a mailbox each.)
MAILBOXES = [
    "INBOX",
    "Archive/2024",
    "Entwürfe",
    'Quote"d',
    "Back\\slash",
    "&Ampersand & Co",
    "Colon: x:1:2",
    "Per%cent*",
]


def seed_user(dovecot: Dovecot, user: str, *, marker: str, size: int = 24) -> None:
    messages = [
        plain_message(
            subject=f"{marker} message {i}", body=f"{marker} body {i}\n", message_id=f"<{marker}{i}@x>"
        )
        for i in range(size)
    ]
    flags = ["\\Seen", "", "\\Flagged", "\\Seen \\Answered", "$Important", ""]
    dovecot.seed(user, "INBOX", messages, flags=lambda i: flags[i % len(flags)])
    for mailbox in MAILBOXES[1:]:
        dovecot.seed(user, mailbox, list(corpus(5, seed=len(mailbox))), flags=lambda i: flags[i % len(flags)])


def account_settings(dovecot: Dovecot, user: str, port: int) -> dict[str, Any]:
    return {
        "host": dovecot.host,
        "port": port,
        "security": "plain",
        "username": user,
        "password_env": PASSWORD_ENV,
        "connect_timeout_s": 5,
        "command_timeout_s": 10,
    }


@contextlib.asynccontextmanager
async def fuzz_env(dovecot: Dovecot) -> AsyncIterator[FuzzEnv]:
    user, other = dovecot.new_user(), dovecot.new_user()
    seed_user(dovecot, user, marker="mine")
    seed_user(dovecot, other, marker="theirs")
    # Make the two INBOXes' UIDVALIDITY differ, so an id moved to the other account is a conflict.
    imap = dovecot.connect(other)
    imap.select_folder("INBOX", readonly=True)
    imap.logout()
    dovecot.set_uidvalidity(other, "INBOX", 4_000_000_000)
    recorder = ImapRecorder(dovecot.plain_port)
    config = make_config(
        {
            "default": account_settings(dovecot, user, recorder.port),
            "other": account_settings(dovecot, other, recorder.port),
        }
    )
    app = AppContext.from_config(config)
    try:
        async with Client(build_server(config, app)) as session:
            client = EnvelopeClient(session)
            for tool in (await session.list_tools()).tools:
                PARAMETERS[tool.name] = frozenset(tool.input_schema.get("properties", {}))
            mine = await client.ok("imap_search_messages", {"limit": 5})
            theirs = await client.ok("imap_search_messages", {"account_id": "other", "limit": 5})
            env = FuzzEnv(
                dovecot=dovecot,
                user=user,
                other_user=other,
                recorder=recorder,
                app=app,
                client=client,
                message_ids=[m["message_id"] for m in mine["messages"]],
                other_message_ids=[m["message_id"] for m in theirs["messages"]],
                mailboxes=MAILBOXES,
                cursor=mine["next_cursor"],
            )
            recorder.take()
            yield env
    finally:
        await anyio.to_thread.run_sync(app.close)  # build_server leaves a shared app to its owner
        recorder.close()


# ---------------------------------------------------------------------------------------------------
# What every call must satisfy
# ---------------------------------------------------------------------------------------------------

#: Parameter names per tool (from the published input schemas; filled in by fuzz_env).
PARAMETERS: dict[str, frozenset[str]] = {}
_SEARCH_KEYS = {"from": "FROM", "to": "TO", "cc": "CC", "subject": "SUBJECT", "body": "BODY"}


def check_call(
    tool: str, arguments: dict[str, Any], envelope: dict[str, Any], commands: list[Command]
) -> None:
    """Per-call invariants on top of the envelope contract (checked by the client) and check_traffic."""
    context = f"{tool}({json.dumps(arguments, ensure_ascii=True)[:500]})"
    if envelope["success"]:
        data = envelope["data"]
    else:
        error = envelope["error"]
        assert error["code"] != "internal", f"{context} -> internal error: {error['message']}"
        if error["code"] == "invalid_input":
            parameter = error["details"].get("parameter")
            # (An unknown key that is literally "" is named as "".)
            assert parameter is not None, f"{context}: invalid_input must name the parameter: {error}"
            known = set(arguments) | set(PARAMETERS.get(tool, ()))
            assert parameter in known, (
                f"{context}: {parameter!r} is neither an argument given nor a parameter"
            )
            assert parameter in error["message"], error["message"]
            # Whether a part id names an attachment, and which modes fit it, only the message's structure
            # says: imap_get_attachment reads it (one FETCH) before it can refuse those two.
            if not (tool == "imap_get_attachment" and parameter in {"part_id", "mode"}):
                assert not commands, f"{context}: rejected input still reached the server: {commands}"
            else:
                assert all(c.verb in {"NOOP", "STATUS", "EXAMINE", "UID FETCH"} for c in commands), commands
        if error["code"] == "not_found" and error["details"].get("parameter") == "account_id":
            assert not commands, f"{context}: an unknown account still caused IMAP traffic"
        return
    if tool == "imap_search_messages":
        query = arguments.get("query")
        # No mailbox named: INBOX, or every mailbox with a query (its in: resolved by a LIST).
        default = "INBOX" if query is None else "*"
        named = arguments.get("mailboxes") or [arguments.get("mailbox") or default]
        if "*" not in named:  # with '*' the LIST decides
            assert set(examined(commands)) <= set(named), (context, examined(commands))
        searches = [c for c in commands if c.verb in {"UID SEARCH", "UID SORT"}]
        if query is not None:
            # The query reaches the server as its parsed terms, each value verbatim (in NFC).
            server, _ = split(parse(query, today=datetime.now(UTC).date()).tree)
            keys = search_keys(server)
            terms = {(k.decode(), v.encode()) for k, v in itertools.pairwise(keys) if isinstance(v, str)}
            for search in searches:
                tokens = list(flat_tokens(search.args))
                pairs = {
                    (a.text.upper(), token_bytes(b))
                    for a, b in itertools.pairwise(tokens)
                    if isinstance(a, Atom)
                }
                assert terms <= pairs, (
                    f"{context}: the query's terms did not reach the server: {search.raw!r}"
                )
        for name, key in _SEARCH_KEYS.items():
            if arguments.get(name) is None:
                continue
            # Verbatim up to Unicode normalisation: search text is sent in NFC.
            wanted = unicodedata.normalize("NFC", arguments[name]).encode("utf-8")
            for search in searches:
                tokens = list(flat_tokens(search.args))
                pairs = {
                    (a.text.upper(), token_bytes(b))
                    for a, b in itertools.pairwise(tokens)
                    if isinstance(a, Atom)
                }
                assert (key, wanted) in pairs, (
                    f"{context}: {name} did not reach the server verbatim (in NFC): {search.raw!r}"
                )
        accounts = {m["message_id"].split(":")[1] for m in data["messages"]}
        assert accounts <= {"default", "other"} and data.get("account_id", "default") in {"default", "other"}
    elif tool == "imap_get_thread":
        ref = parse_message_id(arguments["message_id"], ANONYMOUS_CALLER)
        assert examined(commands)[:1] in ([], [ref.mailbox]), (context, examined(commands))
    elif tool in {"imap_get_message", "imap_get_message_raw", "imap_get_attachment"}:
        ref = parse_message_id(arguments["message_id"], ANONYMOUS_CALLER)
        assert all(name == ref.mailbox for name in examined(commands)), (context, examined(commands))
        for fetch in (c for c in commands if c.verb == "UID FETCH"):
            assert fetch.args[0] == Atom(str(ref.uid)), f"{context}: fetched {fetch.raw!r}"


# ---------------------------------------------------------------------------------------------------
# Strategies
# ---------------------------------------------------------------------------------------------------

#: Strings that mean something to IMAP, to a shell, to JSON or to a terminal.
HOSTILE_STRINGS = [
    "",
    " ",
    "x\r\nA001 LOGOUT",
    "INBOX\r\n",
    "\r\n",
    "\n",
    "\r",
    "\x00",
    "a\x00b",
    '"',
    'a"b',
    '" OR ALL "',
    "\\",
    "a\\",
    '\\"',
    "{5}\r\nhello",
    "{5}",
    "{5+}\r\nhello",
    "~{3}\r\nabc",
    "(",
    ")",
    "[",
    "]",
    "*",
    "%",
    "NIL",
    "&",
    "&-",
    "&Jjo-",
    "&AGE-",
    "INBOX/../../etc",
    "\x1b[2J\x07",
    "\u202eevil",
    "\ufeff",
    "😀" * 3,
    "é" * 600,
    "x" * 5000,
    "imap:default:INBOX:1:1",
]
HOSTILE_NUMBERS = [
    -1,
    0,
    1,
    2**31 - 1,
    2**31,
    2**31 + 1,
    2**32,
    2**53 + 1,
    2**63,
    2**64,
    10**30,
    -(10**30),
    1.5,
    1e308,
    -0.0,
]
HOSTILE_OTHERS: list[Any] = [None, True, False, [], {}, [1, 2], {"a": 1}, "1", "true", "null"]
HOSTILE_VALUES = st.sampled_from([*HOSTILE_STRINGS, *HOSTILE_NUMBERS, *HOSTILE_OTHERS])
UNKNOWN_KEYS = st.sampled_from(
    ["acount_id", "__proto__", "mailbox ", "MAILBOX", "", "x" * 300, "limit\x00", "messageId"]
)


def arguments_from_schema(schema: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Objects valid against a flat input schema (scalars and lists of scalars): hypothesis-jsonschema
    draws each property's value."""
    assert schema.get("type") == "object" and schema.get("additionalProperties") is False
    properties: dict[str, Any] = schema.get("properties", {})
    # Flat: scalars, or lists of scalars (a search's mailboxes).
    flat = all(
        p.get("type") != "object" and (p.get("type") != "array" or p["items"].get("type") != "object")
        for p in properties.values()
    )
    assert flat, "schema is not flat"
    required = set(schema.get("required", []))
    values = {name: from_schema(prop) for name, prop in properties.items()}
    return st.fixed_dictionaries(
        {k: v for k, v in values.items() if k in required},
        optional={k: v for k, v in values.items() if k not in required},
    )


def mutated_arguments(env: FuzzEnv, tool: str) -> st.SearchStrategy[dict[str, Any]]:
    """Realistic arguments (real ids, mailboxes, cursors) with one part replaced by something hostile."""
    text = st.one_of(st.sampled_from(HOSTILE_STRINGS), st.text(max_size=40))
    ref = st.sampled_from(env.message_ids + env.other_message_ids).map(
        lambda text: parse_message_id(text, ANONYMOUS_CALLER)
    )

    @st.composite
    def message_id(draw: st.DrawFn) -> str:
        base = draw(ref)
        parts = ["account", "mailbox", "uidvalidity", "uid", "suffix", "prefix", "none", "none", "none"]
        part = draw(st.sampled_from(parts))
        account, mailbox = base.account_id, base.mailbox
        uidvalidity: Any = base.uidvalidity
        uid: Any = base.uid
        if part == "account":
            account = draw(st.one_of(st.sampled_from(["default", "other", "nope", "DEFAULT", ""]), text))
        elif part == "mailbox":
            mailbox = draw(st.one_of(st.sampled_from(env.mailboxes), text))
        elif part == "uidvalidity":
            uidvalidity = draw(st.one_of(st.sampled_from(HOSTILE_NUMBERS), text))
        elif part == "uid":
            uid = draw(st.one_of(st.integers(-5, 2**40), st.sampled_from(HOSTILE_NUMBERS), text))
        built = f"imap:{account}:{mailbox}:{uidvalidity}:{uid}"
        if part == "suffix":
            built += draw(text)
        elif part == "prefix":
            built = draw(text) + built
        return built

    json_values = st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
        max_leaves=5,
    )
    cursor_fields = st.sampled_from(
        [
            "account_id",
            "mailbox",
            "uidvalidity",
            "filter_digest",
            "upper_uid",
            "anchor_uid",
            "total",
            "returned",
            "v",
        ]
    )
    cursor = st.one_of(
        st.just(env.cursor),
        st.builds(forge_cursor, st.just(env.cursor), st.dictionaries(cursor_fields, json_values, min_size=1)),
        st.integers(1, len(env.cursor) - 1).map(lambda n: env.cursor[:n]),
        st.sampled_from(HOSTILE_STRINGS),
    )
    mailbox = st.one_of(st.sampled_from(env.mailboxes), st.sampled_from(env.mailboxes), text)
    account = st.sampled_from(["default", "default", "other", "nope"])
    if tool == "imap_list_accounts":
        return st.just({})
    if tool == "imap_list_mailboxes":
        return st.fixed_dictionaries({}, optional={"account_id": account, "include_counts": st.booleans()})
    if tool == "imap_search_messages":
        return st.fixed_dictionaries(
            {},
            optional={
                "account_id": account,
                "mailbox": mailbox,
                "cursor": cursor,
                "subject": text,
                "from": text,
                "body": text,
                "has_keyword": text,
                "limit": st.integers(1, 100),
                "sort": st.sampled_from(["arrival", "date", "size"]),
                "mailboxes": st.lists(st.one_of(st.just("*"), mailbox), min_size=0, max_size=3),
                "fields": st.sampled_from(["compact", "full"]),
            },
        )
    if tool == "imap_get_thread":
        return st.fixed_dictionaries(
            {"message_id": message_id()},
            optional={"limit": st.integers(0, 101), "snippet_chars": st.integers(-1, 501)},
        )
    if tool == "imap_get_message":
        return st.fixed_dictionaries(
            {"message_id": message_id()},
            optional={
                "body_format": st.sampled_from(["text", "markdown", "html"]),
                "fields": st.sampled_from(["compact", "full"]),
            },
        )
    if tool == "imap_get_attachment":
        return st.fixed_dictionaries(
            {"message_id": message_id(), "part_id": st.one_of(st.sampled_from(["1", "2", "1.2", "9"]), text)},
            optional={
                "mode": st.sampled_from(["text", "image", "bytes"]),
                "offset": st.integers(-1, 10**6),
                "max_chars": st.integers(99, 10**5),
                "offset_bytes": st.integers(-1, 2**32),
                "max_bytes": st.integers(-1, 2**17),
            },
        )
    return st.fixed_dictionaries(
        {"message_id": message_id()},
        optional={"offset_bytes": st.integers(-1, 2**32), "max_bytes": st.integers(-1, 2**17)},
    )


def hostile_arguments(schema: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """A valid object with one value replaced by a hostile one, or an unknown key added."""
    names = sorted(schema.get("properties", {}))

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        arguments = draw(arguments_from_schema(schema))
        if names and draw(st.booleans()):
            arguments[draw(st.sampled_from(names))] = draw(HOSTILE_VALUES)
        else:
            arguments[draw(UNKNOWN_KEYS)] = draw(HOSTILE_VALUES)
        return arguments

    return build()


# ---------------------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------------------


@pytest.mark.slow
async def test_fuzzed_arguments_of_every_tool_give_valid_envelopes_and_send_only_what_was_meant(
    dovecot: Dovecot,
) -> None:
    async with fuzz_env(dovecot) as env:
        schemas = {t.name: t.input_schema for t in (await env.client.client.list_tools()).tools}
        before = {user: flag_snapshot(dovecot, user) for user in (env.user, env.other_user)}
        outcomes: dict[str, int] = {}

        def run(tool: str, family: str, strategy: st.SearchStrategy[dict[str, Any]]) -> None:
            @settings(FUZZ_SETTINGS, max_examples=FUZZ_EXAMPLES[family])
            @given(strategy)
            def one_call(arguments: dict[str, Any]) -> None:
                envelope, _ = anyio.from_thread.run(env.call, tool, arguments)
                key = "ok" if envelope["success"] else envelope["error"]["code"]
                outcomes[key] = outcomes.get(key, 0) + 1

            one_call()

        for tool, schema in sorted(schemas.items()):
            families: dict[str, st.SearchStrategy[dict[str, Any]]] = {
                "schema": arguments_from_schema(schema),
                "mutated": mutated_arguments(env, tool),
                "hostile": hostile_arguments(schema),
            }
            for family, strategy in families.items():
                await anyio.to_thread.run_sync(run, tool, family, strategy)

        after = {user: flag_snapshot(dovecot, user) for user in (env.user, env.other_user)}
        assert after == before, "a read tool changed flags"
        # The fuzzer must have reached the server and the interesting outcomes, not only validation.
        # (Thresholds scale with the examples: they were 200, 200, 20, 5 and 2000 at 600 per tool.)
        per_tool = sum(FUZZ_EXAMPLES.values()) / 600
        assert outcomes.get("ok", 0) > 200 * per_tool and outcomes.get("invalid_input", 0) > 200 * per_tool, (
            outcomes
        )
        assert outcomes.get("not_found", 0) > 20 * per_tool and outcomes.get("conflict", 0) > 5 * per_tool, (
            outcomes
        )
        assert env.calls > 2000 * per_tool
        print(f"fuzz: {env.calls} calls, outcomes {outcomes}")


@dataclass(frozen=True)
class Case:
    """One hand-written call and the outcome it must have (``"ok"`` or an error code)."""

    name: str
    tool: str
    arguments: dict[str, Any]
    outcome: str
    parameter: str | None = None  # the parameter an invalid_input must name


def string_parameters(schemas: dict[str, dict[str, Any]]) -> list[tuple[str, str]]:
    return [
        (tool, name)
        for tool, schema in sorted(schemas.items())
        for name, prop in sorted(schema.get("properties", {}).items())
        if prop.get("type") == "string"
    ]


async def run_cases(env: FuzzEnv, cases: list[Case]) -> None:
    failures = []
    for case in cases:
        envelope, _ = await env.call(case.tool, case.arguments)
        outcome = "ok" if envelope["success"] else envelope["error"]["code"]
        if outcome != case.outcome:
            failures.append(f"{case.name}: expected {case.outcome}, got {outcome}: {envelope['summary']}")
        elif case.parameter is not None and envelope["error"]["details"].get("parameter") != case.parameter:
            failures.append(
                f"{case.name}: invalid_input names {envelope['error']['details']} not {case.parameter}"
            )
    assert not failures, "\n".join(failures)


@pytest.mark.slow
async def test_crlf_nul_and_imap_syntax_in_every_string_parameter(dovecot: Dovecot) -> None:
    async with fuzz_env(dovecot) as env:
        schemas = {t.name: t.input_schema for t in (await env.client.client.list_tools()).tools}
        base: dict[str, dict[str, Any]] = {
            "imap_get_message": {"message_id": env.message_ids[0]},
            "imap_get_message_raw": {"message_id": env.message_ids[0]},
            "imap_get_attachment": {"message_id": env.message_ids[0], "part_id": "2"},
            "imap_search_messages": {"limit": 1, "snippet_chars": 0},
        }
        tried = 0
        for tool, name in string_parameters(schemas):
            for value in HOSTILE_STRINGS:
                arguments = {**base.get(tool, {}), name: value}
                envelope, commands = await env.call(tool, arguments)
                tried += 1
                if not envelope["success"] and envelope["error"]["code"] == "invalid_input":
                    continue
                # Accepted: whatever was sent carried the value as one string token (check_call/traffic).
                if name == "mailbox" and value != "*":  # '*': every mailbox the LIST names
                    assert set(examined(commands)) <= {value}, (value, examined(commands))
        assert tried == len(string_parameters(schemas)) * len(HOSTILE_STRINGS)


async def test_absurd_numbers_wrong_types_and_unknown_keys_are_invalid_input_naming_the_parameter(
    dovecot: Dovecot,
) -> None:
    async with fuzz_env(dovecot) as env:
        mid = env.message_ids[0]
        cases = [
            Case("limit zero", "imap_search_messages", {"limit": 0}, "invalid_input", "limit"),
            Case("limit huge", "imap_search_messages", {"limit": 10**30}, "invalid_input", "limit"),
            Case("limit float", "imap_search_messages", {"limit": 1.5}, "invalid_input", "limit"),
            Case("limit string", "imap_search_messages", {"limit": "10; DROP"}, "invalid_input", "limit"),
            Case("limit null", "imap_search_messages", {"limit": None}, "invalid_input", "limit"),
            Case(
                "last_days negative", "imap_search_messages", {"last_days": -1}, "invalid_input", "last_days"
            ),
            Case(
                "larger 2^63",
                "imap_search_messages",
                {"larger_than_bytes": 2**63},
                "invalid_input",
                "larger_than_bytes",
            ),
            Case("since garbage", "imap_search_messages", {"since": "2024-13-45"}, "invalid_input", "since"),
            Case("since list", "imap_search_messages", {"since": ["2024-01-01"]}, "invalid_input", "since"),
            Case(
                "snippet -1", "imap_search_messages", {"snippet_chars": -1}, "invalid_input", "snippet_chars"
            ),
            Case(
                "mailbox object", "imap_search_messages", {"mailbox": {"$ne": 1}}, "invalid_input", "mailbox"
            ),
            Case("unknown key", "imap_search_messages", {"subjekt": "x"}, "invalid_input", "subjekt"),
            Case(
                "proto key",
                "imap_list_mailboxes",
                {"__proto__": {"admin": True}},
                "invalid_input",
                "__proto__",
            ),
            Case("any key to list_accounts", "imap_list_accounts", {"x": 1}, "invalid_input", "x"),
            Case(
                "include_counts string",
                "imap_list_mailboxes",
                {"include_counts": "maybe"},
                "invalid_input",
                "include_counts",
            ),
            Case(
                "body_max_chars 0",
                "imap_get_message",
                {"message_id": mid, "body_max_chars": 0},
                "invalid_input",
                "body_max_chars",
            ),
            Case(
                "body_max_chars 2^64",
                "imap_get_message",
                {"message_id": mid, "body_max_chars": 2**64},
                "invalid_input",
                "body_max_chars",
            ),
            Case(
                "body_format evil",
                "imap_get_message",
                {"message_id": mid, "body_format": "raw"},
                "invalid_input",
                "body_format",
            ),
            Case(
                "offset negative",
                "imap_get_message_raw",
                {"message_id": mid, "offset_bytes": -1},
                "invalid_input",
                "offset_bytes",
            ),
            Case(
                "offset 2^32",
                "imap_get_message_raw",
                {"message_id": mid, "offset_bytes": 2**32},
                "invalid_input",
                "offset_bytes",
            ),
            Case(
                "max_bytes 0",
                "imap_get_message_raw",
                {"message_id": mid, "max_bytes": 0},
                "invalid_input",
                "max_bytes",
            ),
            Case(
                "max_bytes 1e308",
                "imap_get_message_raw",
                {"message_id": mid, "max_bytes": 1e308},
                "invalid_input",
                "max_bytes",
            ),
            Case(
                "message_id number",
                "imap_get_message",
                {"message_id": 12345678},
                "invalid_input",
                "message_id",
            ),
            Case("message_id missing", "imap_get_message", {}, "invalid_input", "message_id"),
            Case(
                "offset at the end", "imap_get_message_raw", {"message_id": mid, "offset_bytes": 2**31}, "ok"
            ),
            Case("largest limit", "imap_search_messages", {"limit": 100, "snippet_chars": 500}, "ok"),
            Case(
                "size filters at their bounds",
                "imap_search_messages",
                {"larger_than_bytes": 0, "smaller_than_bytes": 2**31},
                "ok",
            ),
            Case("last_days at its bound", "imap_search_messages", {"last_days": 36500}, "ok"),
            Case("since year 1", "imap_search_messages", {"since": "0001-01-01"}, "invalid_input", "since"),
            Case(
                "before year 999", "imap_search_messages", {"before": "0999-12-31"}, "invalid_input", "before"
            ),
            Case("since year 1000", "imap_search_messages", {"since": "1000-01-01"}, "ok"),
            Case("far future before", "imap_search_messages", {"before": "9999-12-31"}, "ok"),
        ]
        await run_cases(env, cases)


async def test_forged_message_ids_fail_cleanly_and_touch_only_what_they_name(dovecot: Dovecot) -> None:
    async with fuzz_env(dovecot) as env:
        ref = parse_message_id(env.message_ids[0], ANONYMOUS_CALLER)

        def mid(
            account: str = "default",
            mailbox: str = "INBOX",
            uidvalidity: Any = ref.uidvalidity,
            uid: Any = ref.uid,
        ) -> str:
            return f"imap:{account}:{mailbox}:{uidvalidity}:{uid}"

        cases = []
        for tool in ("imap_get_message", "imap_get_message_raw"):
            cases += [
                Case("real id", tool, {"message_id": mid()}, "ok"),
                Case("uid 0", tool, {"message_id": mid(uid=0)}, "invalid_input", "message_id"),
                Case("uid 2^32", tool, {"message_id": mid(uid=2**32)}, "invalid_input", "message_id"),
                Case("uid negative", tool, {"message_id": mid(uid=-1)}, "invalid_input", "message_id"),
                Case(
                    "uid with CRLF",
                    tool,
                    {"message_id": mid(uid="1\r\nA1 STORE 1 +FLAGS (\\Deleted)")},
                    "invalid_input",
                    "message_id",
                ),
                Case("uid range", tool, {"message_id": mid(uid="1:*")}, "invalid_input", "message_id"),
                Case("uid list", tool, {"message_id": mid(uid="1,2")}, "invalid_input", "message_id"),
                Case(
                    "uidvalidity text",
                    tool,
                    {"message_id": mid(uidvalidity="x")},
                    "invalid_input",
                    "message_id",
                ),
                Case("missing parts", tool, {"message_id": "imap:default:1"}, "invalid_input", "message_id"),
                Case(
                    "other scheme", tool, {"message_id": "file:///etc/passwd"}, "invalid_input", "message_id"
                ),
                Case(
                    "account with spaces",
                    tool,
                    {"message_id": mid(account="a b")},
                    "invalid_input",
                    "message_id",
                ),
                Case("unknown account", tool, {"message_id": mid(account="nobody")}, "not_found"),
                Case("unknown uid", tool, {"message_id": mid(uid=999_999)}, "not_found"),
                Case(
                    "stale uidvalidity",
                    tool,
                    {"message_id": mid(uidvalidity=ref.uidvalidity + 1)},
                    "conflict",
                ),
                Case("unknown mailbox", tool, {"message_id": mid(mailbox="Nope")}, "not_found"),
                Case(
                    "mailbox with CRLF",
                    tool,
                    {"message_id": mid(mailbox="INBOX\r\nA1 DELETE INBOX")},
                    "invalid_input",
                    "message_id",
                ),
                Case("mailbox with quote", tool, {"message_id": mid(mailbox='INBOX" "x')}, "not_found"),
                Case(
                    "mailbox with literal", tool, {"message_id": mid(mailbox="{5}\r\nINBOX")}, "invalid_input"
                ),
                Case("mailbox literal syntax", tool, {"message_id": mid(mailbox="{5}")}, "not_found"),
                Case("mailbox with NUL", tool, {"message_id": mid(mailbox="IN\x00BOX")}, "invalid_input"),
                Case("mailbox wildcard", tool, {"message_id": mid(mailbox="*")}, "not_found"),
                Case("mailbox traversal", tool, {"message_id": mid(mailbox="../INBOX")}, "not_found"),
                Case("our id, other account", tool, {"message_id": mid(account="other")}, "conflict"),
            ]
        await run_cases(env, cases)
        # Colons and odd characters in a real mailbox name survive the round trip.
        listed = await env.client.ok("imap_search_messages", {"mailbox": 'Quote"d', "limit": 1})
        odd = listed["messages"][0]["message_id"]
        assert parse_message_id(odd, ANONYMOUS_CALLER).mailbox == 'Quote"d'
        await run_cases(env, [Case("odd mailbox id", "imap_get_message", {"message_id": odd}, "ok")])


async def test_mailbox_with_crlf_is_rejected_before_dovecot_can_echo_it_into_the_response_stream(
    dovecot: Dovecot,
) -> None:
    """Regression: a mailbox argument (or message-id mailbox part) with CR/LF went out encoded, but
    Dovecot's ``NO Mailbox doesn't exist: <name>`` echoed it raw, so a crafted name injected lines
    (e.g. a forged tagged reply for the next command) into the server's answers and the next call
    found the connection out of step."""
    async with fuzz_env(dovecot) as env:
        ref = parse_message_id(env.message_ids[0], ANONYMOUS_CALLER)
        for mailbox in ("x\r\nA999 OK forged", "INBOX\n", "IN\x00BOX", "\x1b[2J"):
            envelope, commands = await env.call("imap_search_messages", {"mailbox": mailbox})
            assert envelope["error"]["code"] == "invalid_input" and not commands
            assert envelope["error"]["details"]["parameter"] == "mailbox"
            forged = MessageRef("default", mailbox, ref.uidvalidity, ref.uid).message_id
            envelope, commands = await env.call("imap_get_message", {"message_id": forged})
            assert envelope["error"]["code"] == "invalid_input" and not commands
            assert envelope["error"]["details"]["parameter"] == "message_id"
        # Tabs and every other character stay legal, and the session never had to reconnect.
        envelope, _ = await env.call("imap_search_messages", {"mailbox": "Tab\tName"})
        assert envelope["error"]["code"] == "not_found"
        envelope, _ = await env.call("imap_get_message", {"message_id": env.message_ids[0]})
        assert envelope["success"]
        assert env.app.pool.get("default").logins == 1


async def test_dates_before_year_1000_are_invalid_input_not_a_protocol_error(dovecot: Dovecot) -> None:
    """Regression: ``since``/``before`` earlier than year 1000 were sent as ``SINCE 01-Jan-1``; IMAP
    needs a four-digit year, Dovecot answered BAD and the call ended as an internal error."""
    async with fuzz_env(dovecot) as env:
        for name in ("since", "before"):
            for day in ("0001-01-01", "0999-12-31"):
                envelope, commands = await env.call("imap_search_messages", {name: day})
                assert envelope["error"]["code"] == "invalid_input" and not commands
                assert envelope["error"]["details"]["parameter"] == name
            envelope, _ = await env.call("imap_search_messages", {name: "1000-01-01"})
            assert envelope["success"]


async def test_other_accounts_ids_read_exactly_that_account(dovecot: Dovecot) -> None:
    async with fuzz_env(dovecot) as env:
        for mid, marker in ((env.message_ids[0], "mine"), (env.other_message_ids[0], "theirs")):
            envelope, _ = await env.call("imap_get_message", {"message_id": mid})
            assert envelope["success"], envelope
            subject = envelope["data"]["message"]["subject"]
            assert subject.startswith(marker), subject
            assert envelope["data"]["message"]["message_id"] == mid
        # An id of the other account with our UIDVALIDITY never falls back to our mailbox.
        ref = parse_message_id(env.message_ids[0], ANONYMOUS_CALLER)
        forged = MessageRef("other", ref.mailbox, ref.uidvalidity, ref.uid).message_id
        envelope, _ = await env.call("imap_get_message", {"message_id": forged})
        assert envelope["error"]["code"] == "conflict"
        assert "mine" not in json.dumps(envelope)


async def test_forged_cursors_are_rejected_as_invalid_input_or_conflict(dovecot: Dovecot) -> None:
    """Regression: a re-signed cursor with wrong field types used to be an internal error (TypeError)."""
    async with fuzz_env(dovecot) as env:
        cursor = env.cursor
        bad_fields = {
            "anchor_uid as text": {"anchor_uid": "abc"},
            "anchor_uid float": {"anchor_uid": 1.5},
            "anchor_uid bool": {"anchor_uid": True},
            "anchor_uid huge": {"anchor_uid": 10**30},
            "anchor_uid negative": {"anchor_uid": -5},
            "upper_uid null": {"upper_uid": None},
            "total as text": {"total": "x"},
            "returned null": {"returned": None},
            "returned negative": {"returned": -(10**20)},
            "uidvalidity as text": {"uidvalidity": "1"},
            "mailbox as list": {"mailbox": ["INBOX"]},
            "account null": {"account_id": None},
            "digest as number": {"filter_digest": 5},
            "extra field": {"admin": True},
            "version 2": {"v": 2},
        }
        cases = [
            Case(
                name,
                "imap_search_messages",
                {"cursor": forge_cursor(cursor, fields)},
                "invalid_input",
                "cursor",
            )
            for name, fields in bad_fields.items()
        ]
        cases += [
            Case("genuine", "imap_search_messages", {"cursor": cursor}, "ok"),
            Case(
                "re-signed, same fields", "imap_search_messages", {"cursor": forge_cursor(cursor, {})}, "ok"
            ),
            Case("truncated", "imap_search_messages", {"cursor": cursor[:-3]}, "invalid_input", "cursor"),
            Case(
                "bit flipped",
                "imap_search_messages",
                {"cursor": cursor[:10] + ("A" if cursor[10] != "A" else "B") + cursor[11:]},
                "invalid_input",
                "cursor",
            ),
            Case("not base64", "imap_search_messages", {"cursor": "!!!\r\n{5}"}, "invalid_input", "cursor"),
            Case(
                "other mailbox",
                "imap_search_messages",
                {"cursor": cursor, "mailbox": "Archive/2024"},
                "invalid_input",
                "cursor",
            ),
            Case(
                "other filters",
                "imap_search_messages",
                {"cursor": cursor, "subject": "x"},
                "invalid_input",
                "cursor",
            ),
            Case(
                "other account",
                "imap_search_messages",
                {"cursor": cursor, "account_id": "other"},
                "invalid_input",
                "cursor",
            ),
            Case(
                "forged for the other account",
                "imap_search_messages",
                {"cursor": forge_cursor(cursor, {"account_id": "other"}), "account_id": "other"},
                "conflict",
            ),
            Case(
                "stale uidvalidity",
                "imap_search_messages",
                {"cursor": forge_cursor(cursor, {"uidvalidity": 7})},
                "conflict",
            ),
            Case(
                "anchor past the end",
                "imap_search_messages",
                {"cursor": forge_cursor(cursor, {"anchor_uid": 2**32 - 1})},
                "ok",
            ),
        ]
        await run_cases(env, cases)


# ---------------------------------------------------------------------------------------------------
# Secrets
# ---------------------------------------------------------------------------------------------------


def _rpc(method: str, params: dict[str, Any], ident: int | None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if ident is not None:
        message["id"] = ident
    return json.dumps(message).encode() + b"\n"


def run_stdio_server(
    config_path: Path, env: dict[str, str], calls: list[tuple[str, dict[str, Any]]]
) -> tuple[str, str]:
    """Drive ``mail-imap-mcp serve`` over stdio with raw JSON-RPC; return (stdout, stderr)."""
    requests = [
        _rpc(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            },
            0,
        ),
        _rpc("notifications/initialized", {}, None),
    ]
    requests += [
        _rpc("tools/call", {"name": name, "arguments": args}, i + 1) for i, (name, args) in enumerate(calls)
    ]
    proc = subprocess.Popen(
        [SERVER, "serve", "--config", str(config_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    lines = []
    try:
        for request in requests:
            proc.stdin.write(request)
            proc.stdin.flush()
            if b'"id"' in request:
                lines.append(proc.stdout.readline())
        stdout, stderr = proc.communicate(timeout=patient(30))  # closes stdin: the server exits
    finally:
        proc.kill()
    answers = [json.loads(line) for line in lines]
    assert all("result" in a for a in answers), answers
    return b"".join(lines).decode() + stdout.decode(), stderr.decode()


@pytest.fixture(scope="session")
def no_password_in_any_envelope_of_the_session(dovecot: Dovecot) -> Iterator[None]:
    """After the last test: no envelope that any test of the session saw contains the password."""
    yield
    leaked = [envelope for envelope in SEEN if dovecot.password in json.dumps(envelope)]
    assert not leaked, f"{len(leaked)} envelope(s) contain the IMAP password, e.g. {leaked[0]['summary']}"


def captured_log(caplog: pytest.LogCaptureFixture) -> str:
    parts = [caplog.text]
    for record in caplog.records:
        parts.append(record.getMessage())
        if record.exc_info:
            parts.append(logging.Formatter().formatException(record.exc_info))
    return "\n".join(parts)


@pytest.mark.slow
@pytest.mark.usefixtures("no_password_in_any_envelope_of_the_session")
async def test_password_never_appears_in_envelopes_logs_stderr_or_check_output(
    dovecot: Dovecot,
    oauth_dovecot: Dovecot,
    introspection: IntrospectionEndpoint,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
) -> None:
    secret = dovecot.password  # random per test session
    wrong = "wrong-" + os.urandom(12).hex()  # a unique wrong password, configured inline
    # OAuth2 access tokens, unique to this test: one the server accepts (after a refused, expired one),
    # one it refuses.
    oauth_user = oauth_dovecot.new_user()
    expired, token, bad_token = new_token("expired"), new_token("good"), new_token("bad")
    introspection.accept(token, oauth_user)
    good_helper = TokenHelper(tmp_path / "good-helper", expired, token, token, token)
    bad_helper = TokenHelper(tmp_path / "bad-helper", bad_token)
    tokens = {"expired token": expired, "access token": token, "refused token": bad_token}
    caplog.set_level(logging.DEBUG)  # includes imapclient's protocol log
    envelopes: list[dict[str, Any]] = []

    user = dovecot.new_user()
    seed_user(dovecot, user, marker="secret-test", size=6)
    recorder = ImapRecorder(dovecot.plain_port)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    command = [sys.executable, "-c", f"import os, sys; sys.stdout.write(os.environ[{PASSWORD_ENV!r}])"]
    accounts = {
        "default": account_settings(dovecot, user, recorder.port),
        "tls": {
            "host": dovecot.host,
            "port": dovecot.tls_port,
            "username": user,
            "password_env": PASSWORD_ENV,
            "ca_file": str(dovecot.ca_file),
        },
        "cmd": {
            "host": dovecot.host,
            "port": dovecot.tls_port,
            "username": user,
            "password_command": command,
            "ca_file": str(dovecot.ca_file),
        },
        "wrong": {
            "host": dovecot.host,
            "port": dovecot.tls_port,
            "username": user,
            "password": wrong,
            "ca_file": str(dovecot.ca_file),
        },
        "down": {
            "host": dovecot.host,
            "port": closed_port,
            "username": user,
            "password_env": PASSWORD_ENV,
            "security": "plain",
        },
        "noenv": {
            "host": dovecot.host,
            "port": dovecot.tls_port,
            "username": user,
            "password_env": "MIM_UNSET_PASSWORD_VAR",
        },
        "oauth": {
            "host": oauth_dovecot.host,
            "port": oauth_dovecot.tls_port,
            "username": oauth_user,
            "auth": "xoauth2",
            "oauth2_token_command": good_helper.command,
            "ca_file": str(oauth_dovecot.ca_file),
        },
        "oauth_bad": {
            "host": oauth_dovecot.host,
            "port": oauth_dovecot.tls_port,
            "username": oauth_user,
            "auth": "oauthbearer",
            "oauth2_token_command": bad_helper.command,
            "ca_file": str(oauth_dovecot.ca_file),
        },
    }
    config: Config = make_config(accounts)
    app = AppContext.from_config(config)
    try:
        async with Client(build_server(config, app)) as session:
            mcp = EnvelopeClient(session)
            for account in accounts:
                envelopes.append(
                    await mcp.call("imap_list_mailboxes", {"account_id": account, "include_counts": True})
                )
            envelopes.append(await mcp.call("imap_list_accounts"))
            page = await mcp.call(
                "imap_search_messages", {"limit": 3, "subject": "secret-test", "fields": "full"}
            )
            envelopes.append(page)
            mid = page["data"]["messages"][0]["message_id"]
            for fmt in ("text", "markdown", "html"):
                envelopes.append(
                    await mcp.call(
                        "imap_get_message",
                        {"message_id": mid, "body_format": fmt, "include_all_headers": True},
                    )
                )
            envelopes.append(await mcp.call("imap_get_message_raw", {"message_id": mid}))
            envelopes.append(
                await mcp.call(
                    "imap_search_messages", {"cursor": page["data"]["next_cursor"], "subject": "secret-test"}
                )
            )
            envelopes.append(
                await mcp.call("imap_get_message", {"message_id": mid.replace("default", "wrong")})
            )
            envelopes.append(await mcp.call("imap_get_message", {"message_id": "garbage"}))
            envelopes.append(await mcp.call("imap_search_messages", {"mailbox": "Nope"}))
            resource = await session.read_resource(page["data"]["messages"][0]["message_uri"])
            envelopes.append({"resource": [c.model_dump() for c in resource.contents]})
    finally:
        await anyio.to_thread.run_sync(app.close)
        recorder.close()
    codes = {e["error"]["code"] for e in envelopes if isinstance(e.get("error"), dict)}
    assert {"auth_failed", "unavailable", "invalid_input", "not_found"} <= codes, codes
    # The secret really was used (it crossed the wire in LOGIN), so its absence elsewhere means something.
    assert any(secret.encode() in bytes(sent) for sent in recorder.sent)

    config_path = tmp_path / "config.toml"
    config_path.write_text(
        config_toml({name: settings for name, settings in accounts.items() if name != "default"})
    )
    environ = {**os.environ, PASSWORD_ENV: secret, "MAIL_IMAP_MCP_LOG_LEVEL": "DEBUG"}
    stdio_out, stdio_err = run_stdio_server(
        config_path,
        environ,
        [
            ("imap_list_mailboxes", {"account_id": "tls"}),
            ("imap_list_mailboxes", {"account_id": "cmd"}),
            ("imap_list_mailboxes", {"account_id": "wrong"}),
            ("imap_list_mailboxes", {"account_id": "oauth"}),
            ("imap_list_mailboxes", {"account_id": "oauth_bad"}),
            ("imap_search_messages", {"account_id": "tls", "limit": 2}),
            ("imap_list_accounts", {}),
        ],
    )
    assert "auth_failed" in stdio_out and " DEBUG " in stdio_err  # the server really logged at DEBUG
    check = subprocess.run(
        [SERVER, "check", "--config", str(config_path)],
        capture_output=True,
        env=environ,
        timeout=patient(60),
        check=False,
    )
    check_output = check.stdout.decode() + check.stderr.decode()
    assert "ok   tls" in check_output and "FAIL wrong" in check_output, check_output
    assert "ok   oauth" in check_output and "FAIL oauth_bad" in check_output, check_output
    # The tokens crossed the wire (each helper ran: the good one after a refusal, in process, over stdio
    # and in check), and imaplib's protocol log was on: their absence below means something.
    assert good_helper.runs >= 4 and bad_helper.runs >= 2
    assert any(record.name == "imapclient.imaplib" for record in caplog.records)

    captured = {
        "envelopes": json.dumps(envelopes),
        "all envelopes seen by the suite": json.dumps(SEEN),
        "log records": captured_log(caplog),
        "stdio stdout": stdio_out,
        "stdio stderr": stdio_err,
        "check output": check_output,
    }
    secrets = {"password": secret, "wrong inline password": wrong, **tokens}
    for label, value in tokens.items():  # also as sent: inside a base64 SASL message
        for response in (
            f"user={oauth_user}\x01auth=Bearer {value}\x01\x01",
            f"n,a={oauth_user},\x01host={oauth_dovecot.host}\x01port={oauth_dovecot.tls_port}"
            f"\x01auth=Bearer {value}\x01\x01",
        ):
            secrets[f"{label} (SASL, base64)"] = base64.b64encode(response.encode()).decode()
    for where, text in captured.items():
        for label, value in secrets.items():
            assert value not in text, f"the {label} leaked into {where}"
