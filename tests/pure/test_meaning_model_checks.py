"""A bad ``[index] meaning_model_dir`` (issue 89 item 9): each is refused before ``about`` and ``like`` are
listed where its files tell (a table too large, a mapping out of range, weights that are not finite), else
by the first read, once, whatever the reader raised (a panic of its Rust code included), and every error
names the setting as the user wrote it; a relative path is read against the config file's folder."""

from __future__ import annotations

import json
import logging
import struct
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from mail_imap_mcp.config import Config, load_config
from mail_imap_mcp.index.engines.sqlite.engine import SqliteLocation
from mail_imap_mcp.index.store import TEXT_COLUMNS, IndexedMessage
from mail_imap_mcp.index.sync_vectors import VectorKeeper
from mail_imap_mcp.meaning import model as meaning_model
from mail_imap_mcp.meaning import model_check
from mail_imap_mcp.meaning.model import MeaningUnavailable, found_reason, model_for, unavailable_reason
from tests.support.meaning_models import WORDS, model2vec_dir, table_of
from tests.support.patience import eventually, patient

SETTING = "[index] meaning_model_dir"


def config_with(directory: Path) -> Config:
    return Config.model_validate({"server": {"index": True}, "index": {"meaning_model_dir": str(directory)}})


@pytest.fixture(autouse=True)
def fresh_models() -> None:
    """Each test reads its models anew (the process keeps each model it read, and each check)."""
    meaning_model._loaded.clear()
    model_check._checked.clear()


def refused(config: Config, directory: Path, said: str) -> str:
    """What a call is told: the setting as written first, then ``said``."""
    with pytest.raises(MeaningUnavailable) as raised:
        model_for(config)
    why = str(raised.value)
    assert why.startswith(f"{SETTING} = {str(directory)!r}: "), why
    assert said in why, why
    return why


def test_regression_a_table_too_large_for_a_model_is_refused_before_listing_without_reading_it(
    tmp_path: Path,
) -> None:
    """A 2 GB table passed the listing's check and then broke the reader (issue 89); the file here is
    sparse: only its header is written."""
    directory = model2vec_dir(tmp_path / "model")
    rows, dimensions = 1_100_000, 512  # 2.1 GiB as single floats
    size = rows * dimensions * 4
    header = json.dumps(
        {"embeddings": {"dtype": "F32", "shape": [rows, dimensions], "data_offsets": [0, size]}}
    ).encode()
    table = directory / "model.safetensors"
    with table.open("wb") as file:
        file.write(struct.pack("<Q", len(header)) + header)
        file.truncate(8 + len(header) + size)
    why = found_reason(config_with(directory))
    assert why is not None and why.startswith(f"{SETTING} = {str(directory)!r}: "), why
    assert "2.1 GiB as single floats, more than the 1 GiB a model may" in why
    refused(config_with(directory), directory, "more than the 1 GiB a model may")


#: Model2Vec's tensors beside its table (7 rows: the unknown token and six words), each wrong, and what
#: the error says of it.
WRONG_PARTS = {
    "a mapping past the table": (
        {"mapping": np.array([0, 1, 2, 3, 4, 5, 7], dtype=np.int64)},
        "its mapping names rows 0 to 7, its table has 7 (0 to 6)",
    ),
    "a negative mapping": (
        {"mapping": np.array([0, 1, 2, 3, 4, 5, -1], dtype=np.int64)},
        "its mapping names rows -1 to 5",
    ),
    "a mapping of floats": (
        {"mapping": np.zeros(7, dtype=np.float32)},
        "not integers",
    ),
    "weights with a NaN": (
        {"weights": np.array([1, 1, np.nan, 1, 1, 1, 1], dtype=np.float32)},
        "its weights hold values that are not finite",
    ),
    "an infinite weight": (
        {"weights": np.array([1, 1, 1, np.inf, 1, 1, 1], dtype=np.float32)},
        "its weights hold values that are not finite",
    ),
    "weights of another length": ({"weights": np.ones(5, dtype=np.float32)}, "its weights are (5,)"),
}


@pytest.mark.parametrize("case", WRONG_PARTS)
def test_regression_a_wrong_mapping_or_weights_is_refused_before_listing_and_by_the_read(
    case: str, tmp_path: Path
) -> None:
    """A mapping out of range was ``internal`` on every call (an IndexError in the read), and NaN weights
    loaded (issue 89)."""
    extra, said = WRONG_PARTS[case]
    directory = model2vec_dir(tmp_path / "model", extra=extra)
    why = found_reason(config_with(directory))
    assert why is not None and said in why, why
    assert meaning_model._loaded == {}  # the listing read no model
    assert refused(config_with(directory), directory, said) == unavailable_reason(config_with(directory))


