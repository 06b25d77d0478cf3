"""The in-memory ManageSieve of the tests: ``mail/sieve.py``'s :class:`SieveScripts` over a dict, with
Pigeonhole's limits, response codes and words, held to the real Pigeonhole by the contract suite
(tests/support/mail/sieve_contract.py, run by tests/pure/test_sieve_contract.py and
tests/integration/backends/test_sieve_contract.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from mail_imap_mcp.mail.sieve import ScriptEntry, SieveCapabilities, check_script_name, check_script_text
from mail_imap_mcp.mail.sieve_errors import refusal
from tests.support.mail.sieve_check import verdict

#: The SIEVE capability of Dovecot 2.3.19's Pigeonhole, as it says it.
PIGEONHOLE_EXTENSIONS = (
    "fileinto reject envelope encoded-character vacation subaddress comparator-i;ascii-numeric relational "
    "regex imap4flags copy include variables body enotify environment mailbox date index ihave duplicate "
    "mime foreverypart extracttext"
)


@dataclass
class MemorySieve:
    """One account's scripts; the limits are the test Dovecot's (tests/support/servers/sieve.py)."""

    max_scripts: int = 5
    max_storage: int = 20_000
    max_script_size: int = 8_000
    extensions: str = PIGEONHOLE_EXTENSIONS
    scripts: dict[str, str] = field(default_factory=dict)
    active: str | None = None
    #: The commands (or pipelined batches) answered so far that read: a ManageSieve round trip each.
    round_trips: int = 0

    def capabilities(self) -> SieveCapabilities:
        raw = {"IMPLEMENTATION": "memory", "SIEVE": self.extensions, "SASL": "PLAIN", "VERSION": "1.0"}
        return SieveCapabilities(
            implementation="memory",
            extensions=frozenset(self.extensions.split()),
            sasl=("PLAIN",),
            version="1.0",
            notify=("mailto",),
            raw=raw,
        )

    def list_scripts(self) -> list[ScriptEntry]:
        self.round_trips += 1
        return [ScriptEntry(name, name == self.active) for name in self.scripts]

    def list_and_get(self, names: Sequence[str]) -> tuple[list[ScriptEntry], dict[str, str]]:
        listed = [ScriptEntry(name, name == self.active) for name in self.scripts]
        self.round_trips += 1
        return listed, {name: self.scripts[name] for name in names if name in self.scripts}

    def get_script(self, name: str) -> str:
        self.round_trips += 1
        return self.scripts[self._existing("GETSCRIPT", name)]

    def put_script(self, name: str, text: str) -> str:
        check_script_name(name)
        size = len(check_script_text(text))
        self._fits("PUTSCRIPT", name, size)
        said = verdict(text, self.capabilities().extensions)
        if said:
            raise refusal("PUTSCRIPT", said, name=name)
        self.scripts[name] = text
        return ""

    def check_script(self, text: str) -> str:
        said = verdict(text, self.capabilities().extensions)
        if said or not check_script_text(text):
            raise refusal("CHECKSCRIPT", said or "script is empty")
        return ""

    def activate(self, name: str) -> None:
        self.active = self._existing("SETACTIVE", name)

    def deactivate(self) -> None:
        self.active = None

    def delete_script(self, name: str) -> None:
        self._existing("DELETESCRIPT", name)
        if name == self.active:
            raise refusal("DELETESCRIPT", "Cannot delete the active Sieve script.", "ACTIVE", name)
        del self.scripts[name]

    def rename_script(self, name: str, new_name: str) -> None:
        check_script_name(new_name, "new_name")
        self._existing("RENAMESCRIPT", name)
        if new_name in self.scripts:
            said = "A sieve script with that name already exists."
            raise refusal("RENAMESCRIPT", said, "ALREADYEXISTS", name)
        self.scripts = {new_name if key == name else key: text for key, text in self.scripts.items()}
        if self.active == name:
            self.active = new_name

    def have_space(self, name: str, size: int) -> None:
        check_script_name(name)
        self._fits("HAVESPACE", name, size)

    def _existing(self, command: str, name: str) -> str:
        check_script_name(name)
        if name not in self.scripts:
            raise refusal(command, f"Sieve script `{name}' not found", "NONEXISTENT", name)
        return name

    def _fits(self, command: str, name: str, size: int) -> None:
        if size > self.max_script_size:
            said = f"Script is too large (max {self.max_script_size} bytes)."
            raise refusal(command, said, "QUOTA/MAXSIZE", name)
        others = {key: text for key, text in self.scripts.items() if key != name}
        if len(others) >= self.max_scripts:
            said = f"Script count quota exceeded (max {self.max_scripts} scripts)."
            raise refusal(command, said, "QUOTA/MAXSCRIPTS", name)
        if sum(len(text.encode()) for text in others.values()) + size > self.max_storage:
            said = f"Script storage quota exceeded (max {self.max_storage} bytes)."
            raise refusal(command, said, "QUOTA/MAXSTORAGE", name)
