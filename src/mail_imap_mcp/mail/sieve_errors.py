"""What can go wrong managing an account's Sieve scripts, whatever the protocol: the domain errors of
:mod:`mail_imap_mcp.mail.sieve`. Each carries the facts its words need (the script's name, the command,
the server's own words), never the words: ``presentation/sieve_failures.py`` says them. The failures of
the connection itself (reaching the server, TLS, the login, its time) are ``managesieve/errors.py``'s,
subclasses of :class:`SieveError` too.
"""

from __future__ import annotations

from typing import ClassVar


class SieveError(Exception):
    """A failure of managing Sieve scripts; nothing was changed unless ``changed_nothing`` is False."""

    changed_nothing: ClassVar[bool] = True


class ScriptNameInvalid(SieveError):
    """A script name refused before anything was sent: ``problem`` says why (RFC 5804 1.6)."""

    def __init__(self, name: str, problem: str, parameter: str = "name") -> None:
        super().__init__(f"script name {name!r}: {problem}")
        self.name = name
        self.problem = problem
        self.parameter = parameter


class ScriptTextInvalid(SieveError):
    """A script's text refused before anything was sent (a NUL, too large): ``problem`` says why."""

    def __init__(self, problem: str, parameter: str = "script") -> None:
        super().__init__(f"script: {problem}")
        self.problem = problem
        self.parameter = parameter


class SieveRefused(SieveError):
    """The server answered ``NO`` to ``command``: ``code`` is its response code (RFC 5804 1.3, e.g.
    ``TRYLATER``), or ``""``, and ``said`` its own words, whole (a script's verdict can be many lines)."""

    def __init__(self, command: str, said: str, *, code: str = "", name: str = "") -> None:
        super().__init__(f"{command} refused: {f'({code}) ' if code else ''}{said}")
        self.command = command
        self.said = said
        self.code = code
        #: The script the command named, if any.
        self.name = name

    @property
    def temporary(self) -> bool:
        """Whether the server asked to try again later (``TRYLATER``)."""
        return self.code.upper() == "TRYLATER"


class ScriptRefused(SieveRefused):
    """The server refused a script's text (PUTSCRIPT or CHECKSCRIPT): ``said`` is its verdict, in its
    words (Pigeonhole: ``line 3: error: unknown command 'fileinot'...``). Nothing was stored."""


class ScriptMissing(SieveRefused):
    """No script of that name (``NONEXISTENT``)."""


class ScriptActive(SieveRefused):
    """The script is the active one, which the server will not delete (``ACTIVE``): deactivate first."""


class ScriptExists(SieveRefused):
    """A script of the new name exists already (``ALREADYEXISTS``): a rename changes nothing then."""


class SieveQuotaExceeded(SieveRefused):
    """The account's Sieve quota would be exceeded (``QUOTA``, ``QUOTA/MAXSCRIPTS``, ``QUOTA/MAXSIZE``):
    ``code`` says which limit, ``said`` the server's words (often with the limit's number)."""


class SieveCommandMissing(SieveError):
    """The server lacks ``command`` (CHECKSCRIPT and RENAMESCRIPT need an RFC 5804 server, ``VERSION``)."""

    def __init__(self, command: str) -> None:
        super().__init__(f"the server offers no {command}")
        self.command = command


class SieveOutcomeUnknown(SieveError):
    """The connection was lost after a change (``command``) was sent: it may or may not have happened.
    Never retried here; listing the scripts says."""

    changed_nothing = False

    def __init__(self, command: str, name: str = "") -> None:
        super().__init__(f"{command} {name}: outcome unknown".strip())
        self.command = command
        self.name = name


class RulesConflict(SieveError):
    """The rules' scripts are not as this change expects: changed by hand, or since the change an undo
    would revert (``scripts``: which). Nothing was changed."""

    def __init__(self, reason: str, scripts: tuple[str, ...] = ()) -> None:
        super().__init__(f"rules conflict: {reason}")
        self.reason = reason
        self.scripts = scripts


class NothingToUndo(SieveError):
    """No change of the rules was kept to undo."""


#: Which refusal a response code means (RFC 5804 1.3); any other code is a plain :class:`SieveRefused`.
REFUSAL_BY_CODE: dict[str, type[SieveRefused]] = {
    "NONEXISTENT": ScriptMissing,
    "ACTIVE": ScriptActive,
    "ALREADYEXISTS": ScriptExists,
    "QUOTA": SieveQuotaExceeded,
    "QUOTA/MAXSCRIPTS": SieveQuotaExceeded,
    "QUOTA/MAXSIZE": SieveQuotaExceeded,
}


def refusal(command: str, said: str, code: str = "", name: str = "") -> SieveRefused:
    """The domain error of the server's ``NO`` to ``command`` with ``code`` and ``said``: a refused
    script's text is :class:`ScriptRefused` unless the code says more (a quota)."""
    kind = REFUSAL_BY_CODE.get(code.upper())
    if kind is None and code.upper().startswith("QUOTA/"):  # a limit RFC 5804 does not name
        kind = SieveQuotaExceeded
    if kind is None:
        kind = ScriptRefused if command in ("PUTSCRIPT", "CHECKSCRIPT") and not code else SieveRefused
    return kind(command, said, code=code.upper(), name=name)


__all__ = [
    "REFUSAL_BY_CODE",
    "NothingToUndo",
    "RulesConflict",
    "ScriptActive",
    "ScriptExists",
    "ScriptMissing",
    "ScriptNameInvalid",
    "ScriptRefused",
    "ScriptTextInvalid",
    "SieveCommandMissing",
    "SieveError",
    "SieveOutcomeUnknown",
    "SieveQuotaExceeded",
    "SieveRefused",
    "refusal",
]
