"""imap_update_message_flags on real servers: every change checked from an independent IMAP session.

On the matrix (Dovecot, Cyrus in both namespaces, Courier): add, remove and replace of system flags and
keywords across two mailboxes, undo through next_action, dry_run, an expunged message, a stale id after
the mailbox was recreated; after every step each message's flags are read by a session of the test's own
(by Message-ID), so the count of messages and the flags of the messages not named are checked too.

On Dovecot: the write gate (permission_denied, and the tool listed only when writes are on), hostile flag
names (invalid_input naming ``flags``; the wire recorder shows nothing sent), the wire of one change, a
CONDSTORE replace racing another client (``modified_meanwhile``), a connection reset right after the
STORE was sent (``outcome_unknown``, sent exactly once), and PERMANENTFLAGS from an ACL that allows
only \\Seen and \\Deleted. On Cyrus: a STORE the server refuses (too many keywords in the mailbox).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.config import Config
from mail_imap_mcp.tool_calls import build_tools
from tests.support.accounts import PASSWORD_ENV, account_settings
from tests.support.clients.in_process import make_config, open_client
from tests.support.mail.mailgen import plain_message
from tests.support.servers.cyrus import Cyrus
from tests.support.servers.dovecot import ACL_CONFIG, Dovecot
from tests.support.servers.faultproxy import FaultProxy
from tests.support.servers.matrix import SESSION_PASSWORD, MatrixServer
from tests.support.wire import ImapRecorder, parse_commands

pytestmark = pytest.mark.anyio

TOOL = "imap_update_message_flags"

#: Flags per message at the start (by Message-ID name).
INBOX_SEED = {
    "a0": "",
    "a1": "\\Seen",
    "a2": "$Important",
    "a3": "\\Flagged \\Seen",
    "a4": "\\Deleted \\Seen",
}
WORK_SEED = {"w0": "", "w1": "\\Seen"}


def message(name: str) -> bytes:
    return plain_message(f"flags test {name}", f"body of {name}\r\n", message_id=f"<{name}@flags.test>")


def seed(server: MatrixServer, user: str, mailbox: str, spec: dict[str, str]) -> None:
    server.seed(user, mailbox, [message(name) for name in spec], flags=list(spec.values()))


def expected(*specs: dict[str, str]) -> dict[str, frozenset[str]]:
    return {name: frozenset(flags.split()) for spec in specs for name, flags in spec.items()}


def read_mailbox(
    server: MatrixServer, user: str, mailbox: str
) -> tuple[int, dict[str, tuple[int, frozenset[str]]]]:
    """UIDVALIDITY and, per Message-ID name, (UID, flags without \\Recent), from a session of the test's own."""
    with server.connect(user) as client:
        uidvalidity = int(client.select_folder(mailbox, readonly=True)[b"UIDVALIDITY"])
        uids = client.search()
        answer = client.fetch(uids, ["FLAGS", "BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)]"]) if uids else {}
    found: dict[str, tuple[int, frozenset[str]]] = {}
    for uid, data in answer.items():
        # Courier echoes the section as HEADER.FIELDS ("MESSAGE-ID"), the others without quotes.
        (raw,) = (value for key, value in data.items() if key.startswith(b"BODY[HEADER.FIELDS"))
        header = raw.decode()
        name = header.split("<", 1)[1].split("@", 1)[0]
        assert name not in found, f"{name} is in {mailbox!r} twice"
        flags = frozenset(f.decode() for f in data[b"FLAGS"] if f.lower() != b"\\recent")
        found[name] = (uid, flags)
    return uidvalidity, found


def flags_now(server: MatrixServer, user: str, mailboxes: list[str]) -> dict[str, frozenset[str]]:
    """Every message's flags by Message-ID name, over ``mailboxes`` (each name once in all of them)."""
    flags: dict[str, frozenset[str]] = {}
    for mailbox in mailboxes:
        for name, (_, now) in read_mailbox(server, user, mailbox)[1].items():
            assert name not in flags
            flags[name] = now
    return flags


