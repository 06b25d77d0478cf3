"""The multilingual model's token table kept unpacked in the cache directory (issue 90: its memory):
made on the first read, used by the next, refused and made again when cut short or damaged, and held in
memory where the directory cannot be made; the rows read from it are the package's."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from mail_imap_mcp.meaning import multilingual, token_table
from mail_imap_mcp.meaning.multilingual import _CHUNK_ROWS, _CHUNKS, _EMBEDDING, _TABLE, MULTILINGUAL_MODEL
from mail_imap_mcp.meaning.token_table import FileRows, MemoryRows

#: Tokens asked for: the first, the last, repeated ones, and some of every chunk.
TOKENS = np.array([0, 1, 2, 17, 18, 1, _CHUNKS * _CHUNK_ROWS - 1, 40_000, 40_000, 128_001, 5], dtype=np.int64)


def expected_rows() -> np.ndarray:
    weights, _, _ = multilingual.package_files()
    rows = np.empty((len(TOKENS), _EMBEDDING), dtype=np.uint8)
    with np.load(weights, allow_pickle=False) as archive:
        for at, token in enumerate(TOKENS.tolist()):
            rows[at] = archive[_TABLE[token % _CHUNKS]][token // _CHUNKS]
    return rows


@pytest.fixture(scope="module")
def expected() -> np.ndarray:
    return expected_rows()


def read_table(cache: Path, monkeypatch: pytest.MonkeyPatch) -> MemoryRows | FileRows:
    monkeypatch.setattr(token_table, "cache_dir", lambda: cache)
    weights, _, unusable = multilingual.package_files()
    return token_table.token_table(weights, _TABLE, (_CHUNK_ROWS, _EMBEDDING), MULTILINGUAL_MODEL, unusable)


def cached(cache: Path) -> Path:
    (path,) = cache.glob(f"{MULTILINGUAL_MODEL}-table-*.u8")
    return path


def test_the_first_read_unpacks_the_table_into_the_cache_and_the_next_reads_it_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, expected: np.ndarray
) -> None:
    first = read_table(tmp_path / "models", monkeypatch)
    assert isinstance(first, FileRows)
    assert np.array_equal(first(TOKENS), expected)
    path = cached(tmp_path / "models")
    assert path.stat().st_size == _CHUNKS * _CHUNK_ROWS * _EMBEDDING
    made = path.stat().st_mtime_ns

    def unpacked(*_: object) -> None:
        raise AssertionError("the table was unpacked again")

    monkeypatch.setattr(token_table, "_unpacked", unpacked)
    again = read_table(tmp_path / "models", monkeypatch)
    assert isinstance(again, FileRows)
    assert np.array_equal(again(TOKENS), expected)
    assert path.stat().st_mtime_ns == made
    assert [p.name for p in (tmp_path / "models").iterdir()] == [path.name]  # no file left beside it


@pytest.mark.parametrize("spoil", ["a byte changed", "cut short", "a byte more"])
def test_a_damaged_cache_file_is_refused_and_made_again(
    spoil: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    expected: np.ndarray,
    caplog: pytest.LogCaptureFixture,
) -> None:
    read_table(tmp_path, monkeypatch)
    path = cached(tmp_path)
    data = bytearray(path.read_bytes())
    if spoil == "a byte changed":
        data[40_000 // _CHUNKS * _EMBEDDING + 7] ^= 1  # in a row the test reads
    elif spoil == "cut short":
        del data[-1]
    else:
        data.append(0)
    path.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING, logger=token_table.__name__):
        rows = read_table(tmp_path, monkeypatch)
    assert "is not used" in caplog.text and "made again" in caplog.text
    assert isinstance(rows, FileRows)
    assert np.array_equal(rows(TOKENS), expected)
    assert path.stat().st_size == _CHUNKS * _CHUNK_ROWS * _EMBEDDING
    assert read_table(tmp_path, monkeypatch) is not None and len(caplog.records) == 1


def test_where_the_cache_cannot_be_made_the_table_is_held_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, expected: np.ndarray, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "not-a-directory").write_text("")
    with caplog.at_level(logging.WARNING, logger=token_table.__name__):
        rows = read_table(tmp_path / "not-a-directory" / "models", monkeypatch)
    assert isinstance(rows, MemoryRows)
    assert "cannot be kept" in caplog.text and "held in memory" in caplog.text
    assert np.array_equal(rows(TOKENS), expected)


def test_past_the_kept_rows_the_others_are_read_from_the_file_each_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, expected: np.ndarray
) -> None:
    monkeypatch.setattr(token_table, "KEPT_ROWS", 3)
    rows = read_table(tmp_path, monkeypatch)
    assert isinstance(rows, FileRows)
    assert np.array_equal(rows(TOKENS), expected)
    assert np.array_equal(rows(TOKENS[::-1]), expected[::-1])
    assert np.array_equal(rows(TOKENS[:3]), expected[:3])


def test_the_model_reads_its_rows_from_the_cache_and_embeds_as_from_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(token_table, "cache_dir", lambda: tmp_path)
    from_file = multilingual.load_files(*multilingual.package_files(), threads=1)
    assert isinstance(from_file._table, FileRows)
    monkeypatch.setattr(token_table, "_opened", lambda *_: None)
    monkeypatch.setattr(token_table, "_write", lambda *_: (_ for _ in ()).throw(OSError("read-only")))
    in_memory = multilingual.load_files(*multilingual.package_files(), threads=1)
    assert isinstance(in_memory._table, MemoryRows)
    texts = ["was hat der Vermieter über die Heizung geschrieben", "the invoice for the website", "ok"]
    assert np.array_equal(from_file.embed(texts), in_memory.embed(texts))


def test_kept_values_are_a_mapping_of_their_own_that_keeps_what_it_is_given() -> None:
    """The kept values are an anonymous mapping of their own (given back to the system when let go, where
    glibc's heap kept an array from malloc), filled from the first row on; none kept where none may be."""
    import mmap

    kept = token_table.Kept(10, 3, 4, np.float16)
    base: object = kept.values
    while isinstance(base, np.ndarray):
        base = base.base
    assert isinstance(base, memoryview)
    assert isinstance(base.obj, mmap.mmap)
    tokens = np.array([7, 2, 5, 9], dtype=np.int64)
    made = np.arange(16, dtype=np.float16).reshape(4, 4)
    kept.count = token_table.keep_first(kept.slot, kept.values, kept.count, tokens, made)
    assert kept.count == 3
    assert kept.slot[[7, 2, 5, 9]].tolist() == [0, 1, 2, -1]
    assert np.array_equal(kept.values, made[:3])
    empty = token_table.Kept(10, 0, 4, np.uint8)
    assert token_table.keep_first(empty.slot, empty.values, 0, tokens, made.astype(np.uint8)) == 0
    assert empty.values.shape == (0, 4)
