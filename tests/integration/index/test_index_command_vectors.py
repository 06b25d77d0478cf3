"""``mail-imap-mcp index`` with ``index_meaning`` on (the default) on Dovecot, with SQLite and
sqlite+tantivy (issue 80): the pass that gives the messages vectors runs beside the build of the words, and
when the command ends every message has them, found by meaning; it says how many."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mail_imap_mcp.config import IndexSettings
from mail_imap_mcp.index.engines.sqlite.store import SqliteStore
from mail_imap_mcp.index.engines.tantivy.store import TantivyStore
from mail_imap_mcp.meaning.model import shipped_model
from tests.support.accounts import account_settings, config_toml
from tests.support.clients.index_clients import index_file
from tests.support.mail.mailgen import plain_message
from tests.support.patience import patient
from tests.support.servers.dovecot import Dovecot

ROOT = Path(__file__).resolve().parents[3]
STORES = {"sqlite": SqliteStore, "sqlite+tantivy": TantivyStore}
#: Messages of the folders, a few steps of the build each (the pass meets the build's chunks).
PER_FOLDER = 300


@pytest.mark.parametrize("engine", sorted(STORES))
def test_the_index_command_gives_every_message_vectors(dovecot: Dovecot, engine: str, tmp_path: Path) -> None:
    user = dovecot.new_user()
    dovecot.seed(
        user, "INBOX", [plain_message("Heating in the flat", "The radiator is cold; the landlord knows.")]
    )
    for folder in ("Archive", "Lists"):
        dovecot.seed(
            user, folder, [plain_message(f"{folder} {n}", f"weekly news {n}") for n in range(PER_FOLDER)]
        )
    path = tmp_path / "config.toml"
    extra = f'\n[server]\nindex = true\nindex_dir = "{tmp_path / "ix"}"\n[index]\nindex_engine = "{engine}"\n'
    path.write_text(config_toml({"default": account_settings(dovecot, user)}) + extra)
    argv = [sys.executable, "-m", "mail_imap_mcp", "--config", str(path), "index"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=patient(180), cwd=ROOT)
    assert done.returncode == 0, done.stderr
    total = 1 + 2 * PER_FOLDER
    assert f"index default: {total} message(s) given vectors; {total} of {total} have them" in done.stdout
    store = STORES[engine](index_file(tmp_path / "ix"))
    try:
        question = shipped_model(IndexSettings().meaning_model).embed(
            ["what did the landlord say about the heating"]
        )[0]
        [hit] = store.nearest(question, None, ["INBOX", "Archive", "Lists"], 1)
        assert (hit.folder, hit.texts[0]) == ("INBOX", "Heating in the flat")
    finally:
        store.close()
