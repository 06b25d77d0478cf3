"""xdist's controller rewrites the test modules once, as pytest would, before its workers start
(tests/support/rewrite_ahead.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from _pytest.assertion import rewrite

from tests.support.rewrite_ahead import rewrite_ahead


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
