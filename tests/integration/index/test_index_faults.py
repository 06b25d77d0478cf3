"""The local index under real faults (issue 47, item 12): a full disk (a small tmpfs mounted for the test),
damaged pages (bytes overwritten in the file), and two accounts of one id on different logins. The index
never moves a valid file aside for a full disk, says why it is unavailable and tries again, moves a
damaged file or another account's aside and builds its own; ``mail-imap-mcp index`` says what happened
and exits 1, never with a traceback."""

from __future__ import annotations

import secrets
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from mail_imap_mcp.app import AppContext
from mail_imap_mcp.index import runtime
from tests.support.accounts import account_settings, config_toml
from tests.support.clients.envelope_client import EnvelopeClient
from tests.support.clients.in_process import make_config, open_client
from tests.support.clients.index_clients import identity_file, index_config, index_file
from tests.support.mail.mailgen import plain_message
from tests.support.patience import patient
from tests.support.servers.matrix import MatrixServer

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[3]
SEARCH = "imap_search_messages"
#: The tmpfs of a test: large enough for every index here once the filler is gone.
DISK_SIZE = "16m"


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    """A small tmpfs of mode 0700 at ``tmp_path/ix`` (the index directory of :func:`index_config`)."""
    mount = tmp_path / "ix"
    mount.mkdir(mode=0o700)
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_SIZE},mode=0700", "tmpfs", str(mount)], check=True
    )
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


def fill(disk: Path, leave: int = 0) -> Path:
    """Fill ``disk`` up to ``leave`` bytes free: a filler file, removed to free it again. Unbuffered: a
    buffered file's last partial write is flushed again at its close, which then fails on the full disk."""
    filler = disk / "filler"
    with filler.open("wb", buffering=0) as out:
        try:
            while True:
                out.write(b"\0" * 65536)
        except OSError:
            pass
    with filler.open("r+b") as out:
        out.truncate(max(filler.stat().st_size - leave, 0))
    return filler


def bulky(count: int) -> list[bytes]:
    """Messages whose words are all different (each one a term of its own: an index that fills a disk),
    each with the word ``kiwiword`` to search for."""
    return [
        plain_message(f"bulky {i} kiwiword", " ".join(secrets.token_hex(6) for _ in range(300)))
        for i in range(count)
    ]


def write_config(path: Path, server: MatrixServer, user: str, index_dir: Path) -> Path:
    extra = f'\n[server]\nindex = true\nindex_dir = "{index_dir}"\n'
    path.write_text(config_toml({"default": account_settings(server, user)}) + extra)
    return path


def index(config: Path) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "mail_imap_mcp", "--config", str(config), "index"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=patient(300), cwd=ROOT)


def rows(path: Path) -> list[tuple[object, ...]]:
    db = sqlite3.connect(path)
    try:
        return db.execute(
            "SELECT f.name, m.uid, m.doc FROM messages m JOIN folders f ON f.id = m.folder ORDER BY 1, 2"
        ).fetchall()
    finally:
        db.close()


async def states_until(mcp: EnvelopeClient, done: str, within: float = 60.0) -> list[str]:
    """Every state ``imap_list_accounts`` says of the index until it says one starting with ``done``."""
    seen: list[str] = []
    with anyio.fail_after(patient(within)):
        while not seen or not seen[-1].startswith(done):
            state = (await mcp.ok("imap_list_accounts", {}))["accounts"][0]["index"]
            if not seen or seen[-1] != state:
                seen.append(state)
            await anyio.sleep(0.05)
    return seen


def test_the_index_command_on_a_full_disk_says_so_exits_1_and_keeps_the_file(
    dovecot: MatrixServer, tmp_path: Path, disk: Path
) -> None:
    """A full disk mid-build and at start: a clear line and exit status 1, no traceback; the file
    built so far is kept where it is (never moved aside as unusable), and the next run with room
    finishes it."""
    user = dovecot.new_user()
    dovecot.seed(user, "INBOX", bulky(300))
    config = write_config(tmp_path / "config.toml", dovecot, user, disk)
    filler = fill(disk, leave=256 * 1024)
    mid_build = index(config)
    assert mid_build.returncode == 1, mid_build.stderr
    assert "Traceback" not in mid_build.stderr
    assert "index default: could not write the index (" in mid_build.stderr
    assert "full" in mid_build.stderr
    filler.unlink()
    assert index(config).returncode == 0
    built = rows(index_file(disk))
    assert len(built) == 300
    fill(disk)
    at_start = index(config)
    assert at_start.returncode == 1, at_start.stderr
    assert "Traceback" not in at_start.stderr
    assert "index default: could not open the index (" in at_start.stderr
    assert not [p for p in disk.iterdir() if ".unusable-" in p.name]
    (disk / "filler").unlink()
    assert rows(index_file(disk)) == built


