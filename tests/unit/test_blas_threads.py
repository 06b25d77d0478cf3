"""numpy's BLAS on one thread in a process of ours: OpenBLAS gave every matrix product of search by meaning
a thread per core, which spun on after it (docs/benchmarks.md, "numpy on one thread"). Counted in child
processes, each of which makes one product: its threads, not its time. OpenBLAS starts a thread per core this
process may run on (its affinity), at most as many as ``OPENBLAS_NUM_THREADS`` allows: on one core it starts none
whatever the setting, and the tests say what it does there too (they failed on one core, as under ``taskset``)."""

from __future__ import annotations

import os
import subprocess
import sys

#: The cores a child of this process may run on: OpenBLAS starts no more threads than that.
USABLE_CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1

#: A child that makes one matrix product, as search by meaning's hubness reduction does, and prints its
#: threads and the setting it ran with.
PRODUCT = """
import os, sys
if sys.argv[1] == "ours":
    import mail_imap_mcp
import numpy as np
rows = np.ones((400, 256), dtype=np.float32)
(rows @ rows.T).sum()
print(len(os.listdir("/proc/self/task")), os.environ.get("OPENBLAS_NUM_THREADS"))
"""


def _after_a_product(kind: str, **env: str) -> tuple[int, str]:
    """The child's threads after its product, and its OPENBLAS_NUM_THREADS (``env``: set for it)."""
    base = {key: value for key, value in os.environ.items() if key != "OPENBLAS_NUM_THREADS"}
    done = subprocess.run(
        [sys.executable, "-c", PRODUCT, kind],
        env={**base, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    threads, setting = done.stdout.split()
    return int(threads), setting


def test_a_matrix_product_in_a_process_of_ours_starts_no_thread() -> None:
    assert _after_a_product("ours") == (1, "1")


def test_without_our_package_openblas_would_start_one_per_core() -> None:
    """What the setting prevents: a thread per usable core (CI's machine has two, so the test above means
    something there)."""
    assert _after_a_product("numpy alone") == (USABLE_CORES, "None")


def test_a_users_own_setting_is_kept() -> None:
    assert _after_a_product("ours", OPENBLAS_NUM_THREADS="2") == (min(2, USABLE_CORES), "2")
