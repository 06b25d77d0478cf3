"""Any instance serves any request (issue 39): three server processes behind HAProxy (round robin, no
stickiness) sharing Redis, with the test identity provider and two users of a shared Dovecot mailbox.
A confirmation asked of one instance is given on another, once; a background write started on one is
polled on a second and cancelled from a third; an instance killed during a write leaves its outcome
reported by the others; a legacy session does not follow its client to another instance; Redis going
away fails only the calls that need it, and they work again once it is back. A question a call asks in
its result (2026-07-28) is answered on the next instance, or after the one that asked restarted, and a
late answer is refused in an envelope (issue 89 item 16)."""

from __future__ import annotations

import contextlib
import json
import signal
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from tests.support.clients.elicitation import answering
from tests.support.clients.envelope_client import INITIALIZE_REQUEST, EnvelopeClient
from tests.support.clients.updates import Updates
from tests.support.mail import mailgen
from tests.support.mail.mail_state import message_id_counts
from tests.support.patience import eventually_async, patient
from tests.support.servers.dovecot import Dovecot
from tests.support.servers.faultproxy import FaultProxy
from tests.support.servers.haproxy import HAProxy
from tests.support.servers.http_server import HttpServer, http_client
from tests.support.servers.identity_provider import IdentityProvider
from tests.support.servers.imapserver import free_ports
from tests.support.servers.redis_server import RedisServer
from tests.support.servers.team import Team, new_team, start_instances, team_config

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SOURCES = [f"Box{i}" for i in range(5)]
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@dataclass
class Deployment:
    team: Team
    idp: IdentityProvider
    redis: RedisServer
    proxy: FaultProxy
    instances: list[HttpServer]
    balancer: HAProxy
    dovecot: Dovecot
    config: Path

    def token(self, user: str) -> str:
        return self.idp.jwt(user, audience=self.balancer.url)

    def client(self, user: str, instance: int | None = None, **options: Any) -> Any:
        """A client of ``user`` through the balancer, or straight to one instance."""
        url = self.balancer.url if instance is None else self.instances[instance].url
        return http_client(url, self.token(user), **options)

    def counts(self) -> Counter[str]:
        found = message_id_counts(self.dovecot, self.team.shared_user)
        return sum(found.values(), Counter())

    def restore(self) -> None:
        """Back to as :func:`deployed` made it, for the next test: no latency, Redis up, every instance
        serving (a killed one started again on its port, which the balancer names), every message in
        the source mailbox it was seeded in, ``Old`` there. What the tests left in Redis (used
        confirmations, ended operations) names nothing a later test asks for."""
        self.proxy.pass_through()
        try:
            redis_up = self.redis.answers()
        except OSError:
            redis_up = False
        if not redis_up:
            self.redis.start()
        for number, instance in enumerate(self.instances):
            if instance.proc.poll() is not None:
                (self.instances[number],) = start_instances(self.config, [instance.port])
        imap = self.dovecot.connect(self.team.shared_user)
        try:
            if not imap.folder_exists("Old"):
                imap.create_folder("Old")
            imap.select_folder("Archive")
            moved = imap.fetch(imap.search("ALL"), ["BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)]"])
            for uid, data in moved.items():
                header = data[b"BODY[HEADER.FIELDS (MESSAGE-ID)]"].decode()
                imap.move([uid], header.split("<", 1)[1].split("-", 1)[0])  # <Box3-1@t>: Box3
        finally:
            imap.logout()
        assert self.counts() == Counter(f"<{box}-{n}@t>" for box in SOURCES for n in range(2))

    def sharing_one_key(self) -> Deployment:
        """Every instance sealing under the key Redis holds. A test that took Redis away brings it back
        empty (no persistence): each instance still seals under the key it read as it started, and one
        started now would make another, so then every instance is started again (reading or making one)."""
        if not self.redis.holds("mim:secret:seal"):
            ports = [instance.port for instance in self.instances]
            for instance in self.instances:
                instance.stop()
            self.instances[:] = start_instances(self.config, ports)  # on their ports: the balancer's
        return self


