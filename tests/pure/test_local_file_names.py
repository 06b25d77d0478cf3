"""The name rules of local files (:mod:`mail_imap_mcp.local_files.names`), on the text alone: Windows
paths refused before any filesystem call (judged with ``ntpath``/``PureWindowsPath``, since no Windows
machine runs here), names compared as each platform compares them, and the safe name of a saved file."""

from __future__ import annotations

import ntpath

import pytest

from mail_imap_mcp.local_files.names import (
    MAX_NAME_BYTES,
    comparison_key,
    lies_inside,
    numbered_names,
    path_refusal,
    safe_file_name,
    windows_refusal,
)


@pytest.mark.parametrize(
    ("path", "why"),
    [
        (r"\\attacker.example\share\report.pdf", "network share"),  # UNC: looking it up sends the NTLM hash
        ("//attacker.example/share/report.pdf", "network share"),
        (r"\\.\PhysicalDrive0", "device path"),
        (r"\\?\C:\Users\alice\Documents\report.pdf", "device path"),
        (r"\\.\pipe\mail-imap-mcp", "device path"),  # a named pipe
        (r"\??\C:\secret.txt", "device path"),
        (r"C:report.pdf", "another drive's current folder"),  # drive-relative
        (r"D:..\secret.txt", "another drive's current folder"),
        (r"\Users\alice\secret.txt", "current drive"),
        (r"C:\Users\alice\Documents\report.pdf:hidden", "alternate data stream"),
        (r"Documents\report.pdf::$DATA", "alternate data stream"),
        (r"C:\Users\alice\Documents\report.pdf.", "dot or space"),  # Windows drops trailing dots
        (r"C:\Users\alice\Documents\report.pdf ", "dot or space"),
        (r"C:\Users\alice\Documents.\report.pdf", "dot or space"),
        (r"C:\Users\alice\Documents\NUL", "device name"),
        (r"Documents\com1.txt", "device name"),
        (r"Documents\CON .log", "device name"),
        (r"C:\PROGRA~1\secret.txt", "8.3 short name"),
        (r"C:\Users\alice\DOCUME~1\REPORT~12.PDF", "8.3 short name"),
    ],
)
def test_windows_names_that_leave_a_folder_or_reach_a_device_are_refused(path: str, why: str) -> None:
    assert ntpath.isabs(path) or not ntpath.isabs(path)  # the rules read the path as ntpath does
    refusal = windows_refusal(path)
    assert refusal is not None and why in refusal, (path, refusal)
    assert path_refusal(path, platform="win32") == refusal


@pytest.mark.parametrize(
    "path",
    [
        r"C:\Users\alice\Documents\report.pdf",
        r"Documents\Invoices 2026\invoice-11.pdf",
        "Documents/report.final.pdf",
        r"C:\Users\alice\Documents\..\Documents\console.txt",  # ".." is the containment check's to judge
        r"Documents\~draft.docx",
        r"Documents\NULL.txt",
        r"Documents\compiler.c",
    ],
)
def test_ordinary_windows_paths_pass_the_name_rules(path: str) -> None:
    assert windows_refusal(path) is None


def test_posix_paths_are_judged_by_the_disk_not_by_windows_rules() -> None:
    # On Linux and macOS a backslash or a trailing dot is part of a name; only a NUL is refused outright.
    assert path_refusal(r"\\server\share", platform="linux") is None
    assert path_refusal("notes.", platform="darwin") is None
    assert path_refusal("report\x00.pdf", platform="linux") == "a NUL character"


def test_names_compare_as_each_platform_compares_them() -> None:
    composed, decomposed = "R\u00e9sum\u00e9.pdf", "Re\u0301sume\u0301.pdf"
    assert comparison_key(composed, platform="darwin") == comparison_key(
        decomposed.upper(), platform="darwin"
    )
    assert comparison_key("Report.PDF", platform="win32") == comparison_key("report.pdf", platform="win32")
    assert comparison_key(composed, platform="win32") != comparison_key(decomposed, platform="win32")
    assert comparison_key("Report.pdf", platform="linux") != comparison_key("report.pdf", platform="linux")