def ids(server: MatrixServer, user: str, mailbox: str, account_id: str = "default") -> dict[str, str]:
    uidvalidity, found = read_mailbox(server, user, mailbox)
    return {name: f"imap:{account_id}:{mailbox}:{uidvalidity}:{uid}" for name, (uid, _) in found.items()}


def lowered(flags: list[str]) -> set[str]:
    return {flag.lower() for flag in flags}


def same(actual: frozenset[str] | list[str], wanted: frozenset[str] | set[str]) -> bool:
    """Flags compare case-insensitively (Courier spells keywords its own way)."""
    return {f.lower() for f in actual} == {f.lower() for f in wanted}


def check(server: MatrixServer, user: str, mailboxes: list[str], wanted: dict[str, frozenset[str]]) -> None:
    now = flags_now(server, user, mailboxes)
    assert set(now) == set(wanted), "a message appeared or disappeared"
    wrong = {name: sorted(now[name]) for name in wanted if not same(now[name], wanted[name])}
    assert not wrong, f"flags differ from { ({n: sorted(wanted[n]) for n in wrong}) }: {wrong}"


def writes_config(server: MatrixServer, user: str, **settings: Any) -> Config:
    return make_config({"default": account_settings(server, user, **settings)}, write_enabled=True)


# ---------------------------------------------------------------------------------------------------
# The matrix
# ---------------------------------------------------------------------------------------------------


