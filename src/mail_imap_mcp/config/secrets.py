"""Secrets from the environment, a command or a file, and the environment helper commands run with."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from .errors import ConfigError
from .secret_storage import read_secret_file

PASSWORD_COMMAND_TIMEOUT_S = 30.0

#: What a helper command (password_command, oauth2_token_command, token_command) gets from the server's
#: environment besides the variables its settings list: where to find programs, the user's home,
#: locale and time zone, and how to reach the user's own keyring or agent. No secret is among them.
HELPER_BASE_ENV = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TMPDIR",
    "XDG_RUNTIME_DIR",
    "DBUS_SESSION_BUS_ADDRESS",
)
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def helper_environment(passed: Sequence[str] = (), env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a helper command: :data:`HELPER_BASE_ENV`, the ``LC_*`` locale variables and
    the ``passed`` names, taken from ``env`` (the server's environment by default) where set."""
    env = os.environ if env is None else env
    wanted = {*HELPER_BASE_ENV, *passed}
    return {name: value for name, value in env.items() if name in wanted or name.startswith("LC_")}


def check_env_names(names: list[str]) -> list[str]:
    """``names`` if each is an environment variable name, else ValueError."""
    for name in names:
        if not _ENV_NAME.match(name):
            raise ValueError(f"{name!r} is not an environment variable name")
    return names


def resolve_secret(
    *,
    env_var: str | None = None,
    command: list[str] | None = None,
    file: Path | None = None,
    env: Mapping[str, str] | None = None,
    command_setting: str = "command",
    file_setting: str = "file",
    what: str = "secret",
    command_env: Sequence[str] = (),
) -> str:
    """A secret from exactly one of an environment variable, a command's stdout or a file of the user's
    alone (:func:`.secret_storage.read_secret_file`; trailing newlines trimmed). The command runs with :func:`helper_environment` (plus ``command_env``). Raises
    :class:`ConfigError` naming the setting, never echoing the value or the command's output."""
    env = os.environ if env is None else env
    if env_var is not None:
        value = env.get(env_var)
        if not value:
            raise ConfigError(f"the environment variable {env_var} is not set or empty")
        return value
    if file is not None:
        return read_secret_file(file, file_setting)
    assert command is not None
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            timeout=PASSWORD_COMMAND_TIMEOUT_S,
            check=False,
            stdin=subprocess.DEVNULL,
            env=helper_environment(command_env, env),
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise ConfigError(f"{command_setting} could not run: {type(exc).__name__}") from None
    if done.returncode != 0:
        raise ConfigError(f"{command_setting} exited with status {done.returncode}")
    value = done.stdout.decode("utf-8", "replace").rstrip("\r\n")
    if not value:
        raise ConfigError(f"{command_setting} printed an empty {what}")
    return value
