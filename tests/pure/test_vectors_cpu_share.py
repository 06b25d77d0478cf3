"""The pass that makes vectors takes the share of a core ``[index] meaning_cpu_share`` gives it (issue 90
item 2): it rests after each batch for the processor time the process spent meanwhile times ``1 / share -
1``, and its thread runs at the lowest priority (Linux), no other thread of the server's."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from pydantic import ValidationError

from mail_imap_mcp.config.index_settings import IndexSettings
from mail_imap_mcp.index.engines.sqlite.store import SqliteStore
from mail_imap_mcp.index.store import TEXT_COLUMNS, IndexedMessage
from mail_imap_mcp.index.sync_vectors import BATCH_PAUSE_S, CpuShare, fill_vectors, lowest_priority

#: Processor seconds the model below spends on each call.
BURN_S = 0.02


class BurningModel:
    """A model of 16 dimensions whose every call takes :data:`BURN_S` of its thread's processor time."""

    name = "burning"
    dimensions = 16

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        start = time.thread_time()
        while time.thread_time() - start < BURN_S:
            pass
        rows = np.ones((len(texts), self.dimensions), dtype=np.float32)
        return rows / np.sqrt(self.dimensions)

    def rest(self) -> None:
        """Nothing is kept between calls."""


def test_the_rest_is_the_processor_time_since_the_last_rest_times_what_the_share_leaves() -> None:
    ticks = iter([10.0, 10.3, 10.35, 11.35])
    share = CpuShare(0.25, clock=lambda: next(ticks))
    assert share.rest() == pytest.approx(0.9)  # 0.3 s of processor: three times that at a quarter
    assert share.rest() == pytest.approx(0.15)
    assert CpuShare(1.0, clock=iter([0.0, 5.0]).__next__).rest() == BATCH_PAUSE_S  # the least rest


def test_the_pass_rests_after_each_batch_for_the_processor_time_it_took(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "index.sqlite3")
    try:
        texts = tuple(f"note {column}" for column in TEXT_COLUMNS)
        messages = [
            IndexedMessage(uid, 1_700_000_000, 20231114, 100, (), False, texts) for uid in range(1, 31)
        ]
        store.put(store.start_folder("INBOX", 1), messages)
        share = CpuShare(0.5)
        rests: list[float] = []
        done = fill_vectors(
            store, BurningModel(), lambda: False, batch=10, pause=lambda: rests.append(share.rest())
        )
        assert done == 30
        assert len(rests) >= 3  # a rest after each batch
        assert all(rest >= BURN_S for rest in rests[:3])  # at half a core, at least the batch's own time
    finally:
        store.close()


@pytest.mark.skipif(sys.platform != "linux", reason="a thread's priority is its own on Linux alone")
def test_the_pass_s_thread_alone_runs_at_the_lowest_priority() -> None:
    before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    seen: list[tuple[bool, int]] = []

    def pass_thread() -> None:
        lowered = lowest_priority()
        seen.append((lowered, os.getpriority(os.PRIO_PROCESS, threading.get_native_id())))

    thread = threading.Thread(target=pass_thread)
    thread.start()
    thread.join()
    assert seen == [(True, 19)]
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == before


@pytest.mark.parametrize("share", [0, -0.5, 1.5])
def test_a_share_out_of_range_is_refused_naming_the_setting(share: float) -> None:
    with pytest.raises(ValidationError, match="meaning_cpu_share"):
        IndexSettings.model_validate({"meaning_cpu_share": share})
    assert IndexSettings().meaning_cpu_share == 1.0  # as before: the share is the user's to lower