async def test_add_remove_replace_undo_dry_run_gone_and_stale_on_every_server(
    imap_server: MatrixServer, caplog: pytest.LogCaptureFixture
) -> None:
    server, user = imap_server, imap_server.new_user()
    work = server.mailbox_name("Work")
    seed(server, user, "INBOX", INBOX_SEED)
    seed(server, user, work, WORK_SEED)
    mailboxes = ["INBOX", work]
    flags = expected(INBOX_SEED, WORK_SEED)
    inbox, other = ids(server, user, "INBOX"), ids(server, user, work)
    caplog.set_level(logging.INFO, logger="mail_imap_mcp.audit")
    with server.connect(user) as direct:
        condstore = b"CONDSTORE" in {c.upper() for c in direct.capabilities()}

    async for mcp in open_client(writes_config(server, user)):
        # add a system flag and a keyword in two mailboxes
        data = await mcp.ok(
            TOOL,
            {
                "message_ids": [inbox["a0"], inbox["a2"], other["w0"]],
                "operation": "add",
                "flags": ["\\Seen", "$Todo"],
            },
        )
        assert data["status"] == "ok" and data["changed"] == 3 and data["requested"] == 3
        assert [m["message_id"] for m in data["messages"]] == [inbox["a0"], inbox["a2"], other["w0"]]
        for name in ("a0", "a2", "w0"):
            flags[name] = flags[name] | {"\\Seen", "$Todo"}
        for item in data["messages"]:
            assert item["changed"] is True
            assert lowered(item["flags"]) >= {"\\seen", "$todo"}
        assert lowered(data["messages"][1]["previous_flags"]) == {"$important"}
        assert [(m["mailbox"], m["messages"], m["changed"]) for m in data["mailboxes"]] == [
            ("INBOX", 2, 2),
            (work, 1, 1),
        ]
        check(server, user, mailboxes, flags)
        assert (
            "tool=imap_update_message_flags account=default action=add messages=3 outcome=ok" in caplog.text
        )

        # undo, as next_action says
        undo = data["next_action"]
        assert undo["tool"] == TOOL and undo["arguments"]["operation"] == "remove"
        assert lowered(undo["arguments"]["flags"]) == {"\\seen", "$todo"}
        data = await mcp.ok(TOOL, undo["arguments"])
        assert data["changed"] == 3
        flags = expected(INBOX_SEED, WORK_SEED)
        check(server, user, mailboxes, flags)

        # remove \Seen; repeating it changes nothing
        args = {"message_ids": [inbox["a1"], inbox["a3"]], "operation": "remove", "flags": ["\\seen"]}
        data = await mcp.ok(TOOL, args)
        assert data["changed"] == 2 and data["flags"] == ["\\Seen"]
        assert data["next_action"]["arguments"] == {**args, "operation": "add", "flags": ["\\Seen"]}
        flags["a1"], flags["a3"] = frozenset(), frozenset({"\\Flagged"})
        check(server, user, mailboxes, flags)
        again = await mcp.ok(TOOL, args)
        assert again["changed"] == 0 and again["next_action"] is None
        check(server, user, mailboxes, flags)

        # replace: exactly these flags, \Deleted kept; conditional where the server has CONDSTORE
        data = await mcp.ok(
            TOOL,
            {
                "message_ids": [inbox["a2"], inbox["a4"]],
                "operation": "replace",
                "flags": ["\\Flagged", "Work"],
            },
        )
        assert data["status"] == "ok" and data["changed"] == 2
        assert data["mailboxes"][0]["conditional"] is condstore
        flags["a2"] = frozenset({"\\Flagged", "Work"})
        flags["a4"] = frozenset({"\\Deleted", "\\Flagged", "Work"})
        assert same(data["messages"][0]["flags"], flags["a2"])
        assert same(data["messages"][1]["flags"], flags["a4"])
        assert data["next_action"] is None  # the two had different flags before: no single undo
        check(server, user, mailboxes, flags)

        # dry run: the plan, nothing changed
        everything = [*inbox.values(), *other.values()]
        data = await mcp.ok(
            TOOL, {"message_ids": everything, "operation": "add", "flags": ["\\Answered"], "dry_run": True}
        )
        assert data["dry_run"] is True and data["changed"] == len(everything)
        assert all("\\answered" in lowered(m["flags"]) for m in data["messages"])
        assert data["next_action"]["arguments"].get("dry_run") is None
        check(server, user, mailboxes, flags)
        assert "action=dry_run:add messages=7 outcome=ok" in caplog.text

        # a message expunged meanwhile: partial, not_found for it, the other one changed
        with server.connect(user) as direct:
            direct.select_folder(work)
            direct.add_flags([read_mailbox(server, user, work)[1]["w1"][0]], [b"\\Deleted"], silent=True)
            direct.expunge()
        del flags["w1"]
        data = await mcp.ok(
            TOOL, {"message_ids": [other["w1"], other["w0"]], "operation": "add", "flags": ["\\Flagged"]}
        )
        assert data["status"] == "partial"
        assert [(i["code"], i["message_id"], i["retryable"]) for i in data["issues"]] == [
            ("not_found", other["w1"], False)
        ]
        assert [m["message_id"] for m in data["messages"]] == [other["w0"]]
        flags["w0"] = frozenset({"\\Flagged"})
        check(server, user, mailboxes, flags)
        envelope = await mcp.fail(
            TOOL, {"message_ids": [other["w1"]], "operation": "add", "flags": ["\\Seen"]}, "not_found"
        )
        assert envelope["data"]["status"] == "failed"

        # the mailbox was recreated (new UIDVALIDITY): the old ids are stale, nothing is changed
        server.recreate_mailbox(user, work)
        seed(server, user, work, {"w0": ""})  # a new message with the old one's UID
        envelope = await mcp.fail(
            TOOL, {"message_ids": [other["w0"]], "operation": "add", "flags": ["\\Seen"]}, "conflict"
        )
        assert envelope["data"]["next_action"]["tool"] == "imap_search_messages"
        flags["w0"] = frozenset()
        check(server, user, mailboxes, flags)
        assert "action=add messages=1 outcome=failed:conflict" in caplog.text