@contextlib.contextmanager
def deployed(tmp_path: Path, dovecot: Dovecot) -> Iterator[Deployment]:
    """The team's mailboxes seeded, the provider, Redis, the fault proxy, three instances and HAProxy."""
    team = new_team(dovecot)
    for box in SOURCES:
        dovecot.seed(
            team.shared_user,
            box,
            [mailgen.plain_message(f"{box} {n}", "x", message_id=f"<{box}-{n}@t>") for n in range(2)],
        )
    dovecot.seed(team.shared_user, "Archive", [])
    dovecot.seed(team.shared_user, "Old", [])
    with (
        IdentityProvider() as idp,
        RedisServer(tmp_path / "redis") as redis,
        FaultProxy(dovecot.host, dovecot.tls_port) as proxy,
    ):
        # Chosen once the others listen: a port the system hands one of them (port 0) can no longer be
        # one of these (it was: "Address already in use" when an instance started).
        # The instances take the ports the system gives them (port 0); only the balancer's is chosen
        # ahead, since the instances' audience names it (free ports chosen ahead were taken meanwhile).
        (front,) = free_ports("127.0.0.1")
        config = team_config(
            tmp_path / "config.toml",
            dovecot,
            team,
            idp,
            audience=f"http://127.0.0.1:{front}/mcp",
            redis_url=redis.url,
            server={"background_after_s": 0, "allow_permanent_delete": True},
            support={"port": proxy.port, "command_timeout_s": 30},
        )
        instances = start_instances(config, [0, 0, 0])
        try:
            with HAProxy(tmp_path / "haproxy", [i.port for i in instances], port=front) as balancer:
                yield Deployment(team, idp, redis, proxy, instances, balancer, dovecot, config)
        finally:
            for instance in instances:
                instance.stop()


@pytest.fixture(scope="module")
def deployment_once(tmp_path_factory: pytest.TempPathFactory, dovecot: Dovecot) -> Iterator[Deployment]:
    """One deployment for the module: each starts three server processes (about four CPU-seconds with
    their Redis and balancer), so the tests share it, each given it restored (:meth:`Deployment.restore`).
    They run on one worker (ONE_WORKER in tests/conftest.py)."""
    with deployed(tmp_path_factory.mktemp("deployment"), dovecot) as made:
        yield made


@pytest.fixture
def deployment(deployment_once: Deployment) -> Deployment:
    deployment_once.restore()
    return deployment_once


async def ids_of(mcp: EnvelopeClient) -> list[str]:
    ids = []
    for box in SOURCES:
        found = await mcp.ok("imap_search_messages", {"account_id": "support", "mailbox": box})
        ids += [m["message_id"] for m in found["messages"]]
    return ids


async def until(mcp: EnvelopeClient, operation_id: str, done: Any, within: float = 30) -> dict[str, Any]:
    """The operation's poll once ``done(poll)`` holds."""

    async def polled() -> dict[str, Any] | None:
        data: dict[str, Any] = await mcp.ok("imap_get_operation", {"operation_id": operation_id})
        return data if done(data) else None

    return await eventually_async(polled, within=within, interval=0.1, what=f"operation {operation_id}")


