"""The settings that turn a capability on (``capabilities.py``), each declared once: its key, where it lives
and its environment variable, which the MCP Bundle's form (``form.py``) sets and from which the form's
label of it is derived (``form.form_label``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Switch:
    """A setting that turns a capability on: ``key`` as the configuration file spells it, in each account's
    table (``scope="account"``, unset there: ``[server]``'s of the same key where there is one) or in
    ``[server]`` alone; ``env``: its variable (an account's: the suffix of ``MAIL_IMAP_<ID>_*``), and
    ``server_env`` the variable of ``[server]``'s where an account switch has one."""

    key: str
    scope: Literal["account", "server"]
    env: str
    server_env: str | None = None

    @property
    def variable(self) -> str | None:
        """The variable that sets it for every account (``[server]``'s), where one does."""
        return self.env if self.scope == "server" else self.server_env

    @property
    def form_variable(self) -> str:
        """The variable the bundle's form sets it by: :attr:`variable`, else the form account's own
        (``MAIL_IMAP_DEFAULT_*``)."""
        return self.variable or f"MAIL_IMAP_DEFAULT_{self.env}"


WRITE_ENABLED = Switch("write_enabled", "account", "WRITE_ENABLED", "MAIL_IMAP_WRITE_ENABLED")
SEND_ENABLED = Switch("send_enabled", "account", "SEND_ENABLED")
DOWNLOAD_DIR = Switch("download_dir", "server", "MAIL_IMAP_DOWNLOAD_DIR")
UNSUBSCRIBE_ENABLED = Switch("unsubscribe_enabled", "server", "MAIL_IMAP_UNSUBSCRIBE_ENABLED")
#: The account's local index (docs/index.md): no capability's switch, but what search by meaning ranks,
#: so the bundle's form sets it too.
INDEX = Switch("index", "account", "INDEX", "MAIL_IMAP_INDEX")
#: Vectors of the account's mail in its index, for search by meaning (on where the index is, by default).
INDEX_MEANING = Switch("index_meaning", "account", "INDEX_MEANING", "MAIL_IMAP_INDEX_MEANING")
#: Rules the account's server runs as mail arrives (Sieve over ManageSieve): off by default.
RULES_ENABLED = Switch("rules_enabled", "account", "RULES_ENABLED")
#: Every switch of a capability: their variables are named from here alone.
SWITCHES = (WRITE_ENABLED, SEND_ENABLED, DOWNLOAD_DIR, UNSUBSCRIBE_ENABLED, INDEX_MEANING, RULES_ENABLED)
