"""The state store with the key that seals cursors in use, for the server and the ``index`` command alike
(which imports this, not the application's package: the command starts without it)."""

from __future__ import annotations

from mail_imap_mcp.config import Config
from mail_imap_mcp.mail import sealing
from mail_imap_mcp.state import Store, open_store, shared_secret


def open_sealing_store(config: Config) -> Store:
    """The state store of ``config``, with the key that seals cursors (and names team users' index
    files) in use: the one every instance shares in Redis, else the state directory's;
    :class:`StateUnavailable` when Redis cannot be reached."""
    store = open_store(config.state.resolve_url())
    if store.shared:
        sealing.use_key(shared_secret(store, "seal"))
    else:
        sealing.load_key(config.server.state_dir or sealing.default_state_dir())
    return store
