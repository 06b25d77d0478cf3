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


def module_fixtures(tree: ast.Module) -> set[str]:
    """The names of the fixtures of ``tree`` declared ``@pytest.fixture(scope="module")``."""
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        for decorator in node.decorator_list
        if isinstance(decorator, ast.Call)
        and ast.unparse(decorator.func) == "pytest.fixture"
        and any(k.arg == "scope" and ast.literal_eval(k.value) == "module" for k in decorator.keywords)
    }


def test_every_test_of_a_module_fixture_a_group_shares_is_in_that_group() -> None:
    # A test that asks for the fixture but is left out of the group would run on another worker, which
    # starts the fixture's servers once more. The modules whose single tests are grouped, and their
    # module fixtures, are read from ONE_WORKER and the sources: no list to keep beside them.
    paths = {nodeid.partition("::")[0] for nodeid in ONE_WORKER if "::" in nodeid}
    shared = []
    for path in sorted(paths):
        tree = ast.parse((ROOT / path).read_text())
        tests = [
            node
            for node in tree.body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_")
        ]
        for fixture in module_fixtures(tree):
            users = [test.name for test in tests if fixture in {arg.arg for arg in test.args.args}]
            groups = {_together(f"{path}::{name}") for name in users}
            if groups - {None}:
                shared.append((path, fixture))
                assert len(groups) == 1, (path, fixture, groups)
    # The fixtures this guards today (a group of single tests sharing one server process or deployment).
    assert {
        ("tests/integration/test_team_auth.py", "token_checks"),
        ("tests/integration/test_team_instances.py", "unchanged_deployment"),
    } <= set(shared), shared
