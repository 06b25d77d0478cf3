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
from typing import Any

import pytest

from mail_imap_mcp.config import Config
from tests.conftest import MatrixServer, make_config, open_client
from tests.support.accounts import account_settings
from tests.support.mailgen import plain_message

pytestmark = pytest.mark.anyio

TOOL = "imap_update_message_flags"

#: Flags per message at the start: name -> (mailbox key, flags).
INBOX_SEED = {
    "a0": "",
    "a1": "\\Seen",
    "a2": "$Important",
    "a3": "\\Flagged \\Seen",
    "a4": "\\Deleted \\Seen",
}
WORK_SEED = {"w0": "", "w1": "\\Seen"}

Snapshot = dict[str, dict[str, frozenset[str]]]  # mailbox -> Message-ID name -> flags


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
