"""An index engine whose extra is not installed, as a user meets it (issue 56 item 18): ``mail-imap-mcp
index`` says so in one line, as ``serve`` does, naming this installation's own pip and the extra's
lockfile (never a bare ``pip``), and both lockfiles pin what the development lock pins.

The extra is made missing the way an installation without it is: its module cannot be imported (a
package of that name that raises ImportError stands first on the path of the real CLI)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.support.shared.readme import pinned
from tests.support.shared.setup import run_server

ROOT = Path(__file__).resolve().parents[3]
#: The pip of the installation the CLI runs from (a virtualenv made by uv has none: its python's -m pip).
OWN_PIP = next(
    (str(p) for p in [Path(sys.executable).parent / "pip"] if p.is_file()), f"{sys.executable} -m pip"
)
#: Each engine needing an extra: its config, the module its extra brings, and the extra.
ENGINES = {
    "sqlite+tantivy": ('[index]\nindex_engine = "sqlite+tantivy"\n', "tantivy", "tantivy"),
    "postgresql": (
        '[index]\nindex_engine = "postgresql"\nindex_url = "postgresql://u@127.0.0.1:1/x"\n',
        "psycopg",
        "postgres",
    ),
}


def without(module: str, directory: Path) -> dict[str, str]:
    """An environment in which ``module`` cannot be imported, as where its extra is not installed."""
    package = directory / "hidden" / module
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(f"raise ImportError({f'No module named {module}'!r})\n")
    return {"PATH": os.environ["PATH"], "HOME": str(directory), "PYTHONPATH": str(directory / "hidden")}


@pytest.mark.parametrize("engine", ENGINES)
def test_regression_index_with_an_engine_whose_extra_is_missing_answers_one_line(
    engine: str, tmp_path: Path
) -> None:
    # It ended in a traceback, and serve's hint named a bare `pip install 'mail-imap-mcp[tantivy]'`.
    settings, module, extra = ENGINES[engine]
    config = tmp_path / "config.toml"
    account = '[accounts.a]\nhost = "127.0.0.1"\nusername = "u"\npassword_env = "P"\nindex = true\n'
    config.write_text(account + settings)
    env = without(module, tmp_path)
    for args in (["index", "--config", str(config)], ["serve", "--config", str(config)]):
        done = run_server(args, env)
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr
        (line,) = [line for line in done.stderr.splitlines() if "index_engine" in line]
        assert f'index_engine = "{engine}" needs the {extra} extra, which is not installed' in line
        pip = f"{OWN_PIP} install --require-hashes -r mail-imap-mcp/requirements-{extra}.lock"
        assert pip in line and line.count("pip install") == 1, line  # that pip's, and no bare one
        if args[0] == "index":
            assert done.stderr.splitlines() == [line]


@pytest.mark.parametrize("extra", ["tantivy", "postgres"])
def test_each_engines_extra_is_locked_at_the_development_locks_versions(extra: str) -> None:
    locked, runtime, dev = (
        pinned(ROOT / name)
        for name in (f"requirements-{extra}.lock", "requirements-runtime.lock", "requirements.lock")
    )
    brought = {"tantivy": {"tantivy"}, "postgres": {"psycopg", "psycopg-binary", "psycopg-pool"}}[extra]
    assert brought <= locked.keys() and runtime.items() <= locked.items()
    assert {name: dev[name] for name in brought} == {name: locked[name] for name in brought}
    assert "--hash=sha256:" in (ROOT / f"requirements-{extra}.lock").read_text()