async def test_requests_of_one_client_go_round_the_instances_and_each_answers(
    deployment: Deployment,
) -> None:
    served_before = deployment.balancer.served()
    async with deployment.client(deployment.team.alice) as alice:
        assert sorted(a["account_id"] for a in (await alice.ok("imap_list_accounts"))["accounts"]) == [
            "own",
            "support",
        ]
        arguments = {"account_id": "support", "mailbox": "*", "limit": 3, "fields": "full"}
        page = await alice.ok("imap_search_messages", arguments)
        subjects = [m["subject"] for m in page["messages"]]
        while page["has_more"]:  # each next page on another instance: the cursor's seal is shared
            page = await alice.ok("imap_search_messages", {**arguments, "cursor": page["next_cursor"]})
            subjects += [m["subject"] for m in page["messages"]]
        assert sorted(subjects) == sorted(f"{box} {n}" for box in SOURCES for n in range(2))
        start = await alice.ok("imap_get_changes", {"account_id": "support", "mailbox": "Box0"})
        again = await alice.ok(
            "imap_get_changes", {"account_id": "support", "mailbox": "Box0", "since": start["changes_token"]}
        )
        assert again["new"] == []
    served = Counter(deployment.balancer.served())
    served.subtract(served_before)  # the balancer's counts are since it started, for the module
    assert len(served) == 3 and min(served.values()) >= 2, served


async def test_a_confirmation_asked_of_one_instance_is_given_on_another_once(deployment: Deployment) -> None:
    delete = {"account_id": "support", "action": "delete", "mailbox": "Old"}
    async with deployment.client(deployment.team.alice, 0) as first:
        asked = await first.fail("imap_manage_mailbox", delete, "confirmation_required")
    token = asked["error"]["details"]["confirm_token"]
    async with deployment.client(deployment.team.bob, 1) as bob:  # not Bob's: as if none existed
        refused = await bob.fail("imap_manage_mailbox", {**delete, "confirm_token": token}, "not_found")
        assert refused["error"]["message"].startswith("No such confirmation token")
        assert deployment.team.alice not in json.dumps(refused)
    async with deployment.client(deployment.team.alice, 1) as second:
        await second.ok("imap_manage_mailbox", {**delete, "confirm_token": token})
    # Made again by another client: the same request with the same token is a replay, refused.
    writer = deployment.dovecot.connect(deployment.team.shared_user)
    try:
        writer.create_folder("Old")
    finally:
        writer.logout()
    async with deployment.client(deployment.team.alice, 2) as third:
        again = await third.fail("imap_manage_mailbox", {**delete, "confirm_token": token}, "invalid_input")
        assert "already used" in again["error"]["message"]
        boxes = await third.ok("imap_list_mailboxes", {"account_id": "support"})
        assert "Old" in [box["name"] for box in boxes["mailboxes"]]  # deleted once, not twice


async def test_a_background_write_is_polled_on_a_second_instance_and_cancelled_from_a_third(
    deployment: Deployment,
) -> None:
    before = deployment.counts()
    async with (
        deployment.client(deployment.team.alice, 0) as first,
        deployment.client(deployment.team.alice, 1) as second,
        deployment.client(deployment.team.alice, 2) as third,
    ):
        ids = await ids_of(first)
        deployment.proxy.set_latency(0.1)
        started = await first.ok(
            "imap_apply_to_messages", {"message_ids": ids, "action": "move", "destination_mailbox": "Archive"}
        )
        operation_id = started["operation"]["operation_id"]
        await until(second, operation_id, lambda data: data["operation"]["done"] > 0)
        async with deployment.client(deployment.team.bob, 1) as bob:
            await bob.fail("imap_get_operation", {"operation_id": operation_id}, "not_found")
            await bob.fail("imap_cancel_operation", {"operation_id": operation_id}, "not_found")
        await third.ok("imap_cancel_operation", {"operation_id": operation_id})
        finished = await until(second, operation_id, lambda data: data["operation"]["state"] != "running")
        deployment.proxy.pass_through()
    assert finished["operation"]["state"] == "canceled"
    outcomes = Counter(r["outcome"] for r in finished["result"]["results"])
    assert set(outcomes) == {"moved", "not_attempted"}, outcomes
    after = message_id_counts(deployment.dovecot, deployment.team.shared_user)
    assert sum(after.values(), Counter()) == before  # nothing lost, nothing doubled
    assert sum(after["Archive"].values()) == outcomes["moved"]


