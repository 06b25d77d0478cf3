"""A Debian daemon the tests start on a free loopback port (HAProxy, Redis): its files and its log in a
directory of its own, started in the foreground and waited for until it answers, stopped with it."""

from __future__ import annotations

import subprocess
from pathlib import Path
from types import TracebackType
from typing import ClassVar, Self

from tests.support.patience import NotYet, eventually, patient
from tests.support.servers.imapserver import free_ports, which

READY_TIMEOUT_S = 10.0


class LoopbackDaemon:
    """``with Daemon(directory) as daemon: ...``: :meth:`command` started with its output in
    ``<name>.log``, ready once :meth:`answers`; ``stop`` and ``start`` again keep the port."""

    #: The Debian program, and its package (the error says what scripts/test installs).
    program: ClassVar[str]
    package: ClassVar[str]
    #: Whether ``stop`` asks it to end (SIGTERM, then SIGKILL after 5 s) or kills it at once.
    graceful: ClassVar[bool] = True

    def __init__(self, directory: Path, port: int | None = None) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.port = port or free_ports("127.0.0.1")[0]
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def log_path(self) -> Path:
        return self.directory / f"{self.program}.log"

    def binary(self) -> str:
        found = which(self.program)
        if found is None:
            raise RuntimeError(
                f"{self.program} is missing: scripts/test installs it (apt-get install {self.package})"
            )
        return found

    def command(self) -> list[str]:
        """The command line that runs it in the foreground (checking what it needs first)."""
        raise NotImplementedError

    def answers(self) -> bool:
        """Whether it answers on its port now (an OSError: not yet)."""
        raise NotImplementedError

    def log(self) -> str:
        """The end of its log."""
        return self.log_path.read_text(errors="replace")[-2000:] if self.log_path.exists() else ""

    def start(self) -> None:
        argv = self.command()
        with self.log_path.open("ab") as log:
            self._proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        proc = self._proc

        def answered() -> bool:
            if proc.poll() is not None:
                raise RuntimeError(f"{self.program} exited: {self.log()}")
            return self.answers()

        try:
            eventually(answered, within=READY_TIMEOUT_S, interval=0.02, retry_on=(OSError,))
        except NotYet:
            raise RuntimeError(f"{self.program} did not answer on port {self.port}: {self.log()}") from None

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        if self.graceful:
            proc.terminate()
            try:
                proc.wait(timeout=patient(5))
                return
            except subprocess.TimeoutExpired:
                pass
        proc.kill()
        proc.wait(timeout=patient(10))

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
