"""``[server]`` ``attachment_dirs`` and ``download_dir``: off by default, absolute folders from the file
or the environment (the MCP Bundle's form sets the variables), a relative one refused naming the
setting, and both refused for the HTTP transport."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mail_imap_mcp.config import ConfigError, load_config
from mail_imap_mcp.config.form import BUNDLE_FORM
from mail_imap_mcp.config.local_files import refuse_over_http

ACCOUNT = '[accounts.a]\nhost = "127.0.0.1"\nsecurity = "plain"\nusername = "u"\npassword_env = "PW"\n'


def _config_file(tmp_path: Path, server: str = "") -> Path:
    path = tmp_path / "config.toml"
    path.write_text(ACCOUNT + (f"[server]\n{server}" if server else ""))
    return path


def test_both_are_off_by_default(tmp_path: Path) -> None:
    server = load_config(_config_file(tmp_path), env={}).server
    assert server.attachment_dirs == () and server.download_dir is None
    refuse_over_http(server.attachment_dirs, server.download_dir, "the HTTP transport")  # nothing to refuse


def test_the_file_sets_absolute_folders_and_home_relative_ones(tmp_path: Path) -> None:
    text = f'attachment_dirs = ["{tmp_path}/Documents", "~/Desktop"]\ndownload_dir = "~/Downloads"\n'
    server = load_config(_config_file(tmp_path, text), env={"HOME": str(tmp_path)}).server
    home = Path("~").expanduser()
    assert server.attachment_dirs == (tmp_path / "Documents", home / "Desktop")
    assert server.download_dir == home / "Downloads"


@pytest.mark.parametrize(
    ("text", "setting"),
    [
        ('attachment_dirs = ["Documents"]\n', "attachment_dirs"),
        ('download_dir = "Downloads"\n', "download_dir"),
    ],
)
def test_a_relative_folder_is_refused_naming_the_setting(tmp_path: Path, text: str, setting: str) -> None:
    with pytest.raises(ConfigError, match="must be an absolute folder") as caught:
        load_config(_config_file(tmp_path, text), env={})
    assert setting in str(caught.value)


def test_the_environment_sets_them_as_the_bundle_form_does(tmp_path: Path) -> None:
    documents, desktop, downloads = (str(tmp_path / name) for name in ("Documents", "Desktop", "Downloads"))
    env = {
        "MAIL_IMAP_ATTACHMENT_DIRS": f"{documents}{os.pathsep}{desktop}",
        "MAIL_IMAP_DOWNLOAD_DIR": downloads,
    }
    server = load_config(_config_file(tmp_path), env=env).server
    assert server.attachment_dirs == (Path(documents), Path(desktop))
    assert server.download_dir == Path(downloads)
    # A field of the form left empty (or its placeholder unsubstituted) is unset.
    empty = {"MAIL_IMAP_ATTACHMENT_DIRS": "", "MAIL_IMAP_DOWNLOAD_DIR": "${user_config.download_folder}"}
    assert load_config(_config_file(tmp_path), env=empty).server.download_dir is None
    fields = dict(BUNDLE_FORM.values())
    assert (
        fields["MAIL_IMAP_ATTACHMENT_DIRS"]["type"] == fields["MAIL_IMAP_DOWNLOAD_DIR"]["type"] == "directory"
    )
    assert (
        not fields["MAIL_IMAP_ATTACHMENT_DIRS"]["required"]
        and fields["MAIL_IMAP_DOWNLOAD_DIR"]["default"] == ""
    )


def test_over_http_each_one_set_is_refused_by_name() -> None:
    with pytest.raises(ConfigError) as caught:
        refuse_over_http(
            (Path("/home/alice/Documents"),), Path("/home/alice/Downloads"), "the HTTP transport"
        )
    said = str(caught.value)
    assert (
        said.startswith("attachment_dirs and download_dir in [server]") and "over the HTTP transport" in said
    )
    with pytest.raises(ConfigError, match=r"^download_dir in \[server\].* Remove it, or serve over stdio"):
        refuse_over_http((), Path("/home/alice/Downloads"), "the HTTP transport")


@pytest.mark.anyio
async def test_serve_http_itself_refuses_them_before_it_serves(tmp_path: Path) -> None:
    """The check of the HTTP transport's own entry, for a caller that starts it in process."""
    from mail_imap_mcp.config import HttpSettings
    from mail_imap_mcp.transport.http import serve_http

    config = load_config(_config_file(tmp_path, 'download_dir = "/srv/downloads"\n'), env={})
    with pytest.raises(ConfigError, match=r"^download_dir in \[server\]"):
        await serve_http(config, HttpSettings(), None, sock=None)  # type: ignore[arg-type]  # refused first


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder of the test's own (``~`` and ``Path.home()`` are it)."""
    folder = tmp_path / "home" / "alice"
    (folder / "Documents").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.setenv("USERPROFILE", str(folder))
    return folder


@pytest.mark.parametrize("setting", ["attachment_dirs", "download_dir"])
@pytest.mark.parametrize(
    ("folder", "why"),
    [
        ("/", "is the root of the filesystem"),
        ("~", "is the user's home folder itself"),
        ("~/Documents/..", "is the user's home folder itself"),
        ("{home}/..", "holds the user's home folder"),
    ],
)
def test_the_root_the_home_or_a_folder_holding_it_is_refused_naming_the_setting(
    tmp_path: Path, home: Path, setting: str, folder: str, why: str
) -> None:
    value = folder.format(home=home)
    text = f'{setting} = ["{value}"]\n' if setting == "attachment_dirs" else f'{setting} = "{value}"\n'
    with pytest.raises(ConfigError, match=why) as caught:
        load_config(_config_file(tmp_path, text), env={})
    assert setting in str(caught.value) and "docs/security.md" in str(caught.value)


@pytest.mark.parametrize("secrets", [".ssh", ".gnupg", ".aws", ".config", "Library/Keychains"])
def test_a_folder_holding_well_known_secrets_is_never_one_to_attach_from(
    tmp_path: Path, home: Path, secrets: str
) -> None:
    shared = home / "Documents" / "old-home-copy"
    (shared / secrets).mkdir(parents=True)
    with pytest.raises(ConfigError, match=f"holds {secrets}") as caught:
        load_config(_config_file(tmp_path, f'attachment_dirs = ["{shared}"]\n'), env={})
    assert "attachment_dirs" in str(caught.value)
    # Through the environment (the MCP Bundle's form) as well; a download folder may hold them.
    with pytest.raises(ConfigError, match=f"holds {secrets}"):
        load_config(_config_file(tmp_path), env={"MAIL_IMAP_ATTACHMENT_DIRS": str(shared)})
    assert (
        load_config(_config_file(tmp_path, f'download_dir = "{shared}"\n'), env={}).server.download_dir
        == shared
    )


def test_a_symlink_to_the_home_folder_is_the_home_folder(tmp_path: Path, home: Path) -> None:
    (tmp_path / "link").symlink_to(home)
    with pytest.raises(ConfigError, match="is the user's home folder itself"):
        load_config(_config_file(tmp_path, f'attachment_dirs = ["{tmp_path / "link"}"]\n'), env={})
    server = load_config(_config_file(tmp_path, 'attachment_dirs = ["~/Documents"]\n'), env={}).server
    assert server.attachment_dirs == (home / "Documents",)