async def test_an_instance_killed_during_a_write_leaves_its_outcome_to_the_others(
    deployment: Deployment,
) -> None:
    before = deployment.counts()
    async with deployment.client(deployment.team.alice, 0) as first:
        ids = await ids_of(first)
        deployment.proxy.set_latency(0.1)
        started = await first.ok(
            "imap_apply_to_messages", {"message_ids": ids, "action": "move", "destination_mailbox": "Archive"}
        )
    operation_id = started["operation"]["operation_id"]
    async with deployment.client(deployment.team.alice, 1) as second:
        await until(second, operation_id, lambda data: data["operation"]["done"] > 0)
        deployment.instances[0].proc.send_signal(signal.SIGKILL)
        deployment.instances[0].proc.wait(timeout=patient(10))
        ended = await until(second, operation_id, lambda data: data["operation"]["state"] != "running", 40)
    deployment.proxy.pass_through()
    assert ended["operation"]["state"] == "failed"
    assert ended["error"]["details"]["outcome_unknown"] is True
    assert "not run again" in ended["error"]["message"]
    assert deployment.counts() == before  # the killed write lost and doubled nothing


def test_a_legacy_session_is_not_found_on_another_instance(deployment: Deployment) -> None:
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {deployment.token(deployment.team.alice)}"}
    opened = httpx2.post(
        deployment.instances[0].url,
        headers=headers,
        content=json.dumps(INITIALIZE_REQUEST),
        timeout=patient(10),
    )
    session = opened.headers["mcp-session-id"]
    listed = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    elsewhere = httpx2.post(
        deployment.instances[1].url,
        headers={**headers, "Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-11-25"},
        content=json.dumps(listed),
        timeout=patient(10),
    )
    assert elsewhere.status_code == 404
    assert "Session not found" in elsewhere.text


async def test_redis_away_fails_only_what_needs_it_and_recovers(deployment: Deployment) -> None:
    delete = {"account_id": "support", "action": "delete", "mailbox": "Old"}
    async with deployment.client(deployment.team.alice, 0) as alice:
        asked = await alice.fail("imap_manage_mailbox", delete, "confirmation_required")
        token = asked["error"]["details"]["confirm_token"]
        deployment.redis.stop()
        page = await alice.ok("imap_search_messages", {"account_id": "support", "mailbox": "Box0"})
        assert len(page["messages"]) == 2  # a read needs no shared state
        down = await alice.fail("imap_manage_mailbox", {**delete, "confirm_token": token}, "unavailable")
        assert down["error"]["retryable"] is True and "redis" in down["error"]["message"].lower()
        await alice.fail("imap_get_operation", {"operation_id": "op_1_abcdef"}, "unavailable")
        boxes = await alice.ok("imap_list_mailboxes", {"account_id": "support"})
        assert "Old" in [box["name"] for box in boxes["mailboxes"]]  # nothing was changed
        deployment.redis.start()
        await alice.ok("imap_manage_mailbox", {**delete, "confirm_token": token})


async def test_a_bulk_write_with_redis_away_is_refused_before_anything_is_changed(
    deployment: Deployment,
) -> None:
    """Regression (issue 47): with Redis down a background write was accepted and ran, but its status
    lived on its own instance alone (the others said it did not exist). Refused instead: ``unavailable``
    (retryable) naming the state store, before anything is written; accepted again once Redis is back."""
    before = deployment.counts()
    move = {"action": "move", "destination_mailbox": "Archive"}
    async with deployment.client(deployment.team.alice, 0) as first:
        ids = await ids_of(first)
        deployment.redis.stop()
        refused = await first.fail("imap_apply_to_messages", {"message_ids": ids, **move}, "unavailable")
        assert refused["error"]["retryable"] is True and refused["error"]["details"]["setting"] == "redis_url"
        assert "nothing was changed" in refused["error"]["message"]
        assert deployment.counts() == before
        deployment.redis.start()
        started = await first.ok("imap_apply_to_messages", {"message_ids": ids[:1], **move})
    async with deployment.client(deployment.team.alice, 1) as second:
        operation_id = started["operation"]["operation_id"]
        await until(second, operation_id, lambda data: data["operation"]["state"] != "running")


