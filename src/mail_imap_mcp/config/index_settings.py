"""``[index]``: which engine keeps the local full-text indexes, and where.

``index_engine = "sqlite"`` (the default) keeps one file per account under ``[server] index_dir``;
``"sqlite+tantivy"`` keeps the same files and ranks relevance pages with a Tantivy index of their text
beside each (the ``tantivy`` extra); ``"postgresql"`` keeps every index in one PostgreSQL database that every instance of a team deployment
shares (``index_url``), one schema per index. Whether an account keeps an index at all, how much of each
message it reads and the freshness budget stay in ``[server]`` and the accounts (``index``,
``index_per_user``, ``index_text_bytes``...). The database password is a secret like every other
(:mod:`.secret_storage`): from an environment variable, a file of the user's alone or the OS keychain,
never in the URL.
"""

from __future__ import annotations

import urllib.parse
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from .secrets import check_env_names

#: Where the database password comes from: at most one of them (none: the URL's host trusts the user,
#: e.g. a Unix socket with peer authentication).
PASSWORD_SOURCES = ("index_password_env", "index_password_file", "index_password_keyring")


class IndexSettings(BaseModel):
    """``[index]``: the engine of every index of this server."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    index_engine: Literal["sqlite", "sqlite+tantivy", "postgresql"] = Field(
        default="sqlite",
        description='The engine of the indexes: "sqlite" (a file per account in [server] index_dir, for '
        'one person), "sqlite+tantivy" (the same files, best-match pages ranked by a Tantivy index beside '
        'each without scoring every match: for large mailboxes; needs the `tantivy` extra) or "postgresql" (one database every instance of a team shares, index_url; needs the '
        "`postgres` extra). Which accounts keep an index stays `index` in [server] or the account.",
    )
    index_url: str | None = Field(
        default=None,
        min_length=1,
        max_length=2000,
        description='With index_engine = "postgresql": the database, e.g. '
        "`postgresql://mail_index@db.internal:5432/mail_index?sslmode=verify-full`, without a password "
        "(index_password_env, index_password_file or index_password_keyring give it).",
    )
    index_password_env: str | None = Field(
        default=None, min_length=1, description="Environment variable holding the database password."
    )
    index_password_file: Path | None = Field(
        default=None, description="File holding the database password (mode 0600, the user's own)."
    )
    index_password_keyring: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="Read the database password from the OS keychain: the entry of this service name and "
        "the URL's user name (keyring library; mail-imap-mcp[keyring]).",
    )
    index_connect_timeout_s: float = Field(
        default=5.0,
        gt=0,
        le=300,
        description="With PostgreSQL: seconds a search or a sync waits for a connection of the pool (the "
        "database out of reach that long: the index is unavailable and the server answers searches).",
    )
    index_pool_size: int = Field(
        default=4,
        ge=1,
        le=64,
        description="With PostgreSQL: most connections this instance holds to the database.",
    )

    meaning_model: Literal["english", "multilingual"] = Field(
        default="multilingual",
        description="The text model of search by meaning (about, like), both shipped in the meaning extra, "
        'never downloaded: "english" (WordLlama l2_supercat, 256 dimensions: fast, English only) or '
        '"multilingual" (Google\'s Universal Sentence Encoder multilingual v3, 512 dimensions, about 60 '
        "times the CPU of english to embed mail: 16 languages, among them English, German, French, "
        "Spanish, Italian, Dutch, Portuguese and Polish, and a question in one finds mail in another). "
        "Vectors made by another model are made again, in the background. meaning_model_dir, where set, "
        "is read instead.",
    )
    meaning_threads: int = Field(
        default=1,
        ge=1,
        le=64,
        description='The most threads the multilingual model (meaning_model = "multilingual") runs its '
        "matrix products on while it embeds mail or a question. 1 (the default) costs the least CPU a "
        "message and leaves the other cores to searches; more embed a first index sooner, at more CPU "
        "in all. Taken when the model is read, once a process: a change holds from the server's restart.",
    )
    meaning_model_dir: Path | None = Field(
        default=None,
        description="Another text model for search by meaning (index_meaning): a local directory in "
        "Model2Vec layout (model.safetensors and tokenizer.json) or WordLlama's (weights/*.safetensors and "
        "tokenizers/*.json), e.g. a multilingual model. It is read from the disk, never downloaded; a "
        "relative path is read against the config file's folder. A directory without a usable model makes "
        "search by meaning unavailable (about and like are not listed), which imap_list_accounts and `mail-imap-mcp check` say with the reason. Vectors made by another model are made again. "
        "Default: none, the model meaning_model names.",
    )

    meaning_cpu_share: float = Field(
        default=1.0,
        gt=0,
        le=1,
        description="The share of one processor core the server's pass that makes vectors for search by "
        "meaning (index_meaning) takes over time: it rests after each batch of messages for as long as the "
        "share asks, at the lowest scheduling priority (Linux), so searches and the words' sync go first. "
        "1 (the default): as fast as it can, at the usual priority; 0.5: twice as long, half a core left to "
        "the rest. "
        "`mail-imap-mcp index` (a build the user waits for) runs at full speed.",
    )

    #: The folder of the config file these settings were read from (None: not read from a file), which a
    #: relative ``meaning_model_dir`` is read against (set by :func:`~.loading.load_config`).
    _file_folder: Path | None = PrivateAttr(default=None)

    def meaning_model_path(self) -> Path | None:
        """``meaning_model_dir`` where the server reads it: ``~`` expanded, and a relative path read against
        the folder of the config file that names it, not the server's working directory (which a client
        that starts the server chooses)."""
        if self.meaning_model_dir is None:
            return None
        path = self.meaning_model_dir.expanduser()
        if path.is_absolute() or self._file_folder is None:
            return path
        return self._file_folder / path

    @model_validator(mode="after")
    def _check(self) -> IndexSettings:
        given = [name for name in PASSWORD_SOURCES if getattr(self, name) is not None]
        if len(given) > 1:
            raise ValueError(f"set at most one of {', '.join(given)}")
        if self.index_password_env is not None:
            check_env_names([self.index_password_env])
        if self.index_engine in ("sqlite", "sqlite+tantivy"):
            if self.index_url is not None or given:
                raise ValueError('index_url and the password are for index_engine = "postgresql"')
            return self
        if self.index_url is None:
            raise ValueError('index_engine = "postgresql" needs index_url (the database to keep indexes in)')
        parts = urllib.parse.urlsplit(self.index_url)
        if parts.scheme not in ("postgresql", "postgres"):
            raise ValueError("index_url must start with postgresql://")
        if parts.password is not None or "password" in urllib.parse.parse_qs(parts.query):
            raise ValueError(
                "index_url must not hold the password: give it with index_password_env, "
                "index_password_file or index_password_keyring"
            )
        if self.index_password_keyring is not None and not parts.username:
            raise ValueError(
                "index_password_keyring needs the user name in index_url (postgresql://USER@...)"
            )
        return self
