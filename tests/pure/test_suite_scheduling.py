"""The suite's own scheduling (tests/conftest.py): the groups one worker must run together, and where the
tests that mostly wait go."""

from __future__ import annotations

import ast
import itertools
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ONE_WORKER, _interleaved, _spread_waiting, _together

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
        _together("tests/integration/setup/test_readme.py::test_readme_check_command_logs_in")
        == "the README's install"
    )
    assert _together("tests/integration/setup/test_readme.py::test_x[a-b]") == "the README's install"


def test_a_test_group_takes_each_parameter_and_no_other_test() -> None:
    generated = (
        "tests/integration/reading/test_hostile_mail.py::test_generated_messages_cover_every_family_of_damage"
    )
    assert _together(generated) == _together(generated + "[x]") == "hostile mail"
    assert (
        _together(
            "tests/integration/reading/test_hostile_mail.py::test_any_bodystructure_parses_into_clean_parts_or_value_error"
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
    # The fixture this guards today (a group of single tests sharing one server process).
    assert ("tests/integration/team/test_team_auth.py", "shared_server") in shared, shared


@dataclass
class Item:
    """As much of a collected test as the scheduling reads."""

    nodeid: str
    waits: bool = False

    def get_closest_marker(self, name: str) -> object:
        return self if name == "waits" and self.waits else None


def order_of_the_run(integration: int, pure: int, waiting: int) -> list[Item]:
    """A run as the sort leaves it: the integration tests, then the many quick ones of the pure tier, and
    the waiting tests side by side among the integration tests."""
    return [
        *(Item(f"tests/integration/test_w.py::test_{n}", waits=True) for n in range(waiting)),
        *(Item(f"tests/integration/test_i.py::test_{n}") for n in range(integration)),
        *(Item(f"tests/pure/test_p.py::test_{n}") for n in range(pure)),
    ]


def spread(items: list[Item]) -> list[Item]:
    return _spread_waiting(items)  # type: ignore[arg-type,return-value]


def test_waiting_tests_are_spread_over_the_first_two_thirds_of_the_runs_cost_not_its_count() -> None:
    # Regression: by count, nine 14-18 s watch tests met among the last integration tests and the pure
    # tier (2026-11-28): every worker waited at once, the two cores mostly idle for 25 s.
    items = order_of_the_run(integration=1200, pure=2000, waiting=9)
    ordered = spread(items)
    assert sorted(item.nodeid for item in ordered) == sorted(item.nodeid for item in items)
    places = [ordered.index(item) for item in items if item.waits]
    integration_seen = [
        sum(other.nodeid.startswith("tests/integration/test_i") for other in ordered[:place])
        for place in places
    ]
    # Evenly, a tenth of two thirds of the run's cost apart: all among the integration tests, since
    # the 2,000 pure tests weigh as 60 of them.
    cost = 1200 + 2000 * 0.03
    assert integration_seen == pytest.approx([n * cost * 2 / 3 / 10 for n in range(1, 10)], abs=1)


def test_each_modules_waiting_tests_are_spread_through_the_others() -> None:
    # Regression: one after the other in the order, six of the switching watchers still waited at once.
    switching = [Item(f"tests/integration/test_s.py::test_{n}", waits=True) for n in range(9)]
    watching = [Item(f"tests/integration/test_w.py::test_{n}[x]", waits=True) for n in range(27)]
    once = Item("tests/integration/test_o.py::test_idle", waits=True)
    order = [item.nodeid for item in _interleaved([*switching, *watching, once])]  # type: ignore[list-item]
    assert sorted(order) == sorted(item.nodeid for item in [*switching, *watching, once])
    places = [order.index(item.nodeid) for item in switching]
    assert places == sorted(places)
    # Three of test_w's between any two of test_s's (and test_o's one, in the middle, between two).
    assert sorted(later - earlier for earlier, later in itertools.pairwise(places)) == [4] * 7 + [5]
    assert abs(order.index(once.nodeid) - len(order) / 2) <= 1
    # Within a module, the order of the source stays.
    assert [name for name in order if "test_w.py" in name] == [item.nodeid for item in watching]


def test_without_waiting_tests_the_order_is_left_alone() -> None:
    items = order_of_the_run(integration=3, pure=3, waiting=0)
    assert spread(items) is items