@pytest.mark.parametrize(
    ("path", "folder", "platform", "inside"),
    [
        ("/home/alice/Documents/report.pdf", "/home/alice/Documents", "linux", True),
        ("/home/alice/Documents", "/home/alice/Documents", "linux", False),  # the folder is no file of it
        ("/home/alice/Documents-old/report.pdf", "/home/alice/Documents", "linux", False),
        ("/home/alice/documents/report.pdf", "/home/alice/Documents", "linux", False),
        ("/Users/alice/documents/report.pdf", "/Users/alice/Documents", "darwin", True),
        ("/Users/alice/Re\u0301sume\u0301s/cv.pdf", "/Users/alice/R\u00e9sum\u00e9s", "darwin", True),
        (r"c:\users\alice\documents\report.pdf", r"C:\Users\alice\Documents", "win32", True),
        (r"C:\Users\alice\Documents2\report.pdf", r"C:\Users\alice\Documents", "win32", False),
        (r"D:\Users\alice\Documents\report.pdf", r"C:\Users\alice\Documents", "win32", False),
    ],
)
def test_a_path_lies_inside_a_folder_by_whole_names(
    path: str, folder: str, platform: str, inside: bool
) -> None:
    assert lies_inside(path, folder, platform=platform) is inside


@pytest.mark.parametrize(
    ("wanted", "safe"),
    [
        ("report.pdf", "report.pdf"),
        ("../../etc/passwd", "_.._etc_passwd"),
        ("/etc/passwd", "_etc_passwd"),
        (r"..\..\Windows\System32\evil.dll", r"_.._Windows_System32_evil.dll"),
        ("CON", "_CON"),
        ("con.txt", "_con.txt"),
        ("Com1.tar.gz", "_Com1.tar.gz"),
        ("LPT\u00b9.pdf", "_LPT\u00b9.pdf"),
        ("NUL .txt", "_NUL .txt"),
        (".bashrc", "bashrc"),
        ("...", "attachment"),
        ("", "attachment"),
        ("invoice\u202efdp.exe", "invoicefdp.exe"),  # a right-to-left override hides the real extension
        ("a\u200bb.pdf", "ab.pdf"),
        ("report:hidden.pdf", "report_hidden.pdf"),
        ("line\nbreak\t.pdf", "line_break_.pdf"),
        ('what?<is>"this"|*.pdf', "what__is__this___.pdf"),
        ("trailing dots... ", "trailing dots"),
        ("Re\u0301sume\u0301.pdf", "R\u00e9sum\u00e9.pdf"),  # NFC
    ],
)
def test_a_saved_file_gets_a_safe_name(wanted: str, safe: str) -> None:
    assert safe_file_name(wanted) == safe
    assert windows_refusal(safe_file_name(wanted)) is None


def test_a_long_name_is_cut_by_utf8_bytes_at_a_character_boundary_keeping_its_extension() -> None:
    for letter in ("a", "\u00e9", "\u6587", "\U0001f600"):  # one, two, three and four bytes
        name = safe_file_name(letter * 300 + ".pdf")
        assert name.endswith(".pdf")
        assert len(name.encode()) <= MAX_NAME_BYTES
        assert len(name.encode()) > MAX_NAME_BYTES - 4  # cut no shorter than a character needs
        assert set(name.removesuffix(".pdf")) == {letter}


def test_numbered_names_keep_the_extension_and_the_byte_limit() -> None:
    names = numbered_names("report.pdf")
    assert [next(names) for _ in range(3)] == ["report.pdf", "report (2).pdf", "report (3).pdf"]
    long = numbered_names("\u00e9" * 300 + ".pdf")
    next(long)
    second = next(long)
    assert second.endswith(" (2).pdf") and len(second.encode()) <= MAX_NAME_BYTES
    assert next(numbered_names("CON")) == "_CON"