async def test_a_full_disk_mid_build_makes_the_index_unavailable_and_it_is_tried_again(
    dovecot: MatrixServer, tmp_path: Path, disk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The background sync that meets a full disk says so (not ``building`` for ever), searches go to
    the server meanwhile, and once there is room again the index is built from the same file."""
    monkeypatch.setattr(runtime, "RETRY_S", 0.2)
    user = dovecot.new_user()
    dovecot.seed(user, "INBOX", bulky(300))
    filler = fill(disk, leave=256 * 1024)
    config = index_config(dovecot, user, tmp_path)
    async for mcp in open_client(config, AppContext.from_config(config)):
        seen = await states_until(mcp, "unavailable")
        assert "could not be written" in seen[-1] and "full" in seen[-1]
        assert "tried again in 0.2 s" in seen[-1]
        answered = await mcp.call(SEARCH, {"query": "kiwiword", "limit": 5})
        assert answered["data"]["total"] == 300
        assert any("the server answered" in w for w in answered["meta"]["warnings"])
        filler.unlink()
        await states_until(mcp, "ready")
        found = await mcp.ok(SEARCH, {"query": "kiwiword", "limit": 5})
        assert found["total"] == 300
    assert not [p for p in disk.iterdir() if ".unusable-" in p.name]


def damage(path: Path, table: str) -> int:
    """Overwrite every page of ``table`` and of its indexes in the (checkpointed) file with bytes no
    page holds; how many."""
    db = sqlite3.connect(path)
    try:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = db.execute("PRAGMA page_size").fetchone()[0]
        names = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE tbl_name = ?", (table,))]
        marks = ", ".join("?" for _ in names)
        pages = [row[0] for row in db.execute(f"SELECT pageno FROM dbstat WHERE name IN ({marks})", names)]
    finally:
        db.close()
    with path.open("r+b") as out:
        for page in pages:
            out.seek((page - 1) * size)
            out.write(b"\xa5" * size)
    return len(pages)


async def test_damaged_pages_met_by_the_sync_move_the_file_aside_and_it_is_built_again(
    dovecot: MatrixServer, tmp_path: Path
) -> None:
    """Pages of the messages overwritten: the file still opens (its folders are readable), and the
    sync that meets a damaged page says the index is unavailable, moves the file aside and builds it
    again, where its thread died and the index said ``building`` until the server restarted."""
    user = dovecot.new_user()
    dovecot.seed(user, "INBOX", [plain_message(f"damaged {i} limeword", f"body {i}") for i in range(20)])
    config = index_config(dovecot, user, tmp_path)
    async for mcp in open_client(config, AppContext.from_config(config)):
        await states_until(mcp, "ready")
    path = index_file(tmp_path / "ix")
    assert damage(path, "messages") >= 3
    async for mcp in open_client(config, AppContext.from_config(config)):
        await states_until(mcp, "ready")
        found = await mcp.call(SEARCH, {"query": "limeword"})
        assert found["data"]["total"] == 20
        warnings = found["meta"]["warnings"]
        assert any("damaged" in w and "moved to" in w for w in warnings), warnings
        assert not any("unavailable" in w for w in warnings)
    assert not [p for p in (tmp_path / "ix").iterdir() if ".unusable-" in p.name]  # deleted once built
    assert len(rows(path)) == 20


def test_two_accounts_of_one_id_keep_an_index_file_each(dovecot: MatrixServer, tmp_path: Path) -> None:
    """Two configurations name different logins ``default`` with one index directory: each keeps a file
    of its own, both built once and kept, where each run moved the other's file aside (another copy of
    mail text left each time) and built its own again."""
    first, second = dovecot.new_user(), dovecot.new_user()
    dovecot.seed(first, "INBOX", [plain_message(f"first {i}", "pearword") for i in range(4)])
    dovecot.seed(second, "INBOX", [plain_message(f"second {i}", "plumword") for i in range(6)])
    folder = tmp_path / "ix"
    one = write_config(tmp_path / "one.toml", dovecot, first, folder)
    other = write_config(tmp_path / "other.toml", dovecot, second, folder)
    built = [index(config) for config in (one, other)]
    assert [done.returncode for done in built] == [0, 0], [done.stderr for done in built]
    for _ in range(2):  # each start after: nothing to fetch, nothing moved aside
        for config in (one, other):
            again = index(config)
            assert again.returncode == 0 and "warning" not in again.stderr, again.stderr
            assert "0 new message(s) indexed" in again.stdout
    files = sorted(folder.glob("default.*.sqlite3"))
    assert sorted(len(rows(path)) for path in files) == [4, 6]
    assert not [path for path in folder.iterdir() if ".unusable-" in path.name]


def test_a_file_named_by_the_account_id_is_taken_over_by_its_identity_and_its_copies_deleted(
    dovecot: MatrixServer, tmp_path: Path
) -> None:
    """The file a release before kept as ``default.sqlite3`` goes on as the file of the identity it
    records (nothing fetched again); the copies it moved aside that record this identity are deleted
    once a build of it completes, and another account's copy is left alone."""
    owner, other = dovecot.new_user(), dovecot.new_user()
    dovecot.seed(owner, "INBOX", [plain_message(f"owner {i}", "figword") for i in range(5)])
    dovecot.seed(other, "INBOX", [plain_message(f"other {i}", "dateword") for i in range(2)])
    folder = tmp_path / "ix"
    configs = {who: write_config(tmp_path / f"{who}.toml", dovecot, who, folder) for who in (owner, other)}
    assert index(configs[other]).returncode == 0
    assert index(configs[owner]).returncode == 0
    owners, others = (index_file_of(folder, dovecot, who) for who in (owner, other))
    kept = rows(owners)
    shutil.copy(owners, folder / "default.sqlite3.unusable-20250101T000000")
    shutil.copy(others, folder / "default.sqlite3.unusable-20250102T000000")
    owners.rename(folder / "default.sqlite3")  # as a release before named it
    again = index(configs[owner])
    assert again.returncode == 0 and "warning" not in again.stderr, again.stderr
    assert "0 new message(s) indexed" in again.stdout
    assert rows(owners) == kept and not (folder / "default.sqlite3").exists()
    assert [path.name for path in folder.iterdir() if ".unusable-" in path.name] == [
        "default.sqlite3.unusable-20250102T000000"
    ]


def index_file_of(folder: Path, server: MatrixServer, user: str) -> Path:
    return identity_file(folder, make_config({"default": account_settings(server, user)}))
