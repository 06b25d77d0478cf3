"""The suite's own scheduling (tests/conftest.py): the groups one worker must run together."""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

from tests.conftest import ONE_WORKER, SPREAD_OVER, WAITING_MODULES, _together, spread_out

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
        _together("tests/integration/test_hostile_mail.py::test_utf7_encoded_script_is_decoded_then_removed")
        is None
    )


def module_of(item: str) -> str:
    return item.split(".")[0]


def test_waiting_tests_are_spread_between_modules_over_the_first_part_of_the_run() -> None:
    # 20 computing tests in 10 modules of 2 ("m3.1" is the second test of module m3), 4 waiting ones.
    computing = [f"m{m}.{t}" for m in range(10) for t in range(2)]
    items = [f"w.{i}" for i in range(4)] + computing
    order = spread_out(items, lambda item: item.startswith("w."), module_of)
    assert sorted(order) == sorted(items)
    assert [item for item in order if not item.startswith("w.")] == computing
    positions = [order.index(f"w.{i}") for i in range(4)]
    assert positions == sorted(positions), "the waiting tests keep their order"
    assert min(b - a for a, b in itertools.pairwise(positions)) >= 4, order
    assert positions[-1] < len(order) * SPREAD_OVER
    for position in positions:  # never inside a module: its fixture would be built again
        assert position == 0 or module_of(order[position - 1]) != module_of(order[position + 1]), order


def test_without_waiting_tests_the_order_is_unchanged() -> None:
    items = ["a.1", "b.1", "c.1"]
    assert spread_out(items, lambda item: False, module_of) == items
    assert spread_out(items, lambda item: True, module_of) == items


def test_every_waiting_module_exists_and_has_no_module_fixture() -> None:
    # Spread through the run, a module fixture would be built again each time a worker came back to it.
    for path in WAITING_MODULES:
        module = ROOT / path
        assert module.is_file(), path
        assert 'scope="module"' not in module.read_text(), path
