"""Reading a file only from inside the listed folders (:func:`mail_imap_mcp.local_files.read_inside`),
on real files in temporary folders: each way out of a folder is refused with nothing read (the read
of the open file is watched), and a refusal outside says nothing of what exists there."""

from __future__ import annotations

import ctypes
import errno
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from mail_imap_mcp.envelope import ErrorCode
from mail_imap_mcp.local_files import (
    AmbiguousName,
    FileMissing,
    FileTooLarge,
    FileUnreadable,
    LocalFile,
    LocalFileError,
    NotRegularFile,
    OutsideFolders,
    platform,
    read_inside,
    reading,
)
from mail_imap_mcp.presentation.failures import tool_failure
from tests.support.patience import eventually

SECRET = b"the secret outside"
LIMIT = 1 << 20


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A home with a listed folder ``Documents`` (a report in it) and a secret beside it."""
    documents = tmp_path / "Documents"
    (documents / "inner").mkdir(parents=True)
    (documents / "report.pdf").write_bytes(b"%PDF-1.7 the report")
    (documents / "inner" / "doc.txt").write_bytes(b"inside")
    (tmp_path / "secret.txt").write_bytes(SECRET)
    (tmp_path / "outside" / "inner").mkdir(parents=True)
    (tmp_path / "outside" / "inner" / "doc.txt").write_bytes(SECRET)
    return tmp_path


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The descriptors read from: a refusal must come before any read."""
    seen: list[int] = []
    real = reading._read

    def watched(descriptor: int, limit: int) -> bytes:
        seen.append(descriptor)
        return real(descriptor, limit)

    monkeypatch.setattr(reading, "_read", watched)
    return seen


def _refused(
    path: str, folders: list[Path], kind: type[LocalFileError], max_bytes: int = LIMIT
) -> LocalFileError:
    with pytest.raises(kind) as caught:
        read_inside(path, folders, max_bytes=max_bytes, parameter="attachments")
    assert caught.value.parameter == "attachments"
    return caught.value


def test_a_file_inside_is_read_by_relative_or_absolute_path(home: Path) -> None:
    documents = home / "Documents"
    by_name = read_inside("report.pdf", [documents], max_bytes=LIMIT)
    assert by_name == LocalFile(
        name="report.pdf", shown="Documents/report.pdf", size=19, data=b"%PDF-1.7 the report"
    )
    assert read_inside(str(documents / "report.pdf"), [documents], max_bytes=LIMIT) == by_name
    assert read_inside("inner/doc.txt", [documents], max_bytes=LIMIT).shown == "Documents/inner/doc.txt"


@pytest.mark.parametrize("path", ["../secret.txt", "inner/../../secret.txt", "../outside/inner/doc.txt"])
def test_dot_dot_is_refused(home: Path, reads: list[int], path: str) -> None:
    _refused(path, [home / "Documents"], OutsideFolders)
    assert reads == []


def test_an_absolute_path_outside_is_refused_the_same_whether_it_exists_or_not(
    home: Path, reads: list[int]
) -> None:
    folders = [home / "Documents"]
    existing = _refused(str(home / "secret.txt"), folders, OutsideFolders)
    missing = _refused(str(home / "no-such-file.txt"), folders, OutsideFolders)
    said = [tool_failure(exc, None) for exc in (existing, missing)]
    assert said[0] is not None and said[1] is not None
    assert said[0].to_error() == said[1].to_error()
    assert said[0].code == ErrorCode.PERMISSION_DENIED
    assert said[0].details == {"parameter": "attachments", "setting": "attachment_dirs"}
    assert "secret" not in said[0].message and str(home) not in said[0].message
    assert reads == []


def test_a_symlink_out_of_the_folder_is_refused(home: Path, reads: list[int]) -> None:
    documents = home / "Documents"
    (documents / "notes.txt").symlink_to(home / "secret.txt")
    (documents / "elsewhere").symlink_to(home / "outside")
    _refused("notes.txt", [documents], OutsideFolders)
    _refused(str(documents / "notes.txt"), [documents], OutsideFolders)
    _refused("elsewhere/inner/doc.txt", [documents], OutsideFolders)
    _refused("elsewhere/inner/missing.txt", [documents], OutsideFolders)  # no hint of what exists there
    assert reads == []


