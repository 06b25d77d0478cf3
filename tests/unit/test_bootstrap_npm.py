"""scripts/_bootstrap.sh: an `npm ci` that stalls is stopped and tried again (issue 57); what one clone
installed for a lockfile, another links (issue 79).

A download from the registry can stall with its connection open, and npm then waits with no end (a run
stood 13 minutes in one). Here an ``npm`` of the test's own on PATH stalls on the runs the test says,
and installs on the others; ``MIM_NPM_CI_S`` is a few seconds (:data:`LIMIT_S`), which an install of the
stand-in, a directory made, keeps well within.
"""

from __future__ import annotations

import math
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest

from tests.support.patience import patient
from tests.support.run.bootstrap import ROOT, bootstrap_command

#: Each test stands some seconds in stalled installs, computing nothing: spread through the run
#: (tests/conftest.py), not left to its end, where the unit tier runs.
pytestmark = pytest.mark.waits

#: The setting under test: how long one ``npm ci`` may take (a stalled one sleeps a minute).
LIMIT_S = math.ceil(patient(2))


@pytest.fixture
def package(tmp_path: Path) -> Path:
    """The lockfile pair an install is made from."""
    source = tmp_path / "source"
    source.mkdir()
    (source / "package.json").write_text('{"name": "x", "private": true}\n')
    (source / "package-lock.json").write_text('{"lockfileVersion": 3}\n')
    return source


def install(
    tmp_path: Path,
    package: Path,
    runs: str,
    limit: str = str(LIMIT_S),
    into: str = "into",
    shared: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``_npm_ci_locked`` into ``tmp_path / into`` with a stand-in ``npm`` whose n-th run does what the
    n-th letter of ``runs`` says: ``s`` stalls, ``f`` fails, ``i`` installs (a file in node_modules);
    ``shared``: the shared cache's setting, if not the test's own place."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    count = tmp_path / "npm-runs"
    (bin_dir / "npm").write_text(
        "#!/bin/bash\n"
        f'n=$(( $(cat {count} 2>/dev/null || echo 0) + 1 )); echo "$n" > {count}\n'
        f'what="{runs}"; case "${{what:$((n - 1)):1}}" in\n'
        "  s) exec sleep 60 ;;\n"
        "  f) exit 1 ;;\n"
        '  *) mkdir -p node_modules && echo "$n" > node_modules/installed-by ;;\n'
        "esac\n"
    )
    (bin_dir / "node").write_text("#!/bin/sh\n")
    for tool in ("npm", "node"):
        (bin_dir / tool).chmod(0o755)
    command, env = bootstrap_command(
        f'_npm_ci_locked "{tmp_path / into}" "{package}" "the tool"',
        bin_dir,
        {"MIM_NPM_CI_S": limit, **(shared or {})},
    )
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=patient(60))


def test_a_stalled_npm_ci_is_stopped_and_tried_again_and_the_install_is_kept(
    tmp_path: Path, package: Path
) -> None:
    done = install(tmp_path, package, "ssi")
    assert done.returncode == 0, done.stderr
    assert (
        f"did not finish within {LIMIT_S} s (MIM_NPM_CI_S): a download stalled; trying again (2 of 3)"
        in done.stderr
    )
    assert "trying again (3 of 3)" in done.stderr
    assert (tmp_path / "npm-runs").read_text().strip() == "3"
    assert (tmp_path / "into" / ".installed").exists()


def test_an_npm_ci_that_stalls_every_time_ends_the_setup_and_says_why(tmp_path: Path, package: Path) -> None:
    done = install(tmp_path, package, "sss")
    assert done.returncode == 1
    assert (
        f"did not finish within {LIMIT_S} s, 3 times (MIM_NPM_CI_S): the registry or the network stalls"
        in done.stderr
    )
    assert not (tmp_path / "into" / ".installed").exists()


def test_an_npm_ci_that_fails_is_not_tried_again(tmp_path: Path, package: Path) -> None:
    done = install(tmp_path, package, "fi")
    assert done.returncode == 1
    assert "npm ci failed in" in done.stderr and "trying again" not in done.stderr
    assert (tmp_path / "npm-runs").read_text().strip() == "1"


@pytest.mark.parametrize("limit", ["5m", "-1", "300 "])
def test_a_limit_that_is_no_whole_number_of_seconds_ends_the_setup_naming_the_setting(
    tmp_path: Path, package: Path, limit: str
) -> None:
    # Regression: coreutils' timeout refused some ("300 ": "invalid time interval", exit 125), reported
    # then as "npm ci failed", and took others in units of its own ("5m", where the messages said "5m s").
    done = install(tmp_path, package, "i", limit=limit)
    assert done.returncode == 2
    assert f"MIM_NPM_CI_S must be a whole number of seconds, not '{limit}'" in done.stderr
    assert not (tmp_path / "npm-runs").exists()


def test_a_second_clone_links_what_the_first_installed_for_the_same_lockfile(
    tmp_path: Path, package: Path
) -> None:
    # Issue 79: four npm installs took 15.7 CPU-seconds in every fresh clone, for the same lockfiles.
    first = install(tmp_path, package, "ii", into="into")
    second = install(tmp_path, package, "ii", into="into")  # the same clone, the stamp current: nothing
    (tmp_path / "other").mkdir()  # a fresh clone: no .cache/ yet
    other = install(tmp_path, package, "ii", into="other/.cache/into")
    assert first.returncode == second.returncode == other.returncode == 0, other.stderr
    assert (tmp_path / "npm-runs").read_text().strip() == "1"
    assert "npm ci" not in other.stderr
    linked = tmp_path / "other" / ".cache" / "into"
    assert (linked / "node_modules" / "installed-by").read_text().strip() == "1"
    assert (linked / ".installed").read_text() == (tmp_path / "into" / ".installed").read_text()
    assert (linked / "node_modules" / "installed-by").stat().st_ino == (
        tmp_path / "into" / "node_modules" / "installed-by"
    ).stat().st_ino


def test_a_changed_lockfile_is_installed_again_not_linked(tmp_path: Path, package: Path) -> None:
    assert install(tmp_path, package, "ii", into="into").returncode == 0
    (package / "package-lock.json").write_text('{"lockfileVersion": 3, "packages": {}}\n')
    (tmp_path / "other").mkdir()
    assert install(tmp_path, package, "ii", into="other/into").returncode == 0
    assert (tmp_path / "npm-runs").read_text().strip() == "2"
    assert (tmp_path / "other" / "into" / "node_modules" / "installed-by").read_text().strip() == "2"


def test_nothing_is_shared_where_the_setting_is_empty(tmp_path: Path, package: Path) -> None:
    unshared = {"MIM_SHARED_CACHE": ""}
    assert install(tmp_path, package, "ii", into="into", shared=unshared).returncode == 0
    (tmp_path / "other").mkdir()
    assert install(tmp_path, package, "ii", into="other/into", shared=unshared).returncode == 0
    assert (tmp_path / "npm-runs").read_text().strip() == "2"
    assert not (tmp_path / "shared-cache").exists()
