"""A test run that is ended from outside (SIGTERM from a CI time limit or a user, or the xdist controller
going away) still stops the IMAP servers it started.

``end_run_on_sigterm(config)``, called from ``pytest_configure``, makes SIGTERM end the run as Ctrl-C
does: a ``KeyboardInterrupt`` in the main thread, so fixtures tear down (servers stop, their directories
go) and ``atexit`` runs. The xdist controller passes the SIGTERM on to its workers, and a worker asks the
kernel for a SIGTERM when the controller ends (``PR_SET_PDEATHSIG``). A process killed outright
(SIGKILL) runs nothing: its servers then end through their lifeline (``LIFELINE`` in imapserver.py).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import threading
from types import FrameType

import pytest

from tests.support.run.processes import child_pids, live_children

PR_SET_PDEATHSIG = 1


def end_run_on_sigterm(config: pytest.Config) -> None:
    """Install the SIGTERM handling described in the module docstring for this pytest process."""
    if threading.current_thread() is not threading.main_thread():
        return  # signal handlers can only be set from the main thread (pytest run inside a thread)
    worker = hasattr(config, "workerinput")
    controller = not worker and bool(getattr(config.option, "numprocesses", None))

    def interrupt(signum: int, frame: FrameType | None) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process at once
        if controller:
            for pid in child_pids(live_children()):  # the controller's children are its workers
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGTERM)
        raise KeyboardInterrupt("SIGTERM")

    signal.signal(signal.SIGTERM, interrupt)
    if worker:
        end_with_parent(signal.SIGTERM)


def end_with_parent(signum: int) -> None:
    """Have the kernel send ``signum`` to this process when its parent ends (Linux ``PR_SET_PDEATHSIG``)."""
    parent = os.getppid()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent:  # the parent ended before the request was in place
        os.kill(os.getpid(), signum)