def test_regression_a_table_that_is_not_finite_is_refused_by_the_read_and_then_by_the_listing(
    tmp_path: Path,
) -> None:
    vectors = {**WORDS, "bill": (np.nan, 0.9, 0.0, 0.0), "holiday": (np.inf, 0.0, 1.0, 0.0)}
    directory = model2vec_dir(tmp_path / "model", vectors)
    assert np.isnan(table_of(vectors)).any()
    refused(config_with(directory), directory, "its table holds 2 values that are not finite")
    assert "not finite" in (found_reason(config_with(directory)) or "")


class PanicException(BaseException):  # pyo3's name, as its Rust readers raise it
    """What a Rust reader raises where it panics: a ``BaseException``, which ``except Exception`` misses."""


def test_regression_a_reader_that_panics_makes_one_failure_kept_and_said_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The panic went through the loader, the vectors' thread died and was started again at each sync (7
    times in 5 minutes), and every call read the table again (issue 89)."""
    import safetensors

    reads: list[str] = []

    def panics(path: str, framework: str) -> object:
        reads.append(path)
        raise PanicException("called `Result::unwrap()` on an `Err` value")

    monkeypatch.setattr(safetensors, "safe_open", panics)
    directory = model2vec_dir(tmp_path / "model")
    config = config_with(directory)
    assert found_reason(config) is None  # the header and tensors are fine: only the read panics
    caplog.set_level(logging.WARNING, logger="mail_imap_mcp.meaning.model")
    first = refused(config, directory, "model.safetensors cannot be read: PanicException: called")
    for _ in range(3):
        assert unavailable_reason(config) == first
        assert found_reason(config) == first
    assert len(reads) == 1
    assert [record.getMessage() for record in caplog.records] == [
        f"search by meaning is unavailable: {first}"
    ]


def test_regression_a_model_that_panics_while_embedding_stops_the_vectors_pass_once(tmp_path: Path) -> None:
    """The pass's thread caught ``Exception`` alone: a panic ended it, and each sync started it again (7
    times in 5 minutes, issue 89). Now it is said once, in the index's state, and not started again."""
    (tmp_path / "ix").mkdir(mode=0o700)
    location = SqliteLocation(tmp_path / "ix" / "a.sqlite3")
    store = location.open().store
    state = store.start_folder("INBOX", 1)
    texts = tuple("the radiator" if column == "body" else "" for column in TEXT_COLUMNS)
    store.put(state, [IndexedMessage(uid, uid, 20260101, 1, (), False, texts) for uid in (1, 2, 3)])
    store.close()
    embedded: list[int] = []

    class Panicking:
        name, dimensions = "panicking", 4

        def embed(self, texts: Sequence[str]) -> np.ndarray:
            embedded.append(len(texts))
            raise PanicException("index out of bounds")

        def rest(self) -> None:
            """Nothing is kept between calls."""

    keeper = VectorKeeper("a", location, threading.Event(), Panicking)
    for _ in range(3):  # three syncs end
        keeper.due()
        eventually(lambda: keeper.status.unavailable is not None, within=10, what="the pass stopped")
        keeper.join(patient(10))
    assert keeper.status.words() == "unavailable: the model failed (PanicException: index out of bounds)"
    assert len(embedded) == 1


def test_regression_a_relative_model_directory_is_read_against_the_config_file_s_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "etc"
    model2vec_dir(folder / "models" / "tiny")
    config_file = folder / "config.toml"
    config_file.write_text(
        '[accounts.a]\nhost = "imap.example.org"\nusername = "u"\npassword_env = "MIM_TEST_NO_SUCH"\n'
        '[index]\nmeaning_model_dir = "models/tiny"\n'
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # where a client started the server
    config = load_config(config_file, env={})
    assert config.index.meaning_model_path() == folder / "models" / "tiny"
    assert found_reason(config) is None
    assert model_for(config).dimensions == 4


def test_a_relative_directory_that_is_missing_is_named_as_written_and_where_it_was_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config_file = tmp_path / "config.toml"
    config_file.write_text(
        '[accounts.a]\nhost = "imap.example.org"\nusername = "u"\npassword_env = "MIM_TEST_NO_SUCH"\n'
        '[index]\nmeaning_model_dir = "models/gone"\n'
    )
    monkeypatch.chdir(tmp_path.parent)
    config = load_config(config_file, env={})
    read = tmp_path / "models" / "gone"
    expected = f"{SETTING} = 'models/gone' (read as {str(read)!r}): no such directory"
    assert found_reason(config) == expected
    assert unavailable_reason(config) == expected