async def test_a_write_on_one_instance_reaches_the_listen_streams_held_by_another(
    tmp_path: Path, dovecot_rev1: Dovecot
) -> None:
    """The server has neither IDLE nor NOTIFY and the watches poll once an hour: only the store's
    publish/subscribe can tell instance 1's streams of a write made through instance 0, at once. A
    shared mailbox's change reaches every allowed user's stream; a per-user account's reaches only
    its user's (the same URI names Bob's own mailbox, which did not change)."""
    team = new_team(dovecot_rev1)
    for user in (team.alice, team.bob, team.shared_user):
        dovecot_rev1.seed(user, "INBOX", [mailgen.plain_message(f"mail of {user}", "x")])
    ports = free_ports("127.0.0.1", "127.0.0.1")
    with IdentityProvider() as idp, RedisServer(tmp_path / "redis") as redis:
        audience = f"http://127.0.0.1:{ports[0]}/mcp"
        config = team_config(
            tmp_path / "config.toml",
            dovecot_rev1,
            team,
            idp,
            audience=audience,
            redis_url=redis.url,
            server={"watch_poll_interval_s": 3600},
        )
        instances = start_instances(config, ports)
        shared, own = "imap://support/mailbox/INBOX", "imap://own/mailbox/INBOX"
        heard = {team.alice: Updates(), team.bob: Updates()}
        try:
            async with contextlib.AsyncExitStack() as stack:
                group = await stack.enter_async_context(anyio.create_task_group())
                for user in (team.alice, team.bob):
                    listener = await stack.enter_async_context(
                        http_client(instances[1].url, idp.jwt(user, audience=audience))
                    )
                    stream = await stack.enter_async_context(
                        listener.client.listen(resource_subscriptions=[shared, own])
                    )
                    group.start_soon(heard[user].collect, stream)
                async with http_client(instances[0].url, idp.jwt(team.alice, audience=audience)) as writer:
                    for account_id in ("support", "own"):
                        (message,) = (await writer.ok("imap_search_messages", {"account_id": account_id}))[
                            "messages"
                        ]
                        started = time.monotonic()
                        await writer.ok(
                            "imap_update_message_flags",
                            {
                                "message_ids": [message["message_id"]],
                                "operation": "add",
                                "flags": ["\\Flagged"],
                            },
                        )
                        uri = shared if account_id == "support" else own
                        assert await heard[team.alice].first_after(started, uri, 10) is not None, account_id
                        if account_id == "support":
                            assert await heard[team.bob].first_after(started, uri, 10) is not None
                await anyio.sleep(1)
                assert heard[team.bob].since(0, own) == []  # Alice's own mailbox is not Bob's
                group.cancel_scope.cancel()
        finally:
            for instance in instances:
                instance.stop()


