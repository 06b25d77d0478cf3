"""Where the MCP Bundle installs the meaning extra (issue 80): the platforms with wheels of wordllama
0.4, as the bundle's dependency marker says them and as the server says them to explain why search by
meaning is missing; the two are one rule."""

from __future__ import annotations

import itertools

import pytest
from packaging.markers import Marker

from mail_imap_mcp.meaning.platforms import WHEELS_MARKER, wheels_here

#: (sys_platform, platform_machine, platform_release, Python) and whether wordllama has wheels there.
KNOWN = [
    ("linux", "x86_64", "6.1.0-28-amd64", (3, 11), True),
    ("linux", "x86_64", "6.1.0", (3, 13), True),
    ("linux", "aarch64", "6.1.0", (3, 12), False),
    ("win32", "AMD64", "10", (3, 12), True),
    ("win32", "ARM64", "10", (3, 12), False),
    ("darwin", "arm64", "23.6.0", (3, 12), True),  # macOS 14 on Apple silicon
    ("darwin", "arm64", "22.6.0", (3, 12), False),  # macOS 13 on Apple silicon
    ("darwin", "x86_64", "22.1.0", (3, 11), True),  # macOS 13 on Intel
    ("darwin", "x86_64", "21.6.0", (3, 11), False),  # macOS 12 on Intel
    ("darwin", "arm64", "24.0.0", (3, 14), False),  # no wheels for Python 3.14
    ("linux", "x86_64", "6.1.0", (3, 14), False),
]


@pytest.mark.parametrize(("system", "machine", "release", "python", "wheels"), KNOWN)
def test_the_bundle_s_marker_and_the_server_s_rule_say_where_wordllama_has_wheels(
    system: str, machine: str, release: str, python: tuple[int, int], wheels: bool
) -> None:
    environment = {
        "sys_platform": system,
        "platform_machine": machine,
        "platform_release": release,
        "python_version": f"{python[0]}.{python[1]}",
        "python_full_version": f"{python[0]}.{python[1]}.0",
    }
    assert Marker(WHEELS_MARKER).evaluate(environment) is wheels
    assert wheels_here(system, machine, release, python) is wheels


def test_the_marker_and_the_rule_agree_everywhere() -> None:
    systems = ("linux", "win32", "darwin", "freebsd14", "emscripten")
    machines = ("x86_64", "AMD64", "arm64", "aarch64", "i686", "ARM64")
    releases = ("9.0.0", "21.6.0", "22.0.0", "23.1.0", "25.0.0", "10")  # as Darwin numbers them
    pythons = ((3, 11), (3, 12), (3, 13), (3, 14), (3, 15))
    for system, machine, release, python in itertools.product(systems, machines, releases, pythons):
        environment = {
            "sys_platform": system,
            "platform_machine": machine,
            "platform_release": release,
            "python_version": f"{python[0]}.{python[1]}",
        }
        said = Marker(WHEELS_MARKER).evaluate(environment)
        assert wheels_here(system, machine, release, python) is said, environment
