"""xdist's controller rewrites the test modules once, as pytest would, before its workers start
(tests/support/run/rewrite_ahead.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _pytest.assertion import rewrite

from tests.support.patience import patient
from tests.support.run.bootstrap import bootstrap_command
from tests.support.run.rewrite_ahead import python_with_storage, rewrite_ahead

ROOT = Path(__file__).resolve().parents[2]


def _rewritten(source: Path) -> Any:
    """The code pytest's import hook would take from the cache for ``source``, or None."""
    return rewrite._read_pyc(source, rewrite.get_cache_dir(source) / (source.stem + rewrite.PYC_TAIL))


def test_each_test_module_is_rewritten_once_into_the_file_pytest_reads(
    pytestconfig: pytest.Config, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    source = tmp_path / "test_sample.py"
    source.write_text("def test_sum():\n    total = 1 + 1\n    assert total == 3\n")
    (tmp_path / "helper.py").write_text("VALUE = 1\n")
    (tmp_path / ".venv").mkdir()  # pytest does not look there (norecursedirs), nor does the controller
    (tmp_path / ".venv" / "test_theirs.py").write_text("def test_theirs():\n    assert True\n")

    assert rewrite_ahead(pytestconfig, [str(tmp_path)]) == 1
    namespace: dict[str, Any] = {}
    exec(_rewritten(source), namespace)
    with pytest.raises(AssertionError, match="assert 2 == 3"):  # pytest's explanation: rewritten
        namespace["test_sum"]()
    assert _rewritten(tmp_path / "helper.py") is None  # not a test module: left to Python
    assert not (tmp_path / ".venv" / "__pycache__").exists()
    assert rewrite_ahead(pytestconfig, [str(tmp_path / "test_missing.py")]) == 0  # the run says it is missing

    assert rewrite_ahead(pytestconfig, [f"{source}::test_sum"]) == 0  # current: not again
    source.write_text("def test_sum():\n    assert 1 + 1 == 2\n")
    assert rewrite_ahead(pytestconfig, [str(source)]) == 1  # changed: again


def test_nothing_is_written_where_the_run_writes_no_bytecode(
    pytestconfig: pytest.Config, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    (tmp_path / "test_sample.py").write_text("def test_one():\n    assert True\n")
    assert rewrite_ahead(pytestconfig, [str(tmp_path)]) == 0
    assert not (tmp_path / "__pycache__").exists()


def test_run_by_itself_it_writes_the_files_of_the_runs_arguments_and_ends(tmp_path: Path) -> None:
    """scripts/test runs it so while a fresh clone's installs finish, before the controller starts."""
    source = tmp_path / "test_sample.py"
    source.write_text("def test_sum():\n    assert 1 + 1 == 3\n")
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    # Hypothesis's caches there already: making the whole checkout's is test_scripts_test_runs.py's.
    (tmp_path / "hypothesis" / "constants").mkdir(parents=True)
    environment["HYPOTHESIS_STORAGE_DIRECTORY"] = str(tmp_path / "hypothesis")
    run = subprocess.run(
        [sys.executable, "-m", "tests.support.run.rewrite_ahead", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=patient(60),
        check=False,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert _rewritten(source) is not None
    assert "passed" not in run.stdout and "failed" not in run.stdout  # no test ran


def _warming(modules: Path, every: bool | None = None) -> str:
    """Python that warms Hypothesis's caches for ``modules`` and prints how many modules it read."""
    flag = "" if every is None else f", every={every}"
    return (
        "from pathlib import Path\nfrom tests.support.run.rewrite_ahead import warm_hypothesis\n"
        f"print(warm_hypothesis([Path({str(modules)!r})]{flag}))"
    )


def _in_a_process(code: str, storage: Path) -> str:
    """The output of Python running ``code`` from the checkout, Hypothesis's caches in ``storage``."""
    run = python_with_storage(["-c", code], storage, patient(60))
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout


def test_hypothesis_caches_are_made_once_as_hypothesis_itself_makes_them(tmp_path: Path) -> None:
    # The whole checkout's, run by itself and with no warning: test_scripts_test_runs.py.
    modules = tmp_path / "modules"
    modules.mkdir()
    (modules / "sample_literals.py").write_text('GREETING = "hello there"\nLIMIT = 4242\n')
    ahead = tmp_path / "ahead"
    warm = _warming(modules)
    assert _in_a_process(warm, ahead) == "1\n"
    assert list((ahead / "unicode_data").rglob("charmap.json.gz"))
    assert _in_a_process(warm, ahead) == "0\n"  # there already: nothing read again
    # Hypothesis on the module imported writes the very entry made ahead (named by its source's hash).
    itself = tmp_path / "itself"
    _in_a_process(
        f"import sys; sys.path.insert(0, {str(modules)!r}); import sample_literals\n"
        "from hypothesis.internal.constants_ast import constants_from_module\n"
        "constants_from_module(sample_literals)",
        itself,
    )
    (entry,) = (itself / "constants").iterdir()
    (made,) = (ahead / "constants").iterdir()
    assert (made.name, made.read_text()) == (entry.name, entry.read_text())
    assert "hello there" in entry.read_text() and "4242" in entry.read_text()


def test_caches_linked_from_other_clones_are_completed_with_the_modules_they_lack(tmp_path: Path) -> None:
    # Issue 79: a fresh clone links Hypothesis's caches that other clones made (3.6 CPU-seconds each
    # made them anew); its own modules, new or edited, are then read ahead too, not by every worker.
    modules = tmp_path / "modules"
    modules.mkdir()
    (modules / "made_elsewhere.py").write_text('ELSEWHERE = "from elsewhere"\n')
    shared = tmp_path / "shared"

    def warm(every: bool) -> str:
        return _in_a_process(_warming(modules, every), shared)

    assert warm(every=False) == "1\n"
    (modules / "this_clone_only.py").write_text('MINE = "mine alone"\n')
    assert warm(every=False) == "0\n"  # the clone's own caches: there, not read again
    assert warm(every=True) == "2\n"
    entries = " ".join(entry.read_text() for entry in (shared / "constants").iterdir())
    assert "from elsewhere" in entries and "mine alone" in entries


def test_a_clone_without_hypothesis_caches_links_the_shared_ones_once(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    clone.mkdir()
    (clone / "requirements.lock").write_text("hypothesis==6.1.2 \\\n    --hash=sha256:00\n")
    shared = tmp_path / "shared"
    link = (
        f"ROOT={clone}; if link_hypothesis_caches; then echo linked; else echo kept; fi;"
        " if link_hypothesis_caches; then echo linked; else echo kept; fi"
    )
    command, env = bootstrap_command(link, tmp_path / "bin", {"MIM_SHARED_CACHE": str(shared)})
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=patient(30))
    assert done.stdout.split() == ["linked", "kept"], done.stderr
    for name in ("constants", "unicode_data"):
        assert (clone / ".hypothesis" / name).resolve() == shared / "hypothesis-6.1.2" / name