def test_a_symlink_that_stays_inside_is_followed(home: Path) -> None:
    documents = home / "Documents"
    (documents / "latest.pdf").symlink_to(documents / "report.pdf")
    assert read_inside("latest.pdf", [documents], max_bytes=LIMIT).shown == "Documents/report.pdf"


def _swap_for_link(directory: Path, target: Path) -> None:
    directory.rename(directory.with_name("inner-moved"))
    directory.symlink_to(target, target_is_directory=True)


def _swap_back(directory: Path) -> None:
    directory.unlink()
    directory.with_name("inner-moved").rename(directory)


@pytest.mark.parametrize("asked_of_the_file", [True, False], ids=["real-path", "no-real-path"])
def test_a_directory_swapped_for_a_symlink_between_check_and_open_gets_nothing_through(
    home: Path, reads: list[int], monkeypatch: pytest.MonkeyPatch, asked_of_the_file: bool
) -> None:
    """The swap made at the worst moment, every time: after the path was resolved and checked, before
    it is opened. The open file's own real path is outside, so nothing is read; where the system cannot
    say an open file's path (no /proc, no F_GETPATH), the path resolved again must be that same file."""
    if not asked_of_the_file:
        monkeypatch.setattr(platform, "real_path", lambda descriptor, path: None)
    inner = home / "Documents" / "inner"
    real_open = platform.open_for_reading

    def swapping_open(path: str) -> int:
        _swap_for_link(inner, home / "outside" / "inner")
        return real_open(path)

    monkeypatch.setattr(platform, "open_for_reading", swapping_open)
    _refused("inner/doc.txt", [home / "Documents"], OutsideFolders)
    assert reads == []


