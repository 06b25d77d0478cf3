"""Search by meaning never touches a network (issue 80, issue 90): reading both shipped models (WordLlama's
and the multilingual Universal Sentence Encoder's) and a model directory and embedding with them attempts
no connection, in a child process whose every proxy variable (and the
hub's endpoint) points at a loopback listener that must see nothing, with ``HF_HUB_OFFLINE`` and its
kin unset and an empty home (no cache to fall back on):

- ``strace`` records every ``connect`` of the child and its threads, the tokenizers' and safetensors'
  Rust code included, which no Python hook sees, and every program it runs (``execve``): there is none
  but the interpreter's own start;
- a Python audit hook refuses every socket the interpreter would open, at the attempt;
- in a network namespace of its own (``unshare``), with no route out, the child reads and embeds the
  same vectors."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from mail_imap_mcp.meaning.model import SHIPPED_MODEL
from mail_imap_mcp.meaning.multilingual import MULTILINGUAL_MODEL
from tests.support.meaning_models import model2vec_dir
from tests.support.patience import patient

#: The child: the audit hook first, then the three models read through the one place that picks them,
#: each embedding the texts; one line per model: its name and the digest of its vectors.
CHILD = r"""
import hashlib, sys

def refuse(event, args):
    if event.startswith("socket.") and event != "socket.__new__" or event == "urllib.Request":
        raise ConnectionRefusedError(f"the test refuses {event} {args!r}")

sys.addaudithook(refuse)
from mail_imap_mcp.config import Config
from mail_imap_mcp.meaning.model import model_for
from mail_imap_mcp.index.passages import passages

texts = ["the heating in the flat", "invoice for the website redesign", *passages(("Re: Heating",) * 10)]
for index in ({"meaning_model": "english"}, {"meaning_model": "multilingual"}, {"meaning_model_dir": sys.argv[1]}):
    model = model_for(Config.model_validate({"server": {"index": True}, "index": index}))
    print(model.name, hashlib.sha256(model.embed(texts).tobytes()).hexdigest())
"""
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
#: What would make a hub client stay offline, or skip a proxy: unset, so that nothing here relies on it.
UNSET = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "NO_PROXY", "no_proxy")


def child_env(home: Path, listener: socket.socket) -> dict[str, str]:
    host, port = listener.getsockname()
    url = f"http://{host}:{port}"
    env = {name: value for name, value in os.environ.items() if name not in UNSET}
    env.update(dict.fromkeys(PROXY_VARIABLES, url))
    env.update({"HF_ENDPOINT": url, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache")})
    return env


def run_child(prefix: list[str], model: Path, env: dict[str, str]) -> list[str]:
    done = subprocess.run(
        [*prefix, sys.executable, "-c", CHILD, str(model)],
        env=env,
        capture_output=True,
        text=True,
        timeout=patient(120),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split()[0] for line in lines] == [SHIPPED_MODEL, MULTILINGUAL_MODEL, lines[2].split()[0]]
    return lines


@pytest.fixture
def listener() -> socket.socket:
    server = socket.create_server(("127.0.0.1", 0))
    server.setblocking(False)
    return server


def saw_nothing(listener: socket.socket) -> bool:
    """No connection reached the listener (one the kernel accepted waits in its queue until taken)."""
    try:
        listener.accept()[0].close()
    except BlockingIOError:
        return True
    return False


def test_reading_a_model_and_embedding_attempts_no_connection(
    tmp_path: Path, listener: socket.socket
) -> None:
    model = model2vec_dir(tmp_path / "model")
    trace = tmp_path / "connects.txt"
    with listener:
        run_child(
            ["strace", "-f", "-qq", "-e", "trace=connect,execve", "-e", "signal=none", "-o", str(trace)],
            model,
            child_env(tmp_path, listener),
        )
        assert saw_nothing(listener)
    lines = trace.read_text().splitlines()
    assert [line for line in lines if "connect(" in line] == []
    # One program run: the interpreter, by the test (no helper, no downloader started from inside).
    assert len([line for line in lines if "execve(" in line]) == 1, lines


def test_without_a_route_out_the_models_read_and_embed_the_same(
    tmp_path: Path, listener: socket.socket
) -> None:
    model = model2vec_dir(tmp_path / "model")
    with listener:
        env = child_env(tmp_path, listener)
        here = run_child([], model, env)
        # A network namespace of its own: only its loopback, down (a user namespace where not root).
        isolated = ["unshare", "--net"] if os.geteuid() == 0 else ["unshare", "--map-root-user", "--net"]
        assert run_child(isolated, model, env) == here
        assert saw_nothing(listener)
