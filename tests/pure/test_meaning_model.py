"""The text model of search by meaning (issue 80): ``[index] meaning_model_dir`` names a local model in
Model2Vec or WordLlama layout, read with safetensors and tokenizers alone (this tier refuses every socket,
so each read here also proves no fetch), or the model shipped in the wordllama package, read the same way;
a directory without a usable model is an error naming the setting, never a crash."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from safetensors.numpy import save_file

from mail_imap_mcp.config import Config
from mail_imap_mcp.meaning import model as meaning_model
from mail_imap_mcp.meaning import model_check
from mail_imap_mcp.meaning.model import (
    ENGLISH,
    MULTILINGUAL,
    SHIPPED_DIMENSIONS,
    SHIPPED_MODEL,
    MeaningUnavailable,
    found_reason,
    model_for,
    shipped_model,
    unavailable_reason,
)
from mail_imap_mcp.meaning.multilingual import MULTILINGUAL_MODEL
from mail_imap_mcp.meaning.static_model import BATCH_TEXTS, StaticModel
from tests.support.meaning_models import WORDS, expected, model2vec_dir, wordllama_dir

SETTING = "[index] meaning_model_dir"


def config_with(directory: Path | None) -> Config:
    """The index on with the English model (``meaning_model``'s default or not), or the one in ``directory``."""
    index = {"meaning_model": "english"} if directory is None else {"meaning_model_dir": str(directory)}
    return Config.model_validate({"server": {"index": True}, "index": index})


@pytest.fixture(autouse=True)
def fresh_models() -> None:
    """Each test reads its models anew (the process keeps each model it read, and each check)."""
    meaning_model._loaded.clear()
    model_check._checked.clear()


@pytest.mark.parametrize("layout", [model2vec_dir, wordllama_dir])
def test_a_model_directory_embeds_each_text_as_the_unit_mean_of_its_known_words(
    layout: Callable[[Path], Path], tmp_path: Path
) -> None:
    model = model_for(config_with(layout(tmp_path / "model")))
    assert model.dimensions == 4
    vectors = model.embed(["The HEATING, the radiator!", "an invoice", "heating heating bill", "", "zzz qqq"])
    assert vectors.dtype == np.float32 and vectors.shape == (5, 4)
    np.testing.assert_allclose(vectors[0], expected(["heating", "radiator"]), rtol=1e-6)
    np.testing.assert_allclose(vectors[1], expected(["invoice"]), rtol=1e-6)
    np.testing.assert_allclose(vectors[2], expected(["heating", "heating", "bill"]), rtol=1e-6)
    # No word at all, or none it knows (the unknown token is not a word's meaning): a row of zeros.
    assert not vectors[3].any() and not vectors[4].any()
    assert model.embed([]).shape == (0, 4)


def test_a_text_s_vector_is_the_same_alone_and_among_many(tmp_path: Path) -> None:
    # Batches are pooled apart; a text's vector depends on its own words only.
    model = model_for(config_with(model2vec_dir(tmp_path / "model")))
    texts = [f"heating {'bill ' * (n % 3)}" for n in range(BATCH_TEXTS * 2 + 5)]
    together = model.embed(texts)
    for n in (0, 1, 2, BATCH_TEXTS, len(texts) - 1):
        np.testing.assert_allclose(together[n], model.embed([texts[n]])[0], rtol=1e-6)


def test_model2vec_s_token_weights_and_vocabulary_mapping_make_each_token_s_row(tmp_path: Path) -> None:
    # A quantised vocabulary: tokens share rows through `mapping`, each scaled by its weight.
    rows = np.array([[0, 0, 0, 9], [1, 0, 0, 0], [0, 1, 0, 0]], dtype=np.float32)
    mapping = np.array([0, 1, 1, 2, 2, 2, 2], dtype=np.int64)
    weights = np.array([1, 1, 3, 1, 1, 1, 1], dtype=np.float32)
    directory = model2vec_dir(tmp_path / "model")
    save_file(
        {"embeddings": rows, "mapping": mapping, "weights": weights}, str(directory / "model.safetensors")
    )
    model = model_for(config_with(directory))
    # heating: row 1 x 1; radiator: row 1 x 3; invoice: row 2.
    (vector,) = model.embed(["heating radiator invoice"])
    mean = np.array([4, 1, 0, 0], dtype=np.float32)
    np.testing.assert_allclose(vector, mean / np.linalg.norm(mean), rtol=1e-6)


def test_the_name_recorded_with_vectors_changes_with_the_model_in_the_directory(tmp_path: Path) -> None:
    directory = model2vec_dir(tmp_path / "potion")
    first = model_for(config_with(directory)).name
    assert first.startswith("potion-") and first != SHIPPED_MODEL
    meaning_model._loaded.clear()
    assert model_for(config_with(directory)).name == first  # the same files: the same name
    model2vec_dir(directory, {**WORDS, "heating": (0.0, 0.0, 0.0, 1.0)})
    meaning_model._loaded.clear()
    assert model_for(config_with(directory)).name != first


def test_the_model_is_read_once_per_process(tmp_path: Path) -> None:
    config = config_with(model2vec_dir(tmp_path / "model"))
    assert model_for(config) is model_for(config)
    shutil.rmtree(tmp_path / "model")
    assert unavailable_reason(config) is None  # read already: the files are not read again


def table_without_rows(directory: Path) -> None:
    save_file({"embeddings": np.zeros((2, 4), dtype=np.float32)}, str(directory / "model.safetensors"))


def several_weights(directory: Path) -> None:
    (directory / "model.safetensors").unlink()
    for name in ("a.safetensors", "b.safetensors"):
        save_file({"embeddings": np.zeros((7, 4), dtype=np.float32)}, str(directory / name))


#: What is wrong with a directory, how it is made so, and what the error says of it.
UNUSABLE = {
    "missing": (lambda d: shutil.rmtree(d), "no such directory"),
    "no weights": (lambda d: (d / "model.safetensors").unlink(), "no safetensors file"),
    "no tokenizer": (lambda d: (d / "tokenizer.json").unlink(), "no tokenizer"),
    "several weights": (
        several_weights,
        "several safetensors files (a.safetensors, b.safetensors): keep one",
    ),
    "not a tokenizer": (lambda d: (d / "tokenizer.json").write_text("{}"), "tokenizer.json is no tokenizer"),
    "not safetensors": (
        lambda d: (d / "model.safetensors").write_bytes(b"\x00" * 64),
        "model.safetensors cannot be read",
    ),
    "no table": (
        lambda d: save_file({"other": np.zeros((7, 4), dtype=np.float32)}, str(d / "model.safetensors")),
        "holds no table of token vectors (embeddings or embedding.weight)",
    ),
    "a vector, no table": (
        lambda d: save_file({"embeddings": np.zeros(7, dtype=np.float32)}, str(d / "model.safetensors")),
        "is (7,), not tokens x dimensions",
    ),
    "fewer rows than tokens": (table_without_rows, "its tokenizer numbers 7 tokens, its table has 2 rows"),
}


@pytest.mark.parametrize("case", UNUSABLE)
def test_an_unusable_model_directory_is_unavailable_naming_the_setting(case: str, tmp_path: Path) -> None:
    spoil, said = UNUSABLE[case]
    directory = model2vec_dir(tmp_path / "model")
    spoil(directory)
    config = config_with(directory)
    with pytest.raises(MeaningUnavailable) as raised:
        model_for(config)
    assert str(raised.value).startswith(f"{SETTING} = {str(directory)!r}: "), raised.value
    assert said in str(raised.value)
    assert unavailable_reason(config) == str(raised.value)
    # The failure is kept: the directory is not read again on every call, even once repaired.
    model2vec_dir(directory)
    assert unavailable_reason(config) == str(raised.value)


@pytest.mark.parametrize("case", UNUSABLE)
def test_regression_listing_refuses_each_unusable_model_directory_without_reading_its_table(
    case: str, tmp_path: Path
) -> None:
    """What listing the tools asks (``about`` and ``like`` listed or not) refuses each directory a call
    would, saying what is wrong, and reads no model: it used to list them wherever the files were
    there, whatever was in them."""
    spoil, said = UNUSABLE[case]
    directory = model2vec_dir(tmp_path / "model")
    spoil(directory)
    why = found_reason(config_with(directory))
    assert why is not None and why.startswith(f"{SETTING} = {str(directory)!r}: "), why
    assert said in why, why
    assert meaning_model._loaded == {}


def test_the_listing_s_check_is_made_again_where_a_file_of_the_model_changed(tmp_path: Path) -> None:
    directory = model2vec_dir(tmp_path / "model")
    config = config_with(directory)
    assert found_reason(config) is None
    tokenizer = directory / "tokenizer.json"
    tokenizer.write_text("{}")
    os.utime(tokenizer, ns=(1, 1))  # another time than the file checked had, however coarse the clock
    assert "tokenizer.json is no tokenizer" in (found_reason(config) or "")
    model2vec_dir(directory)
    assert found_reason(config) is None
    assert meaning_model._loaded == {}


def test_a_home_relative_directory_is_read_from_the_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    model2vec_dir(tmp_path / "models" / "tiny")
    assert model_for(config_with(Path("~/models/tiny"))).dimensions == 4


def test_without_a_directory_or_a_model_named_the_model_is_the_multilingual_one() -> None:
    model = model_for(Config.model_validate({"server": {"index": True}}))
    assert model is shipped_model(MULTILINGUAL)
    assert (model.name, model.dimensions) == (MULTILINGUAL_MODEL, 512)


def test_the_english_model_is_the_shipped_one_read_from_the_wordllama_package() -> None:
    model = model_for(config_with(None))
    assert model is shipped_model(ENGLISH)
    assert (model.name, model.dimensions) == (SHIPPED_MODEL, SHIPPED_DIMENSIONS)
    vectors = model.embed(["the heating in the flat is broken", "invoice for the website redesign", ""])
    assert vectors.shape == (3, SHIPPED_DIMENSIONS)
    np.testing.assert_allclose(np.linalg.norm(vectors[:2], axis=1), 1.0, rtol=1e-5)
    assert not vectors[2].any()


def test_the_shipped_model_embeds_as_wordllama_itself_does() -> None:
    # The same weights and tokenizer, pooled as WordLlama pools them (its loader is given the package
    # folder and refuses to download, as the issue says to load it).
    import wordllama
    from wordllama import WordLlama

    package = Path(wordllama.__file__).parent
    theirs = WordLlama.load(config="l2_supercat", dim=256, cache_dir=package, disable_download=True)
    texts = [
        "Invoice 4411 - homepage overhaul",
        "Amount due for the new landing pages",
        "Our landlord says the radiators will be bled on Tuesday. Ünïcödé and emoji 🎉 too.",
        "x " * 700,
    ]
    np.testing.assert_allclose(shipped_model(ENGLISH).embed(texts), theirs.embed(texts, norm=True), atol=2e-6)


@settings(max_examples=300)
@given(st.text(alphabet=st.sampled_from(" \u2581\n\taZé.,漢🎉-"), max_size=40) | st.text(max_size=40))
def test_the_shipped_model_tokenizes_a_text_word_by_word_as_its_tokenizer_does_the_whole(text: str) -> None:
    model = shipped_model(ENGLISH)
    assert isinstance(model, StaticModel)
    whole = [encoding.ids for encoding in model._tokenizer.encode_batch([text], add_special_tokens=False)]
    assert model._token_ids([text]) == whole


def test_the_shipped_model_tokenizes_each_word_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Its tokenizer reads a whole text as one word and keeps nothing of it: the model keeps the words.
    model = shipped_model(ENGLISH)
    assert isinstance(model, StaticModel)
    asked: list[str] = []
    words = model._words
    assert words is not None
    tokenize = words._model.tokenize
    monkeypatch.setattr(
        words, "_model", SimpleNamespace(tokenize=lambda word: asked.append(word) or tokenize(word))
    )
    first = model.embed(["the radiator in the flat", "the flat's radiator again"])
    assert sorted(asked) == sorted(
        f"\u2581{word}" for word in {"the", "radiator", "in", "flat", "flat's", "again"}
    )
    asked.clear()
    np.testing.assert_array_equal(model.embed(["the radiator in the flat"])[0], first[0])
    assert asked == []