async def test_redis_stopped_during_a_background_write_is_unavailable_and_its_heartbeat_goes_on(
    deployment: Deployment,
) -> None:
    """Regression: with Redis gone while a write ran on instance 0, another instance's poll and cancel
    must be ``unavailable`` envelopes (retryable), and instance 0's heartbeat must outlive the outage,
    so that once Redis is back (empty: it kept nothing) the operation is seen and cancelled again."""
    before = deployment.counts()
    async with (
        deployment.client(deployment.team.alice, 0) as first,
        deployment.client(deployment.team.alice, 1) as second,
    ):
        ids = await ids_of(first)
        deployment.proxy.set_latency(0.3)
        started = await first.ok(
            "imap_apply_to_messages", {"message_ids": ids, "action": "move", "destination_mailbox": "Archive"}
        )
        operation_id = started["operation"]["operation_id"]
        await until(second, operation_id, lambda data: data["operation"]["done"] > 0)
        failed = f"operation {operation_id} not written to the shared state"
        failed_before = deployment.instances[0].log().count(failed)

        async def failed_writes_grew() -> bool:
            return deployment.instances[0].log().count(failed) > failed_before

        deployment.redis.stop()
        polled = await second.fail("imap_get_operation", {"operation_id": operation_id}, "unavailable")
        assert polled["error"]["retryable"] is True
        await second.fail("imap_cancel_operation", {"operation_id": operation_id}, "unavailable")
        assert (await first.ok("imap_get_operation", {"operation_id": operation_id}))["operation"][
            "state"
        ] == ("running")  # its own instance answers from memory
        # Redis is started again only once instance 0 has failed a write of the operation during the
        # outage (its log says so): a fixed pause only hoped a heartbeat had run and failed meanwhile.
        await eventually_async(
            failed_writes_grew,
            within=10,
            what="instance 0 failing a write of the operation while Redis is away",
        )
        deployment.redis.start()

        async def seen_again() -> bool:  # written again by the heartbeat (Redis came back empty)
            return bool(
                (await second.call("imap_get_operation", {"operation_id": operation_id})).get("success")
            )

        await eventually_async(seen_again, within=30, interval=0.2, what="the operation in Redis again")
        await second.ok("imap_cancel_operation", {"operation_id": operation_id})
        finished = await until(second, operation_id, lambda data: data["operation"]["state"] != "running")
        deployment.proxy.pass_through()
    assert finished["operation"]["state"] == "canceled"
    assert deployment.counts() == before


# --- An approval answered on another instance (issue 89 item 16) --------------------------------------
# A 2026-07-28 client asks the user in the call's result (input_required, a requestState) and calls again
# with the answer, wherever the balancer sends it: the SDK's seal of the state was keyed by the process
# (-32602 "Invalid or expired requestState" on another instance or after a restart); it is the team's key.

DOOMED = "<Doomed@t>"


@pytest.fixture
def doomed(deployment: Deployment) -> Iterator[Deployment]:
    """The deployment with one message in ``Old`` to delete for good (what only the user may confirm,
    asked in the result), removed afterwards if the test left it."""
    deployment.sharing_one_key()
    message = mailgen.plain_message("Doomed", "x", message_id=DOOMED)
    deployment.dovecot.seed(deployment.team.shared_user, "Old", [message])
    yield deployment
    imap = deployment.dovecot.connect(deployment.team.shared_user)
    try:
        imap.select_folder("Old")
        imap.delete_messages(imap.search("ALL"))
        imap.expunge()
    finally:
        imap.logout()


async def permanent_delete_of_doomed(mcp: EnvelopeClient) -> dict[str, Any]:
    """The arguments deleting the doomed message for good."""
    found = await mcp.ok("imap_search_messages", {"account_id": "support", "mailbox": "Old"})
    ids = [m["message_id"] for m in found["messages"]]
    return {"message_ids": ids, "action": "delete", "permanent": True}


async def ended(mcp: EnvelopeClient, started: dict[str, Any]) -> dict[str, Any]:
    """The background write ``started`` once it ended."""
    operation_id = started["operation"]["operation_id"]
    return await until(
        mcp, operation_id, lambda data: data["operation"]["state"] not in ("accepted", "running")
    )


def doomed_is_gone(deployment: Deployment) -> bool:
    return DOOMED not in deployment.counts()


def answering_after(before: Callable[[], Awaitable[None]]) -> Any:
    """An elicitation callback that runs ``before`` at each question, then accepts it."""
    accept = answering("accept")

    async def callback(context: Any, params: Any) -> Any:
        await before()
        return await accept(context, params)

    callback.asked = accept.asked  # type: ignore[attr-defined]
    return callback


def served_since(before: dict[str, int], after: dict[str, int]) -> Counter[str]:
    served = Counter(after)
    served.subtract(before)
    return +served


