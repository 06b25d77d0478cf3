"""``[index]`` (issue 50): the engine chosen once, its database named without a password, the password a
secret like any other; and the SQLite index's words as the PostgreSQL engine makes them in Python."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from mail_imap_mcp.config import Config, ConfigError, IndexSettings
from mail_imap_mcp.config.errors import format_validation_error
from mail_imap_mcp.credentials.secrets import index_password
from mail_imap_mcp.index.engines import open_engine
from mail_imap_mcp.index.engines.sqlite.engine import SqliteEngine
from mail_imap_mcp.index.engines.sqlite.tokens import TOKENIZER, Tokenizer

URL = "postgresql://mail_index@db.internal:5432/mail_index"


def test_without_an_index_table_the_engine_is_sqlite_in_the_servers_index_dir(tmp_path: Path) -> None:
    config = Config.model_validate({"server": {"index": True, "index_dir": str(tmp_path)}})
    engine = open_engine(config)
    assert isinstance(engine, SqliteEngine) and engine.index_dir == tmp_path
    assert config.index.index_engine == "sqlite"


def test_sqlite_ranked_by_tantivy_is_chosen_by_its_name_in_the_servers_index_dir(tmp_path: Path) -> None:
    from mail_imap_mcp.index.engines.tantivy.engine import TantivyEngine

    config = Config.model_validate(
        {"server": {"index": True, "index_dir": str(tmp_path)}, "index": {"index_engine": "sqlite+tantivy"}}
    )
    engine = open_engine(config)
    assert isinstance(engine, TantivyEngine) and engine.index_dir == tmp_path
    assert engine.name == "sqlite+tantivy" and not engine.shared


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ({"index_engine": "postgresql"}, "needs index_url"),
        ({"index_engine": "postgresql", "index_url": "mysql://x/y"}, "must start with postgresql://"),
        (
            {"index_engine": "postgresql", "index_url": "postgresql://u:secret@h/db"},
            "must not hold the password",
        ),
        (
            {"index_engine": "postgresql", "index_url": "postgresql://u@h/db?password=secret"},
            "must not hold the password",
        ),
        ({"index_url": URL}, 'for index_engine = "postgresql"'),
        (
            {
                "index_engine": "postgresql",
                "index_url": URL,
                "index_password_env": "A",
                "index_password_file": "/p",
            },
            "at most one",
        ),
        (
            {"index_engine": "postgresql", "index_url": "postgresql://h/db", "index_password_keyring": "s"},
            "user name",
        ),
        (
            {"index_engine": "postgresql", "index_url": URL, "index_password_env": "not a name"},
            "environment variable",
        ),
        ({"index_engine": "elastic"}, "index_engine"),
        ({"index_engine": "sqlite+tantivy", "index_url": URL}, 'for index_engine = "postgresql"'),
    ],
)
def test_a_wrong_index_table_is_refused_naming_the_setting(table: dict[str, str], said: str) -> None:
    with pytest.raises(ValidationError) as raised:
        Config.model_validate({"index": table})
    words = format_validation_error(raised.value)  # what the loader says
    assert said in words and "index" in words
    assert "secret" not in words


def test_the_password_comes_from_the_environment_and_a_missing_one_names_the_setting() -> None:
    settings_ = IndexSettings(index_engine="postgresql", index_url=URL, index_password_env="MIM_PG")
    assert index_password(settings_, {"MIM_PG": "s3cret"}) == "s3cret"
    with pytest.raises(ConfigError, match=r"\[index\].*MIM_PG"):
        index_password(settings_, {})
    assert index_password(IndexSettings(index_engine="postgresql", index_url=URL), {}) is None


def test_the_password_file_must_be_the_users_alone(tmp_path: Path) -> None:
    secret = tmp_path / "pw"
    secret.write_text("s3cret\n")
    secret.chmod(0o644)
    settings_ = IndexSettings(index_engine="postgresql", index_url=URL, index_password_file=secret)
    with pytest.raises(ConfigError, match="index_password_file"):
        index_password(settings_)
    secret.chmod(0o600)
    assert index_password(settings_) == "s3cret"


# -- the SQLite index's words, made in Python ----------------------------------------------------------

_TOKENIZER = Tokenizer()
_SQLITE = sqlite3.connect(":memory:", check_same_thread=False)
_SQLITE.execute(f"CREATE VIRTUAL TABLE f USING fts5(c, tokenize='{TOKENIZER}')")
_SQLITE.execute("CREATE VIRTUAL TABLE v USING fts5vocab(f, 'instance')")
#: Letters with accents, other scripts, digits, marks, emoji, punctuation and SQL or tsquery syntax.
_ALPHABET = st.one_of(
    st.characters(min_codepoint=0, max_codepoint=0x24F),
    st.characters(min_codepoint=0x300, max_codepoint=0x36F),
    st.characters(min_codepoint=0x370, max_codepoint=0x52F),
    st.characters(min_codepoint=0x3040, max_codepoint=0x30FF),
    st.characters(min_codepoint=0x1F300, max_codepoint=0x1F6FF),
    st.sampled_from("'\":*&|!<->()_-.@ \t\n\u00a0\u200b\u0130\u1e9e\ufb01"),
)


def _sqlite_words(text: str) -> list[str]:
    _SQLITE.execute("DELETE FROM f")
    _SQLITE.execute("INSERT INTO f(rowid, c) VALUES(1, ?)", (text,))
    return [row[0] for row in _SQLITE.execute("SELECT term FROM v ORDER BY offset")]


@settings(max_examples=400, deadline=None)
@given(text=st.text(_ALPHABET, max_size=60))
def test_the_words_are_the_ones_sqlites_own_tokenizer_finds(text: str) -> None:
    assert _TOKENIZER.words(text) == _sqlite_words(text)


def test_accents_case_and_syntax_fold_as_in_the_sqlite_index() -> None:
    assert _TOKENIZER.words("Crème BRÛLÉE o'brien kiwi:* a&b x|y İstanbul") == [
        "creme", "brulee", "o", "brien", "kiwi", "a", "b", "x", "y", "istanbul",
    ]  # fmt: skip


def test_regression_the_pools_wait_for_a_connection_is_a_setting() -> None:
    """Issue 89 item 17: the pool waited a fixed 5 s for a connection, which a loaded machine's PostgreSQL
    outlasted; it is ``index_connect_timeout_s`` (the tests give it the one patience's scaled 5 s)."""
    from mail_imap_mcp.index.engines.postgresql.engine import PostgresEngine

    assert IndexSettings(index_engine="postgresql", index_url=URL).index_connect_timeout_s == 5.0
    settings_ = IndexSettings(index_engine="postgresql", index_url=URL, index_connect_timeout_s=0.5)
    engine = PostgresEngine(settings_, None)
    try:
        pool = engine.pool()
        assert pool.timeout == 0.5 and pool.kwargs["connect_timeout"] == 2  # libpq's least
    finally:
        engine.close()