# ---------------------------------------------------------------------------------------------------
# Dovecot: the gate, hostile flags and the wire
# ---------------------------------------------------------------------------------------------------


def plain_settings(server: Dovecot, user: str, port: int) -> dict[str, Any]:
    """An account reaching ``server`` through a relay on ``port`` in plaintext (readable commands)."""
    return account_settings(server, user, host="127.0.0.1", port=port, security="plain", ca_file=None)


async def test_writes_off_is_permission_denied_and_the_tool_is_listed_only_when_writes_are_on(
    dovecot: Dovecot,
) -> None:
    user = dovecot.new_user()
    seed(dovecot, user, "INBOX", {"a0": "", "a1": "\\Seen"})
    flags = expected({"a0": "", "a1": "\\Seen"})
    inbox = ids(dovecot, user, "INBOX")
    args = {"message_ids": list(inbox.values()), "operation": "add", "flags": ["\\Flagged"]}
    off = make_config({"default": account_settings(dovecot, user)})
    one_off = make_config(
        {
            "default": account_settings(dovecot, user, write_enabled=False),
            "rw": account_settings(dovecot, user),
        },
        write_enabled=True,
    )
    # Writes off everywhere: not listed (the tool's own gate refuses it too). Off for this account only:
    # listed (another account allows writes), and refused for this account's ids, dry run or not.
    for config, listed in ((off, False), (one_off, True), (writes_config(dovecot, user), True)):
        async for mcp in open_client(config):
            names = [tool.name for tool in (await mcp.client.list_tools()).tools]
            assert (TOOL in names) is listed
            if config is one_off:
                for dry_run in (False, True):
                    envelope = await mcp.fail(TOOL, {**args, "dry_run": dry_run}, "permission_denied")
                    assert envelope["error"]["details"]["setting"] == "write_enabled"
                    assert "write_enabled" in envelope["error"]["message"]
    app = AppContext.from_config(off)
    try:
        (tool,) = [t for t in build_tools(app) if t.name == TOOL]
        envelope = await tool.envelope(args)
        assert envelope.error is not None and envelope.error.code == "permission_denied"
        assert "write_enabled = true in [server]" in envelope.error.message
    finally:
        app.close()
        check(dovecot, user, ["INBOX"], flags)


#: Flag names that must never reach the server: each is invalid_input naming ``flags``.
HOSTILE_FLAGS = [
    "\\Deleted",
    "\\deleted",
    "\\Recent",
    "\\*",
    "\\Important",
    "\\",
    "Seen",  # a keyword, but fine: see below
    "a\r\nb",
    "x)\r\nA1 UID EXPUNGE 1:*\r\n",
    "nul\x00",
    "two words",
    " lead",
    "tab\t",
    '"quoted"',
    "(paren",
    "paren)",
    "{5}",
    "{5+}",
    "star*",
    "100%",
    "br]acket",
    "gr\u00fc\u00dfe",
    "emoji\U0001f600",
    "x" * 51,
    "y" * 100_000,
    "NIL",
    "nil",
    "",
]


