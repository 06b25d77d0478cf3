"""The test harness's ``remove_tree`` (servers' directories are deleted with it at every stop)."""

from __future__ import annotations

from pathlib import Path

from tests.support.servers.imapserver import remove_tree


def test_remove_tree_deletes_everything_below_and_follows_no_link(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "kept.txt").write_text("kept")
    root = tmp_path / "server"
    for folder in ("Maildir/cur", "Maildir/.Archive/cur", "tls"):
        (root / folder).mkdir(parents=True)
        for index in range(50):
            (root / folder / f"{index}.msg").write_bytes(b"x" * index)
    (root / "Maildir" / "link-to-outside").symlink_to(outside, target_is_directory=True)
    (root / "Maildir" / "cur" / "link-to-file").symlink_to(outside / "kept.txt")

    remove_tree(root)

    assert not root.exists()
    assert (outside / "kept.txt").read_text() == "kept"


def test_remove_tree_of_a_missing_directory_does_nothing(tmp_path: Path) -> None:
    remove_tree(tmp_path / "never-created")
    assert list(tmp_path.iterdir()) == []
