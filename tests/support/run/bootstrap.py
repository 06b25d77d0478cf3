"""Run one function of scripts/_bootstrap.sh as scripts/test does, with stand-in tools ahead on PATH (an
``apt-get`` or ``npm`` of the test's own) and its settings (``MIM_*``) given."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def bootstrap_command(
    call: str, stand_ins: Path, settings: Mapping[str, str], *args: str
) -> tuple[list[str], dict[str, str]]:
    """The command line and environment that run ``call`` (shell words; ``"$@"`` are ``args``) once
    _bootstrap.sh is sourced, in the repository's root (the caller's ``cwd``). What the machine's
    clones share (``MIM_SHARED_CACHE``) is beside ``stand_ins``, not the user's, unless ``settings`` say."""
    env = {
        "PATH": f"{stand_ins}:{os.environ['PATH']}",
        "HOME": os.environ["HOME"],
        "MIM_SHARED_CACHE": str(stand_ins.parent / "shared-cache"),
        **settings,
    }
    return ["bash", "-c", f"source scripts/_bootstrap.sh && {call}", "bootstrap", *args], env