async def test_hostile_flags_are_invalid_input_and_nothing_is_sent(dovecot: Dovecot) -> None:
    user = dovecot.new_user()
    seed(dovecot, user, "INBOX", {"a0": "", "a1": "\\Seen"})
    flags = expected({"a0": "", "a1": "\\Seen"})
    inbox = ids(dovecot, user, "INBOX")
    recorder = ImapRecorder(dovecot.plain_port)
    try:
        config = make_config({"default": plain_settings(dovecot, user, recorder.port)}, write_enabled=True)
        async for mcp in open_client(config):
            # The wire of a dry run and of a change: one SELECT, FETCH, (STORE, FETCH), well-formed.
            args = {"message_ids": [inbox["a0"]], "operation": "add", "flags": ["\\Seen", "$Todo"]}
            await mcp.ok(TOOL, {**args, "dry_run": True})
            verbs = [c.verb for (sent, _) in recorder.take() for c in parse_commands(sent)]
            assert verbs[-2:] == ["SELECT", "UID FETCH"] and "UID STORE" not in verbs
            await mcp.ok(TOOL, args)
            commands = [c for (sent, _) in recorder.take() for c in parse_commands(sent)]
            assert [c.verb for c in commands] == ["SELECT", "UID FETCH", "UID STORE", "UID FETCH"]
            store = commands[2].raw
            assert store.endswith(b" UID STORE 1 +FLAGS.SILENT (\\Seen $Todo)\r\n"), store
            flags["a0"] = frozenset({"\\Seen", "$Todo"})

            for bad in HOSTILE_FLAGS:
                if bad == "Seen":
                    continue
                envelope = await mcp.fail(TOOL, {**args, "flags": ["\\Flagged", bad]}, "invalid_input")
                error = envelope["error"]
                assert error["details"]["parameter"] == "flags", (bad, error)
                assert (
                    "Allowed: the system flags \\Seen, \\Answered, \\Flagged and \\Draft" in error["message"]
                )
                assert (
                    len(error["message"]) < 500
                    and "\r" not in error["message"]
                    and "\n" not in error["message"]
                )
                if bad.lower() == "\\deleted":
                    assert "imap_apply_to_messages" in error["message"]
                assert recorder.take() == [], f"something was sent for {bad!r}"
            # Too many flags, no flags, a flag that is no string, and ids that are not ids.
            for arguments, parameter in [
                ({**args, "flags": [f"k{i}" for i in range(33)]}, "flags"),
                ({**args, "flags": []}, "flags"),
                ({**args, "flags": [7]}, "flags"),
                ({**args, "message_ids": []}, "message_ids"),
                ({**args, "message_ids": [inbox["a0"]] * 251}, "message_ids"),
                ({**args, "message_ids": ["imap:default:INBOX:1:x"]}, "message_ids"),
                (
                    {**args, "message_ids": [inbox["a0"], inbox["a0"].replace("default", "other")]},
                    "message_ids",
                ),
                ({**args, "operation": "set"}, "operation"),
            ]:
                envelope = await mcp.fail(TOOL, arguments, "invalid_input")
                assert envelope["error"]["details"]["parameter"] == parameter, (arguments, envelope["error"])
                assert recorder.take() == []
            # "Seen" without the backslash is an ordinary keyword, distinct from \Seen.
            data = await mcp.ok(TOOL, {**args, "message_ids": [inbox["a1"]], "flags": ["Seen"]})
            assert lowered(data["messages"][0]["flags"]) == {"\\seen", "seen"}
            flags["a1"] = frozenset({"\\Seen", "Seen"})
        check(dovecot, user, ["INBOX"], flags)
    finally:
        recorder.close()


# ---------------------------------------------------------------------------------------------------
# Dovecot: a replace racing another client, and connections lost after the STORE
# ---------------------------------------------------------------------------------------------------


