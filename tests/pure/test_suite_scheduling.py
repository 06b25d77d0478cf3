"""The suite's own scheduling (tests/conftest.py): the groups one worker must run together."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ONE_WORKER, _together

ROOT = Path(__file__).resolve().parents[2]


def test_every_group_names_a_module_or_test_that_exists() -> None:
    # A renamed module or test would silently leave its group, and its costly fixture or cache would be
    # made again on another worker.
    for nodeid in ONE_WORKER:
        path, _, name = nodeid.partition("::")
        module = ROOT / path
        assert module.is_file(), nodeid
        if name:
            tree = ast.parse(module.read_text())
            names = {
                node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            }
            assert name in names, nodeid


def test_a_module_group_takes_every_test_and_parameter_of_it() -> None:
    assert (
        _together("tests/integration/test_readme.py::test_readme_check_command_logs_in")
        == "the README's install"
    )
    assert _together("tests/integration/test_readme.py::test_x[a-b]") == "the README's install"


def test_a_test_group_takes_each_parameter_and_no_other_test() -> None:
    generated = "tests/integration/test_hostile_mail.py::test_generated_messages_cover_every_family_of_damage"
    assert _together(generated) == _together(generated + "[x]") == "hostile mail"
    assert (
        _together(
            "tests/integration/test_hostile_mail.py::test_any_bodystructure_parses_into_clean_parts_or_value_error"
        )
        is None
    )
