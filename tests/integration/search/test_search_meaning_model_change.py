"""A change of model through a real MCP client on Dovecot (issue 90 item 1): an index whose vectors the
English model made (the default before issue 90, or ``[index] meaning_model = "english"``) opened by a
server with the default, multilingual model makes every vector again in the background: meanwhile
``about`` answers, by words and the vectors made so far, ``partial`` with the count still to make (the
other model's vectors are never compared with the new model's question); stopped midway, a restart goes
on from there; once done, a German question finds the English landlord's mail about the heating."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import anyio
import pytest

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.config import Config
from mail_imap_mcp.index.sync_vectors import BATCH, vector_store
from mail_imap_mcp.meaning.model import SHIPPED_MODEL
from mail_imap_mcp.meaning.multilingual import MULTILINGUAL_MODEL
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import open_client
from tests.support.clients.index_clients import SEARCH, index_config, opened_store, wait_ready
from tests.support.mail.mailgen import plain_message
from tests.support.patience import eventually, eventually_async
from tests.support.servers.dovecot import Dovecot
from tests.support.shared.search_meaning import MAIL, every_message_has_vectors, seed, subjects

pytestmark = pytest.mark.anyio

#: Mail besides the landlord's: more than two of the vectors' pass's batches, so that a pass held to a
#: small share of a core rests between them, and a search meanwhile sees vectors still to make.
OTHERS = 2 * BATCH + 40
TOTAL = len(MAIL) + OTHERS


def with_index(config: Config, **index: Any) -> Config:
    return config.model_copy(update={"index": config.index.model_copy(update=index)})


def counts(config: Config) -> tuple[str | None, int]:
    """The model the index's vectors are stamped with, and how many messages have that model's."""
    with opened_store(config) as store:
        vectors = vector_store(store)
        assert vectors is not None
        model = vectors.vector_model()
        return model, vectors.vector_counts(model or "").with_vectors


async def first_answer(mcp: EnvelopeClient) -> dict[str, Any] | None:
    """A search by meaning asked from the server's start (its vectors' pass begins once the first sync of
    the words ended); None while the index is not ready."""
    envelope: dict[str, Any] = await mcp.call(SEARCH, {"about": "the radiators are cold", "mailboxes": ["*"]})
    if not envelope["success"]:
        assert envelope["error"]["code"] == "unavailable", envelope
        return None
    return envelope


async def test_vectors_another_model_made_are_made_again_in_the_background_resuming_after_a_restart(
    dovecot: Dovecot, tmp_path: Path
) -> None:
    user = dovecot.new_user()
    seed(dovecot, user)
    dovecot.seed(
        user,
        "Archive",
        [
            plain_message(f"Weekly news {n}", f"Our shop's offers of week {n}: shoes and shirts.")
            for n in range(OTHERS)
        ],
    )
    default = index_config(dovecot, user, tmp_path)
    english = with_index(default, meaning_model="english")
    async for mcp in open_client(english, AppContext.from_config(english)):
        assert await wait_ready(mcp) == "ready"
        await every_message_has_vectors(mcp)
    assert counts(english) == (SHIPPED_MODEL, TOTAL)

    # The default model, its pass held to a twentieth of a core: it rests after each batch.
    slowed = with_index(default, meaning_cpu_share=0.05)
    async for mcp in open_client(slowed, AppContext.from_config(slowed)):
        envelope = await eventually_async(
            functools.partial(first_answer, mcp), within=60, what="a search by meaning answered"
        )
        data = envelope["data"]
        assert data["status"] == "partial", envelope
        (issue,) = [issue for issue in data["issues"] if issue["code"] == "meaning_partial"]
        assert f" of the {TOTAL} " in issue["message"], issue
        assert "Radiators" in subjects(data)  # by its words meanwhile
        # Its first batch stored (the newest mail first), the server stops while the pass rests.
        made = await anyio.to_thread.run_sync(
            lambda: eventually(
                lambda: (found := counts(slowed))[0] == MULTILINGUAL_MODEL and found[1] >= BATCH and found,
                within=60,
                what="a first batch of the default model's vectors",
            )
        )
    assert made[1] < TOTAL

    async for mcp in open_client(default, AppContext.from_config(default)):
        assert await wait_ready(mcp) == "ready"
        await every_message_has_vectors(mcp)
        found = await mcp.ok(
            SEARCH,
            {"about": "die Heizung ist kaputt und die Zimmer sind kalt", "mailboxes": ["*"], "limit": 3},
        )
    assert set(subjects(found)[:2]) == {"Radiators", "Central heating"}, subjects(found)
    assert counts(default) == (MULTILINGUAL_MODEL, TOTAL)
