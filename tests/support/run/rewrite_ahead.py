"""The test modules' assertion rewriting and the project's bytecode, made once before xdist's workers start.

pytest rewrites the asserts of every test module it imports and keeps the result beside it
(``__pycache__/<module>.<python>-pytest-<version>.pyc``, checked by the source's hash). The workers of
a run start together: in a fresh clone none finds that file, so each rewrote all of tests/ itself (5.7
CPU-seconds apiece on this 2-core machine, as much as the rest of its start and collection). The
controller, which collects nothing, writes the files first; a worker then only reads them. The same
for the plain bytecode of src/ and tests/' other modules (0.4 CPU-seconds a worker).

``scripts/test`` also runs this module by itself (``python -m tests.support.run.rewrite_ahead [ARGS]``, the
run's arguments) while the installs of a fresh clone finish: the controller then finds the files
current, and does not spend that time before its workers start (in a fresh clone this module takes
6.6 CPU-seconds by itself, 5.1 of them rewriting).

It uses pytest's own rewriting (``_pytest.assertion.rewrite``, pinned in requirements.lock), so the
files are exactly those a worker would have written.

Run by itself, it makes Hypothesis's caches of the checkout (``.hypothesis/``) too, when there are none: the
constants of every module (Hypothesis draws a module's literals into its examples, and keeps them per
source) and the Unicode categories. In a fresh clone every worker read every module for them while it
collected: 2 CPU-seconds apiece, 14 of a run on this 2-core machine (60.8 CPU-seconds for seven workers'
collection of tests/ without them, 46.9 with them; 5.7 to make them once).
"""

from __future__ import annotations

import compileall
import fnmatch
import importlib.util
import os
import re
import subprocess
import sys
import types
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from _pytest.assertion import rewrite
from hypothesis.configuration import storage_directory
from hypothesis.internal.charmap import charmap
from hypothesis.internal.constants_ast import constants_from_module

#: The checkout's root (this file is tests/support/run/rewrite_ahead.py).
_ROOT = Path(__file__).resolve().parents[3]
#: What every worker imports as plain modules: the project, and tests/ but for what pytest rewrites.
_PLAIN = ((_ROOT / "src", None), (_ROOT / "tests", re.compile(r"/(test_[^/]*|conftest)\.py$")))

#: Where the modules whose constants Hypothesis reads are: those of the checkout a test run imports.
_LOCAL = (_ROOT / "src", _ROOT / "tests", _ROOT / "scripts")

#: Set (non-empty) by scripts/test where it linked Hypothesis's caches to those other clones made: every
#: module's constants are read then, and made where missing (0.3 CPU-seconds when all are there).
WARM_EVERY_MODULE_ENV = "MIM_WARM_EVERY_MODULE"

#: The flags of pytest's pyc header: hash-based and checked (PEP 552).
_CHECKED_HASH = b"\x03\x00\x00\x00"


def _test_modules(config: pytest.Config, args: Sequence[str]) -> Iterator[Path]:
    """The files of ``args`` (a run's arguments) that pytest would rewrite as test modules."""
    patterns = [*config.getini("python_files"), "conftest.py"]
    skipped = config.getini("norecursedirs")  # as pytest: .venv, build, node_modules...
    seen: set[Path] = set()
    for arg in args:
        path = (config.invocation_params.dir / arg.split("::", 1)[0]).resolve()
        files = path.rglob("*.py") if path.is_dir() else [path] if path.is_file() else []
        for file in files:
            below = file.relative_to(path).parts[:-1] if path.is_dir() else ()
            if (
                file not in seen
                and any(fnmatch.fnmatch(file.name, pattern) for pattern in patterns)
                and not any(fnmatch.fnmatch(part, pattern) for part in below for pattern in skipped)
            ):
                seen.add(file)
                yield file


def _is_current(source: Path, pyc: Path) -> bool:
    """Whether ``pyc`` is pytest's rewriting of ``source`` as it is now (the header pytest checks)."""
    try:
        header = pyc.read_bytes()[:16]
        digest = importlib.util.source_hash(source.read_bytes())
    except OSError:
        return False
    return header == importlib.util.MAGIC_NUMBER + _CHECKED_HASH + digest[:8]


def warm_hypothesis(directories: Sequence[Path] = _LOCAL, *, every: bool = False) -> int:
    """Make Hypothesis's caches of the checkout where it has none (its constants directory is missing),
    or, with ``every``, complete them (shared with other clones: scripts/_bootstrap.sh's
    link_hypothesis_caches): the Unicode categories, and the constants of each module under
    ``directories``; how many modules were read. Hypothesis names each module's entry by the hash of its
    source: a module edited later is read again by the first process that imports it, as before."""
    if not every and storage_directory("constants", intent_to_write=False).path.exists():
        return 0
    charmap()
    read = 0
    for directory in directories:
        for source in directory.rglob("*.py"):
            module = types.ModuleType(source.stem)  # never run: Hypothesis reads only its __file__
            module.__file__ = str(source)
            constants_from_module(module)
            read += 1
    return read


def python_with_storage(
    arguments: Sequence[str], storage: Path, within: float
) -> subprocess.CompletedProcess[str]:
    """Python run with ``arguments`` from the checkout, Hypothesis's caches in ``storage`` (the tests of
    :func:`warm_hypothesis`): its output, not checked; ``within`` seconds at most (already patient)."""
    return subprocess.run(
        [sys.executable, *arguments],
        cwd=_ROOT,
        env={**os.environ, "HYPOTHESIS_STORAGE_DIRECTORY": str(storage)},
        capture_output=True,
        text=True,
        timeout=within,
        check=False,
    )


def rewrite_ahead(config: pytest.Config, args: Sequence[str] | None = None) -> int:
    """Write the bytecode of the plain modules, and of the rewritten test modules of ``args`` (by
    default the run's), that is missing or stale; how many test modules were rewritten."""
    if sys.dont_write_bytecode:  # no process of the run writes any
        return 0
    for directory, rewritten in _PLAIN:
        compileall.compile_dir(directory, quiet=1, rx=rewritten)
    state = config.stash.get(rewrite.assertstate_key, None)
    if state is None:  # --assert=plain: nothing rewritten
        return 0
    written = 0
    for source in _test_modules(config, config.args if args is None else args):
        cache_dir = rewrite.get_cache_dir(source)
        pyc = cache_dir / (source.name[:-3] + rewrite.PYC_TAIL)
        if _is_current(source, pyc) or not rewrite.try_makedirs(cache_dir):
            continue
        try:
            source_hash, code = rewrite._rewrite_test(source, config)
        except (OSError, SyntaxError):
            continue  # the worker's collection reports it
        written += rewrite._write_pyc(state, code, source_hash, pyc)
    return written


class _RewriteAndEnd:
    """The plugin of ``main``: once pytest is configured for the run, write the files and end."""

    def pytest_configure(self, config: pytest.Config) -> None:
        rewrite_ahead(config)
        pytest.exit("rewritten", returncode=0)


def main(args: Sequence[str]) -> int:
    """Write the files for a run with ``args`` (its paths, options and ini) in this process alone, and
    Hypothesis's caches (:func:`warm_hypothesis`: before pytest loads Hypothesis's plugin, which counts
    touching its storage while a run starts as slow code in a plugin, and warns)."""
    warm_hypothesis(every=bool(os.environ.get(WARM_EVERY_MODULE_ENV)))
    return int(
        pytest.main(["-p", "no:cacheprovider", "-p", "no:xdist", "-q", *args], plugins=[_RewriteAndEnd()])
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