def test_without_the_open_files_real_path_a_file_inside_is_still_read(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(platform, "real_path", lambda descriptor, path: None)
    assert read_inside("inner/doc.txt", [home / "Documents"], max_bytes=LIMIT).data == b"inside"


def test_a_directory_swapped_back_and_forth_while_read_many_times_never_lets_the_outside_through(
    home: Path,
) -> None:
    inner = home / "Documents" / "inner"
    stop = threading.Event()

    def flip() -> None:
        while not stop.is_set():
            _swap_for_link(inner, home / "outside" / "inner")
            _swap_back(inner)

    flipper = threading.Thread(target=flip, daemon=True)
    flipper.start()
    outcomes: dict[str, int] = {}
    try:
        for _ in range(400):
            try:
                got = read_inside("inner/doc.txt", [home / "Documents"], max_bytes=LIMIT)
            except (OutsideFolders, FileMissing) as exc:
                outcomes[type(exc).__name__] = outcomes.get(type(exc).__name__, 0) + 1
            else:
                assert got.data == b"inside"
                outcomes["read"] = outcomes.get("read", 0) + 1
    finally:
        stop.set()
        flipper.join()
    assert sum(outcomes.values()) == 400, outcomes


def test_a_link_that_stops_being_a_link_while_it_is_followed_is_refused(
    home: Path, reads: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The swap of a link back to a directory between realpath's lstat and its readlink (EINVAL there;
    seen once in the race above) is a refusal, not an error the caller cannot name."""
    (home / "Documents" / "via").symlink_to(home / "Documents" / "inner")

    def swapped_meanwhile(path: str | bytes | os.PathLike[str], *args: object, **kwargs: object) -> str:
        raise OSError(errno.EINVAL, "Invalid argument", os.fspath(path))

    monkeypatch.setattr(os, "readlink", swapped_meanwhile)
    _refused("via/doc.txt", [home / "Documents"], OutsideFolders)
    assert reads == []


def test_a_hard_link_to_a_file_outside_is_refused(home: Path, reads: list[int]) -> None:
    os.link(home / "secret.txt", home / "Documents" / "linked.txt")
    refused = _refused("linked.txt", [home / "Documents"], NotRegularFile)
    assert isinstance(refused, NotRegularFile) and refused.what == "a file with 2 hard links"
    assert reads == []


def test_a_fifo_is_refused_without_blocking(home: Path, reads: list[int]) -> None:
    os.mkfifo(home / "Documents" / "pipe")
    outcome: list[BaseException] = []

    def read() -> None:
        try:
            read_inside("pipe", [home / "Documents"], max_bytes=LIMIT)
        except BaseException as exc:  # handed to the test's thread
            outcome.append(exc)

    threading.Thread(target=read, daemon=True).start()
    eventually(lambda: outcome, within=5, what="the read of a FIFO to answer")
    assert isinstance(outcome[0], NotRegularFile) and outcome[0].what == "a FIFO (named pipe)"
    assert reads == []


def test_proc_self_environ_is_refused(home: Path, reads: list[int]) -> None:
    (home / "Documents" / "environ").symlink_to("/proc/self/environ")
    _refused("/proc/self/environ", [home / "Documents"], OutsideFolders)
    _refused("environ", [home / "Documents"], OutsideFolders)
    assert reads == []


def test_a_directory_is_refused(home: Path, reads: list[int]) -> None:
    refused = _refused("inner", [home / "Documents"], NotRegularFile)
    assert isinstance(refused, NotRegularFile) and refused.what == "a directory"
    assert reads == []


def test_a_file_over_the_limit_is_refused_and_one_at_it_read(home: Path, reads: list[int]) -> None:
    _refused("report.pdf", [home / "Documents"], FileTooLarge, max_bytes=18)
    assert reads == []
    assert read_inside("report.pdf", [home / "Documents"], max_bytes=19).size == 19


def test_a_file_that_grows_past_the_limit_after_its_size_was_checked_is_refused(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_read = reading._read

    def growing(descriptor: int, limit: int) -> bytes:
        (home / "Documents" / "report.pdf").write_bytes(b"x" * 100)
        return real_read(descriptor, limit)

    monkeypatch.setattr(reading, "_read", growing)
    _refused("report.pdf", [home / "Documents"], FileTooLarge, max_bytes=50)


def _without_file_access_overrides() -> None:
    """Drop every capability of this (child) process, CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH with them,
    so root reads by mode bits as any user does (capset(2), version 3)."""
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)
    data = (ctypes.c_uint32 * 6)()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.capset(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")


def _in_a_child(job: Callable[[], str]) -> str:
    """``job``'s answer, run in a forked child that reads by mode bits (a capability-less root, or the
    user itself when not root)."""
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child
        os.close(read_end)
        try:
            if os.geteuid() == 0:
                _without_file_access_overrides()
            answer = job()
        except BaseException as exc:  # reported to the parent
            answer = f"error: {exc!r}"
        os.write(write_end, answer.encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as answers:
        said = answers.read().decode()
    os.waitpid(child, 0)
    return said


def test_an_unreadable_file_is_refused(home: Path) -> None:
    documents = home / "Documents"
    (documents / "locked.txt").write_bytes(SECRET)
    (documents / "locked.txt").chmod(0o000)

    def attempt(name: str) -> Callable[[], str]:
        def job() -> str:
            try:
                return read_inside(name, [documents], max_bytes=LIMIT).data.decode()
            except FileUnreadable as exc:
                return f"unreadable: {exc.reason}"

        return job

    if _in_a_child(lambda: "capable") != "capable":
        pytest.skip("this process cannot drop its file-access capabilities in a child")
    assert _in_a_child(attempt("report.pdf")) == "%PDF-1.7 the report"  # the child reads what it may
    assert _in_a_child(attempt("locked.txt")) == f"unreadable: {os.strerror(errno.EACCES)}"


def test_a_relative_name_is_taken_in_the_one_folder_that_holds_it(home: Path) -> None:
    documents, desktop = home / "Documents", home / "Desktop"
    desktop.mkdir()
    (desktop / "photo.jpg").write_bytes(b"\xff\xd8")
    (desktop / "report.pdf").write_bytes(b"another report")
    assert read_inside("photo.jpg", [documents, desktop], max_bytes=LIMIT).shown == "Desktop/photo.jpg"
    refused = _refused("report.pdf", [documents, desktop], AmbiguousName)
    assert isinstance(refused, AmbiguousName)
    assert refused.shown == ("Documents/report.pdf", "Desktop/report.pdf")
    assert (
        read_inside(str(desktop / "report.pdf"), [documents, desktop], max_bytes=LIMIT).data
        == b"another report"
    )
    _refused("missing.pdf", [documents, desktop], FileMissing)


def test_a_folder_that_is_itself_a_symlink_is_its_target(home: Path) -> None:
    (home / "Docs").symlink_to(home / "Documents", target_is_directory=True)
    assert read_inside(str(home / "Docs" / "report.pdf"), [home / "Docs"], max_bytes=LIMIT).size == 19
