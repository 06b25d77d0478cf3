"""Creating a file only inside a folder (:func:`mail_imap_mcp.local_files.create_inside`), on real files
in a temporary folder: hostile wanted names land inside under a safe name, nothing is ever overwritten
or followed out of the folder, and a failed save leaves nothing behind."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from mail_imap_mcp.envelope import ErrorCode
from mail_imap_mcp.local_files import FileTooLarge, FolderUnusable, SavedFile, create_inside
from mail_imap_mcp.local_files.names import MAX_NAME_BYTES
from mail_imap_mcp.presentation.failures import tool_failure

LIMIT = 1 << 20
PAYLOAD = [b"%PDF-1.7 ", b"the attachment"]


@pytest.fixture
def downloads(tmp_path: Path) -> Path:
    folder = tmp_path / "Downloads"
    folder.mkdir()
    (tmp_path / "outside.txt").write_bytes(b"untouched")
    return folder


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every entry under ``root``'s parent: a file's bytes, None for anything else."""
    found: dict[str, bytes | None] = {}
    for path in sorted(root.parent.rglob("*")):
        regular = path.is_file() and not path.is_symlink()
        found[str(path.relative_to(root.parent))] = path.read_bytes() if regular else None
    return found


def _save(folder: Path, wanted: str, chunks: list[bytes] = PAYLOAD, max_bytes: int = LIMIT) -> SavedFile:
    saved = create_inside(folder, wanted, chunks, max_bytes=max_bytes)
    assert saved.path.parent == folder.resolve()
    assert saved.path.read_bytes() == b"".join(chunks)
    assert saved.size == len(b"".join(chunks))
    assert stat.S_IMODE(os.lstat(saved.path).st_mode) == 0o600
    assert saved.marked is False  # no mark of downloaded files exists on Linux
    return saved


@pytest.mark.parametrize(
    ("wanted", "name"),
    [
        ("../outside.txt", "_outside.txt"),
        ("../../etc/passwd", "_.._etc_passwd"),
        ("/etc/passwd", "_etc_passwd"),
        ("/tmp/evil.sh", "_tmp_evil.sh"),
        ("CON", "_CON"),
        ("nul.txt", "_nul.txt"),
        (".bashrc", "bashrc"),
        ("..", "attachment"),
        ("report\u202etxt.exe", "reporttxt.exe"),
    ],
)
def test_a_hostile_name_is_saved_inside_under_a_safe_name(downloads: Path, wanted: str, name: str) -> None:
    before = _tree(downloads)
    saved = _save(downloads, wanted)
    assert saved.name == name
    assert _tree(downloads) == {**before, f"Downloads/{name}": b"".join(PAYLOAD)}


def test_a_300_character_name_is_cut_to_the_filesystem_limit_keeping_its_extension(downloads: Path) -> None:
    saved = _save(downloads, "\u00e9" * 300 + ".pdf")
    assert saved.name.endswith(".pdf") and len(saved.name.encode()) <= MAX_NAME_BYTES
    again = _save(downloads, "\u00e9" * 300 + ".pdf")
    assert again.name.endswith(" (2).pdf") and len(again.name.encode()) <= MAX_NAME_BYTES


def test_an_existing_file_is_never_overwritten_even_in_another_case(downloads: Path) -> None:
    (downloads / "report.pdf").write_bytes(b"mine")
    (downloads / "REPORT (2).PDF").write_bytes(b"mine too")
    saved = _save(downloads, "Report.pdf")
    assert saved.name == "Report (3).pdf"
    assert (downloads / "report.pdf").read_bytes() == b"mine"
    assert (downloads / "REPORT (2).PDF").read_bytes() == b"mine too"


def test_a_symlink_at_the_target_name_is_neither_followed_nor_replaced(downloads: Path) -> None:
    outside = downloads.parent / "outside.txt"
    (downloads / "report.pdf").symlink_to(outside)
    (downloads / "dangling.pdf").symlink_to(downloads.parent / "created-outside.pdf")
    assert _save(downloads, "report.pdf").name == "report (2).pdf"
    assert _save(downloads, "dangling.pdf").name == "dangling (2).pdf"
    assert outside.read_bytes() == b"untouched"
    assert not (downloads.parent / "created-outside.pdf").exists()
    assert (downloads / "report.pdf").is_symlink() and (downloads / "dangling.pdf").is_symlink()


def test_a_name_made_by_someone_else_meanwhile_gets_the_next_number(
    downloads: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A symlink placed at the chosen name after the folder was listed: the exclusive, no-follow create
    fails there and the next number is taken."""
    real_listdir = os.listdir

    def listing_then_racing(where: int | str) -> list[str]:
        names = real_listdir(where)
        (downloads / "report.pdf").symlink_to(downloads.parent / "outside.txt")
        return names

    monkeypatch.setattr(os, "listdir", listing_then_racing)
    assert create_inside(downloads, "report.pdf", PAYLOAD, max_bytes=LIMIT).name == "report (2).pdf"
    assert (downloads.parent / "outside.txt").read_bytes() == b"untouched"


def test_a_save_past_the_limit_leaves_nothing_behind(downloads: Path) -> None:
    def chunks() -> Iterator[bytes]:
        yield b"x" * 10
        yield b"y" * 10

    with pytest.raises(FileTooLarge):
        create_inside(downloads, "big.bin", chunks(), max_bytes=15)
    assert list(downloads.iterdir()) == []


def test_a_failing_source_leaves_nothing_behind(downloads: Path) -> None:
    def chunks() -> Iterator[bytes]:
        yield b"part one"
        raise ConnectionError("the server went away")

    with pytest.raises(ConnectionError):
        create_inside(downloads, "report.pdf", chunks(), max_bytes=LIMIT)
    assert list(downloads.iterdir()) == []


def test_a_folder_that_is_missing_with_its_parent_or_no_directory_is_refused_naming_the_setting(
    downloads: Path,
) -> None:
    for folder in (downloads / "missing" / "deeper", downloads.parent / "outside.txt"):
        with pytest.raises(FolderUnusable) as caught:
            create_inside(folder, "report.pdf", PAYLOAD, max_bytes=LIMIT)
        said = tool_failure(caught.value, None)
        assert said is not None and said.code == ErrorCode.UNAVAILABLE
        assert said.message.startswith("download_dir (") and said.details == {"setting": "download_dir"}