class StoreProxy(FaultProxy):
    """A fault proxy that also runs ``race`` = ``(marker, action)``'s action once, before forwarding the
    first server chunk containing marker."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        super().__init__(upstream_host, upstream_port)
        self.race: tuple[bytes, Callable[[], None]] | None = None
        self.raced = 0

    def _apply_reset_rule(self, conn: Any, data: bytes) -> tuple[bytes, bool]:
        if self.race is not None and self.race[0] in data:
            (_, action), self.race = self.race, None
            action()
            self.raced += 1
        return super()._apply_reset_rule(conn, data)


@pytest.fixture
def store_proxy(dovecot: Dovecot) -> Iterator[StoreProxy]:
    with StoreProxy(dovecot.host, dovecot.plain_port) as proxy:
        yield proxy


async def test_condstore_replace_leaves_a_message_another_client_changed_meanwhile(
    dovecot: Dovecot, store_proxy: StoreProxy
) -> None:
    user = dovecot.new_user()
    spec = {"r0": "\\Seen", "r1": "\\Seen", "r2": ""}
    seed(dovecot, user, "INBOX", spec)
    flags = expected(spec)
    inbox = ids(dovecot, user, "INBOX")
    uid_r1 = int(inbox["r1"].rsplit(":", 1)[1])

    def other_client_sets_a_keyword() -> None:
        with dovecot.connect(user) as other:
            other.select_folder("INBOX")
            other.add_flags([uid_r1], [b"$Other"], silent=True)

    # Between this call's FETCH (FLAGS MODSEQ) and its STORE, another client changes r1.
    store_proxy.race = (b" MODSEQ (", other_client_sets_a_keyword)
    config = make_config({"default": plain_settings(dovecot, user, store_proxy.port)}, write_enabled=True)
    async for mcp in open_client(config):
        data = await mcp.ok(
            TOOL, {"message_ids": list(inbox.values()), "operation": "replace", "flags": ["\\Flagged"]}
        )
        assert store_proxy.raced == 1
        assert data["status"] == "partial" and data["mailboxes"][0]["conditional"] is True
        assert [(i["code"], i["message_id"], i["retryable"]) for i in data["issues"]] == [
            ("modified_meanwhile", inbox["r1"], True)
        ]
        assert [(m["message_id"], m["flags"]) for m in data["messages"]] == [
            (inbox["r0"], ["\\Flagged"]),
            (inbox["r2"], ["\\Flagged"]),
        ]
        assert data["next_action"]["arguments"] == {
            "message_ids": [inbox["r1"]],
            "operation": "replace",
            "flags": ["\\Flagged"],
        }
    assert store_proxy.sent().count(b"(UNCHANGEDSINCE ") == 1
    flags.update(r0={"\\Flagged"}, r1={"\\Seen", "$Other"}, r2={"\\Flagged"})
    check(dovecot, user, ["INBOX"], flags)


async def test_connection_lost_after_the_store_is_outcome_unknown_and_never_replayed(
    dovecot: Dovecot, store_proxy: StoreProxy, caplog: pytest.LogCaptureFixture
) -> None:
    user = dovecot.new_user()
    seed(dovecot, user, "INBOX", {"a0": "", "a1": "", "a2": "\\Seen"})
    seed(dovecot, user, "Work", {"w0": ""})
    flags = expected({"a0": "", "a1": "", "a2": "\\Seen", "w0": ""})
    inbox, work = ids(dovecot, user, "INBOX"), ids(dovecot, user, "Work")
    caplog.set_level(logging.INFO, logger="mail_imap_mcp.audit")
    config = make_config({"default": plain_settings(dovecot, user, store_proxy.port)}, write_enabled=True)
    async for mcp in open_client(config):
        store_proxy.cut_after_sent(b" UID STORE ")
        data = await mcp.ok(
            TOOL, {"message_ids": [inbox["a0"], inbox["a1"]], "operation": "add", "flags": ["\\Flagged"]}
        )
        assert store_proxy.cuts == 1
        assert data["status"] == "partial" and data["messages"] == []
        assert [(i["code"], i["message_id"], i["retryable"]) for i in data["issues"]] == [
            ("outcome_unknown", inbox["a0"], False),
            ("outcome_unknown", inbox["a1"], False),
        ]
        assert data["next_action"]["tool"] == "imap_search_messages"
        assert store_proxy.sent().count(b" UID STORE ") == 1, "the STORE was sent again"
        assert "action=add messages=2 outcome=partial" in caplog.text
        # Dovecot did make the change, exactly once.
        flags["a0"] = flags["a1"] = frozenset({"\\Flagged"})
        check(dovecot, user, ["INBOX", "Work"], flags)

        # Lost at the second mailbox's SELECT, after the first one's change: that one is reported
        # done (read back), the second one's message as not attempted (nothing sent for it).
        store_proxy.cut_after_sent(b'SELECT "Work"')
        data = await mcp.ok(
            TOOL, {"message_ids": [inbox["a2"], work["w0"]], "operation": "remove", "flags": ["\\Seen"]}
        )
        assert [(m["message_id"], m["flags"]) for m in data["messages"]] == [(inbox["a2"], [])]
        assert [(i["code"], i["message_id"], i["retryable"]) for i in data["issues"]] == [
            ("not_attempted", work["w0"], True)
        ]
        assert data["next_action"]["arguments"]["message_ids"] == [work["w0"]]
        flags["a2"] = frozenset()
        check(dovecot, user, ["INBOX", "Work"], flags)

        # A single message whose outcome is unknown: next_action reads it.
        store_proxy.cut_after_sent(b" UID STORE ")
        data = await mcp.ok(TOOL, {"message_ids": [work["w0"]], "operation": "add", "flags": ["$Done"]})
        assert data["next_action"]["tool"] == "imap_get_message"
        assert data["next_action"]["arguments"]["message_id"] == work["w0"]
        flags["w0"] = frozenset({"$Done"})
        assert store_proxy.sent().count(b" UID STORE ") == 3
        # The next call works, on a new connection.
        data = await mcp.ok(TOOL, {"message_ids": [work["w0"]], "operation": "add", "flags": ["$Done"]})
        assert data["status"] == "ok" and data["changed"] == 0
    check(dovecot, user, ["INBOX", "Work"], flags)


# ---------------------------------------------------------------------------------------------------
# What a mailbox lets be changed (Dovecot ACL), and what a server refuses (Cyrus)
# ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def acl_dovecot() -> Iterator[Dovecot]:
    """A Dovecot with ACLs (a folder's ``dovecot-acl`` file), so PERMANENTFLAGS can lack ``\\*``."""
    with Dovecot(extra_config=ACL_CONFIG, password=SESSION_PASSWORD) as server:
        os.environ[PASSWORD_ENV] = server.password  # as the session's servers do (the same password)
        yield server


async def test_flags_a_mailbox_does_not_let_change_are_refused_before_anything_is_sent(
    acl_dovecot: Dovecot,
) -> None:
    server, user = acl_dovecot, acl_dovecot.new_user()
    seed(server, user, "INBOX", {"i0": ""})
    seed(server, user, "Limited", {"l0": "$Important", "l1": ""})
    # The owner may read, set \Seen and \Deleted there, nothing else: PERMANENTFLAGS (\Deleted \Seen).
    (server.folder_path(user, "Limited") / "dovecot-acl").write_text("owner lrst\n")
    flags = expected({"i0": "", "l0": "$Important", "l1": ""})
    inbox, limited = ids(server, user, "INBOX"), ids(server, user, "Limited")
    async for mcp in open_client(writes_config(server, user)):
        for dry_run in (True, False):
            envelope = await mcp.fail(
                TOOL,
                {
                    "message_ids": [limited["l1"]],
                    "operation": "add",
                    "flags": ["\\Flagged"],
                    "dry_run": dry_run,
                },
                "invalid_input",
            )
            error = envelope["error"]
            assert error["details"]["parameter"] == "flags" and error["details"]["not_permitted"] == [
                "\\Flagged"
            ]
            assert "PERMANENTFLAGS" in error["message"]
        envelope = await mcp.fail(
            TOOL,
            {"message_ids": [limited["l0"]], "operation": "remove", "flags": ["$Important"]},
            "invalid_input",
        )
        assert envelope["error"]["details"]["not_permitted"] == ["$Important"]
        # Where the other mailbox allows it, the call goes on there.
        data = await mcp.ok(
            TOOL, {"message_ids": [limited["l1"], inbox["i0"]], "operation": "add", "flags": ["$Todo"]}
        )
        assert data["status"] == "partial"
        assert [(i["code"], i["message_id"]) for i in data["issues"]] == [
            ("flag_not_permitted", limited["l1"])
        ]
        assert [m["message_id"] for m in data["messages"]] == [inbox["i0"]]
        flags["i0"] = frozenset({"$Todo"})
        # \Seen is allowed there; so is asking for a keyword a message already has (nothing changes).
        data = await mcp.ok(
            TOOL, {"message_ids": [limited["l0"], limited["l1"]], "operation": "add", "flags": ["\\Seen"]}
        )
        assert data["status"] == "ok" and data["changed"] == 2
        flags["l0"], flags["l1"] = frozenset({"$Important", "\\Seen"}), frozenset({"\\Seen"})
        data = await mcp.ok(
            TOOL, {"message_ids": [limited["l0"]], "operation": "add", "flags": ["$Important"]}
        )
        assert data["status"] == "ok" and data["changed"] == 0
    check(server, user, ["INBOX", "Limited"], flags)


async def test_a_store_the_server_refuses_is_an_issue_of_those_messages(cyrus: Cyrus) -> None:
    """Cyrus keeps at most 100 keywords per mailbox and answers NO to a STORE of one more."""
    user = cyrus.new_user()
    work = cyrus.mailbox_name("Work")
    full = {"k0": " ".join(f"kw{i}" for i in range(100)), "k1": ""}
    seed(cyrus, user, "INBOX", full)
    seed(cyrus, user, work, {"w0": ""})
    flags = expected(full, {"w0": ""})
    inbox, other = ids(cyrus, user, "INBOX"), ids(cyrus, user, work)
    async for mcp in open_client(writes_config(cyrus, user)):
        data = await mcp.ok(
            TOOL, {"message_ids": [inbox["k1"], other["w0"]], "operation": "add", "flags": ["NewKeyword"]}
        )
        assert data["status"] == "partial"
        ((code, message_id, retryable, text),) = [
            (i["code"], i["message_id"], i["retryable"], i["message"]) for i in data["issues"]
        ]
        assert (code, message_id, retryable) == ("store_refused", inbox["k1"], False)
        assert "Too many user flags" in text
        assert [m["message_id"] for m in data["messages"]] == [other["w0"]]
        flags["w0"] = frozenset({"NewKeyword"})
        envelope = await mcp.call(
            TOOL, {"message_ids": [inbox["k1"]], "operation": "add", "flags": ["NewKeyword"]}
        )
        assert not envelope["success"] and "Too many user flags" in envelope["error"]["message"]
    check(cyrus, user, ["INBOX", work], flags)


async def test_ids_under_two_aliases_of_one_account_are_one_account_and_each_message_changes_once(
    dovecot: Dovecot,
) -> None:
    """Regression (issue 21: the two bulk writes disagreed on aliases): "default" names the only account,
    here "work". Ids under both names were refused as "several accounts" here while
    imap_apply_to_messages took them; both now resolve them to the one account, and a message named
    under both is changed once and reported once."""
    user = dovecot.new_user()
    seed(dovecot, user, "INBOX", {"x0": "", "x1": ""})
    config = make_config({"work": account_settings(dovecot, user)}, write_enabled=True)
    work = ids(dovecot, user, "INBOX", account_id="work")
    alias = ids(dovecot, user, "INBOX", account_id="default")
    async for mcp in open_client(config):
        data = await mcp.ok(
            TOOL,
            {"message_ids": [work["x0"], alias["x0"], alias["x1"]], "operation": "add", "flags": ["$Once"]},
        )
        assert data["status"] == "ok", data["issues"]
        assert data["requested"] == 2
        assert [m["message_id"] for m in data["messages"]] == [work["x0"], alias["x1"]]
        assert all(m["changed"] for m in data["messages"])
    check(dovecot, user, ["INBOX"], {"x0": frozenset({"$Once"}), "x1": frozenset({"$Once"})})
