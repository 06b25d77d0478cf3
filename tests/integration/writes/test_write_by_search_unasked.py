"""What one caller moves by search without being asked adds up (issue 78, S8-6): three narrower searches of
20 do not move 60 messages to Trash past a ``bulk_approval_threshold`` of 25 without a question, on one
instance or on two that share Redis. An approval starts the count afresh; flag changes are not counted."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from redis import Redis

from tests.support.clients.elicitation import answering
from tests.support.clients.in_process import AccountFactory, make_config, open_client
from tests.support.mail.mail_state import message_id_counts
from tests.support.mail.mailgen import plain_message
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.redis_server import RedisServer
from tests.support.shared.write_by_search import APPLY, FLAGS, clean, shared_config

pytestmark = pytest.mark.anyio

SENDERS = ("alpha", "beta", "gamma")


def seed(dovecot: Dovecot, user: str) -> None:
    """20 messages from each sender, and 5 of someone else."""
    messages = [
        plain_message(f"{sender} {n}", "x", from_=f"{sender}@lists.example", message_id=f"<{sender}-{n}@t>")
        for sender in SENDERS
        for n in range(20)
    ]
    others = [plain_message(f"Other {n}", "x", message_id=f"<other-{n}@t>") for n in range(5)]
    dovecot.seed(user, "INBOX", messages + others)
    dovecot.seed(user, "Trash", [])


def delete(sender: str) -> dict[str, str]:
    return {"query": f"from:{sender}@lists.example", "mailbox": "INBOX", "action": "delete"}


def of(sender: str) -> Counter[str]:
    return Counter(f"<{sender}-{n}@t>" for n in range(20))


async def test_narrower_searches_add_up_to_a_question_and_an_approval_starts_afresh(
    dovecot: Dovecot, account: AccountFactory, user: str
) -> None:
    seed(dovecot, user)
    accepting = answering("accept")
    config = make_config({"default": account(user)}, write_enabled=True, background_after_s=60)
    async for mcp in open_client(config, elicitation_callback=accepting):
        read = {
            "query": "from:alpha@lists.example",
            "mailbox": "INBOX",
            "operation": "add",
            "flags": ["\\Seen"],
        }
        flagged = await mcp.ok(FLAGS, read)  # flags are not counted: they undo as easily
        assert flagged["search"]["done"] == 20
        first = await mcp.ok(APPLY, delete("alpha"))
        assert first["search"]["done"] == 20 and accepting.asked == []  # 20 of 25: not asked
        second = await mcp.ok(APPLY, delete("beta"))
        assert second["search"]["done"] == 20
        (question,) = accepting.asked  # 20 + 20 > 25
        assert (
            "20 message(s)" in question
            and "20 moved by search without asking in the last 10 minutes" in question
        )
        third = await mcp.ok(APPLY, delete("gamma"))
        assert third["search"]["done"] == 20 and len(accepting.asked) == 1  # counted afresh after approval
    after = clean(message_id_counts(dovecot, user))
    assert after["Trash"] == of("alpha") + of("beta") + of("gamma")


async def test_two_instances_sharing_redis_count_together(
    dovecot: Dovecot, account: AccountFactory, user: str, tmp_path: Path
) -> None:
    """Instance A moves 20 unasked; instance B's search of 20 asks, and is declined: nothing of it moves."""
    seed(dovecot, user)
    start = clean(message_id_counts(dovecot, user))
    with RedisServer(tmp_path / "redis") as redis:
        config = shared_config(account(user), redis)
        not_asked = answering("decline")
        async for first in open_client(config, elicitation_callback=not_asked):
            assert (await first.ok(APPLY, delete("alpha")))["search"]["done"] == 20
        assert not_asked.asked == []
        assert len(Redis.from_url(redis.url).keys("*bulk-unasked*")) == 1  # in Redis, for every instance
        declining = answering("decline")
        async for second in open_client(config, elicitation_callback=declining):
            await second.fail(APPLY, delete("beta"), "confirmation_required")
        assert len(declining.asked) == 1
    after = clean(message_id_counts(dovecot, user))
    assert after["Trash"] == of("alpha") and after["INBOX"] == start["INBOX"] - of("alpha")