async def test_an_approval_answered_through_the_balancer_is_taken_by_the_next_instance(
    doomed: Deployment,
) -> None:
    """The round robin hands the retry carrying the answer to another instance than the one that asked."""
    deployment = doomed
    at_question: list[dict[str, int]] = []

    async def note_who_asked() -> None:
        at_question.append(deployment.balancer.served())

    callback = answering_after(note_who_asked)
    async with deployment.client(deployment.team.alice, elicitation_callback=callback) as alice:
        assert alice.client.protocol_version == "2026-07-28"
        arguments = await permanent_delete_of_doomed(alice)
        before = deployment.balancer.served()
        started = await alice.ok("imap_apply_to_messages", arguments)
        after = deployment.balancer.served()
        assert (await ended(alice, started))["operation"]["state"] == "ok"
    assert len(callback.asked) == 1 and doomed_is_gone(deployment)
    (asked,) = at_question
    (asking,) = served_since(before, asked).elements()  # the call that asked: one request
    (answered,) = served_since(asked, after).elements()  # its retry with the answer
    assert asking != answered


async def test_an_approval_answered_after_the_instance_restarted_is_taken(doomed: Deployment) -> None:
    """The user answers while the instance that asked is restarted: the retry reaches the new process."""
    deployment = doomed

    async def restart() -> None:
        port = deployment.instances[0].port
        deployment.instances[0].stop()
        (deployment.instances[0],) = await anyio.to_thread.run_sync(
            start_instances, deployment.config, [port]
        )

    callback = answering_after(restart)
    async with deployment.client(deployment.team.alice, 0, elicitation_callback=callback) as alice:
        started = await alice.ok("imap_apply_to_messages", await permanent_delete_of_doomed(alice))
        assert (await ended(alice, started))["operation"]["state"] == "ok"
    assert len(callback.asked) == 1 and doomed_is_gone(deployment)


async def test_an_approval_answered_after_its_lifetime_is_refused_clearly_and_asked_again(
    doomed: Deployment, tmp_path: Path
) -> None:
    """An instance whose states live one second (``request_state_ttl_s``): the answer given later is an
    envelope saying so (not the SDK's -32602), nothing is deleted, and the call made again asks again
    (regression: the call made again on the 1 s instance outlived its state too in a loaded CI run)."""
    deployment = doomed
    short = tmp_path / "short.toml"
    short.write_text(
        deployment.config.read_text().replace("[server]\n", "[server]\nrequest_state_ttl_s = 1\n")
    )
    (instance,) = start_instances(short, [0])
    late = [True]  # the first answer only

    async def outlive_the_state() -> None:
        if late:
            late.clear()
            outlived = time.time() + 1.5  # the 1 s lifetime under test, on the server's clock, passed

            async def expired() -> bool:
                return time.time() > outlived

            await eventually_async(expired, within=5, what="the request state's lifetime passing")

    callback = answering_after(outlive_the_state)
    try:
        async with http_client(
            instance.url, deployment.token(deployment.team.alice), elicitation_callback=callback
        ) as alice:
            arguments = await permanent_delete_of_doomed(alice)
            refused = await alice.fail("imap_apply_to_messages", arguments, "invalid_input")
            assert refused["error"]["details"] == {"parameter": "request_state", "reason": "expired"}
            assert "Call the tool again" in refused["error"]["message"]
            assert not doomed_is_gone(deployment)
    finally:
        instance.stop()
    # Made again (on an instance of the usual lifetime: an answer at once may outlive 1 s on a loaded host),
    # the call asks again and the answer is taken.
    async with deployment.client(deployment.team.alice, 0, elicitation_callback=callback) as alice:
        started = await alice.ok("imap_apply_to_messages", arguments)
        assert (await ended(alice, started))["operation"]["state"] == "ok"
    assert len(callback.asked) == 2 and doomed_is_gone(deployment)
