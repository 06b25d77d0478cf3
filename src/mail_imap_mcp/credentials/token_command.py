"""An account's ``oauth2_token_command``: a helper (pizauth, oauth2l, mailctl...) run for each new access
token, which caches and refreshes tokens itself; what it prints is the token.
"""

from __future__ import annotations

import re
import subprocess
import time

from mail_imap_mcp.net.tokens import AccessToken, FetchToken, TokenUnavailable
from mail_imap_mcp.processes import HAS_PROCESS_GROUPS, kill_tree

#: More than any access token (Microsoft's are about 2-3 KB): output beyond this is not a token.
MAX_TOKEN_BYTES = 16 * 1024
#: How long a token from a command is reused when the command says nothing of its lifetime: helpers
#: (pizauth, oauth2l, mailctl) hand out tokens valid for an hour or more and refresh them themselves; a
#: server's refusal fetches a new one at once whatever this says.
COMMAND_TOKEN_REUSE_S = 300.0
# Runs of token-like characters in a helper's stderr are blanked before a line of it is shown.
_TOKEN_LIKE = re.compile(r"[A-Za-z0-9._~+/=-]{32,}")


def command_fetcher(argv: list[str], timeout_s: float, env: dict[str, str]) -> FetchToken:
    """A :data:`FetchToken` that runs ``argv`` (at most ``timeout_s`` seconds, or what the call has left)
    and takes what it prints as the token, reused for :data:`COMMAND_TOKEN_REUSE_S`."""

    def fetch(time_left: float) -> AccessToken:
        value = run_token_command(argv, min(timeout_s, time_left), env)
        return AccessToken(value, time.monotonic() + COMMAND_TOKEN_REUSE_S)

    return fetch


def run_token_command(argv: list[str], timeout: float, env: dict[str, str]) -> str:
    """Run ``argv`` (no shell, no stdin, environment ``env``) and return its stdout, stripped: the
    access token.

    Stopped (with everything it started, being its own process group) after ``timeout`` seconds. A
    command that cannot start, exits non-zero, hangs, or prints nothing or more than a token raises
    :class:`TokenUnavailable`, whose reason includes at most one line of its stderr with anything
    token-like blanked out, and never its stdout.
    """
    if timeout <= 0:
        raise TokenUnavailable("the call's time budget was used up before the command could run")
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=HAS_PROCESS_GROUPS,
            env=env,
        )
    except OSError as exc:
        raise TokenUnavailable(
            f"the command could not be started ({exc.strerror or type(exc).__name__})"
        ) from None
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _stop(proc)
        raise TokenUnavailable(f"the command did not finish within {timeout:.3g}s and was stopped") from None
    said = _last_line(err, out)
    if proc.returncode != 0:
        status = f"signal {-proc.returncode}" if proc.returncode < 0 else f"status {proc.returncode}"
        raise TokenUnavailable(f"the command exited with {status}{said}")
    token = out.decode("utf-8", "replace").strip()
    if not token:
        raise TokenUnavailable(f"the command printed nothing{said}")
    if (
        len(out) > MAX_TOKEN_BYTES
        or not token.isascii()
        or any(c.isspace() or not c.isprintable() for c in token)
    ):
        raise TokenUnavailable(
            "the command printed more than an access token: it must print only the token (e.g. "
            "`oauth2l fetch --output_format bare`, not JSON)"
        )
    return token


def _stop(proc: subprocess.Popen[bytes]) -> None:
    kill_tree(proc)
    try:
        proc.communicate(timeout=2)
    except subprocess.TimeoutExpired:  # a descendant that left the group still holds the pipes
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


def _last_line(err: bytes, out: bytes) -> str:
    """``": <last line of stderr>"`` with token-like runs (and anything printed on stdout) blanked."""
    lines = [line.strip() for line in err.decode("utf-8", "replace").splitlines() if line.strip()]
    if not lines:
        return ""
    line = lines[-1]
    printed = out.decode("utf-8", "replace").strip()
    if printed:
        line = line.replace(printed, "[redacted]")
    line = _TOKEN_LIKE.sub("[redacted]", line)
    line = re.sub(r"[\x00-\x1f\x7f]+", " ", line)[:200]
    return f" and said: {line!r}"
