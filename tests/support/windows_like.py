"""A Python that looks like Windows to the project's own code, on Linux: the server started with it must
run as it would where POSIX signals, rlimits and process groups do not exist.

Hidden: the modules ``resource``, ``fcntl``, ``termios``, ``pwd`` and ``grp`` from imports made by
``mail_imap_mcp`` (the standard library and the dependencies keep what they import, as on Windows they
import their own Windows modules); ``os.killpg``, ``getpgid``, ``setsid``, ``getuid`` and their friends;
``signal.SIGHUP``, ``SIGXCPU``, ``SIGUSR1/2``, ``SIGQUIT``, ``alarm`` and ``setitimer``; and the event
loop refuses signal handlers with NotImplementedError, as Windows' ProactorEventLoop does. The
extraction child gets the same prelude, so it too runs without rlimits. A dependency that picks its
implementation by ``sys.platform`` (platformdirs) is imported before the removal: on Windows it would load
its Windows implementation, here its Unix one binds ``os.getuid`` when imported.

Not simulated: Windows' own process creation, pipes and paths, its console's Ctrl-C, and the
Windows API the memory watch reads there (``processes._windows_working_set``).
"""

from __future__ import annotations

HIDE = """
import builtins as _builtins, os as _os, signal as _signal
# Dependencies that choose their implementation by sys.platform are loaded first: on Windows they load
# their Windows one, which needs none of what is removed below; their Unix one here binds os.getuid.
try:
    import platformdirs as _platformdirs
except ImportError:
    pass
_HIDDEN = frozenset({"resource", "fcntl", "termios", "pwd", "grp"})
_real_import = _builtins.__import__
def _windows_like_import(name, globals=None, locals=None, fromlist=(), level=0):
    importer = ((globals or {}).get("__name__") or "").partition(".")[0]
    if level == 0 and importer == "mail_imap_mcp" and name.partition(".")[0] in _HIDDEN:
        raise ModuleNotFoundError(f"No module named {name!r} (simulated Windows)", name=name)
    return _real_import(name, globals, locals, fromlist, level)
_builtins.__import__ = _windows_like_import
for _name in ("killpg", "getpgid", "getpgrp", "setpgid", "setsid", "getsid", "getuid", "geteuid",
              "getgid", "getegid", "fork"):
    if hasattr(_os, _name):
        delattr(_os, _name)
for _name in ("SIGHUP", "SIGXCPU", "SIGUSR1", "SIGUSR2", "SIGQUIT", "alarm", "setitimer"):
    if hasattr(_signal, _name):
        delattr(_signal, _name)
import asyncio.unix_events as _unix_events
def _no_signal_handlers(self, sig, callback, *args):
    raise NotImplementedError("signal handlers (simulated Windows event loop)")
_unix_events._UnixSelectorEventLoop.add_signal_handler = _no_signal_handlers
"""

#: The prelude of the server process: HIDE, and the same for every extraction child it starts.
SERVER_PRELUDE = (
    HIDE
    + "import mail_imap_mcp.content.sandbox as _sandbox\n"
    + f"_sandbox._BOOT = {HIDE!r} + _sandbox._BOOT\n"
)


def server_code(*argv: str) -> str:
    """``python -c`` code that runs ``mail-imap-mcp ARGV`` in the simulation."""
    return SERVER_PRELUDE + f"from mail_imap_mcp.cli import main\nmain({list(argv)!r})\n"
