"""The SQLite index's words, for an engine that keeps its own terms (PostgreSQL): every engine finds the
same words in a message, as FTS5's own tokenizer (``unicode61 remove_diacritics 2``, :mod:`.schema`)
splits them: accents and case folded, addresses, URLs and hyphenated words split where SQLite splits them.

That tokenizer judges each character alone: it is part of a word (folded to one character, or to none)
or it separates words. :class:`Tokenizer` asks SQLite itself about each character the first time it
meets it (a word ``x?x`` in a table in memory, read back through ``fts5vocab``), keeps the answer, and
splits texts in Python with ``str.translate``: the same words as SQLite's, at Python's speed.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterable

#: The tokenizer of the SQLite index's FTS5 table (the one definition both engines use).
TOKENIZER = "unicode61 remove_diacritics 2"
_SEPARATOR = " "
#: A word of ASCII text, lower-cased first (what :class:`Tokenizer` checks SQLite does with ASCII).
_ASCII_WORD = re.compile(r"[a-z0-9]+")
#: Whitespace-separated pieces of text whose words are kept, at most (then forgotten all at once): 10,000
#: hold the words mail repeats; 100,000 held 20 MB more of a build's peak RSS (the index benchmark's corpus),
#: at no faster a build.
_PIECES_KEPT = 10_000


class Tokenizer:
    """Splits texts into the SQLite index's words; safe across threads."""

    def __init__(self) -> None:
        self._db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        self._db.execute(f"CREATE VIRTUAL TABLE t USING fts5(c, tokenize='{TOKENIZER}')")
        self._db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        self._lock = threading.Lock()
        #: Each character met so far: what it becomes in a word ("" dropped), or a space (a separator).
        self._table: dict[int, str] = {}
        self._learn(chr(code) for code in range(128))
        ascii_words = {code: c.lower() for code in range(128) if (c := chr(code)).isascii() and c.isalnum()}
        #: SQLite keeps ASCII letters and digits, lower-cased, and nothing else: ASCII text is split by
        #: :data:`_ASCII_WORD` (checked here, else every text is translated).
        self._ascii_fast = all(self._table[code] == ascii_words.get(code, _SEPARATOR) for code in range(128))
        self._pieces: dict[str, list[str]] = {}

    def _learn(self, characters: Iterable[str]) -> None:
        """Ask SQLite what each of ``characters`` is (whitespace separates words in every tokenizer)."""
        given = list(characters)
        asked = [c for c in given if ord(c) not in self._table and not c.isspace()]
        with self._lock:
            for c in given:
                if c.isspace():
                    self._table[ord(c)] = _SEPARATOR
            if not asked:
                return
            self._db.execute("BEGIN")
            try:
                self._db.executemany(
                    "INSERT INTO t(rowid, c) VALUES(?, ?)", [(row, f"x{c}x") for row, c in enumerate(asked)]
                )
                words: dict[int, list[str]] = {}
                for row, term in self._db.execute("SELECT doc, term FROM v ORDER BY doc, offset"):
                    words.setdefault(row, []).append(term)
            finally:
                self._db.execute("ROLLBACK")
        for row, c in enumerate(asked):
            found = words.get(row, [])
            if len(found) == 1 and found[0].startswith("x") and found[0].endswith("x"):
                self._table[ord(c)] = found[0][1:-1]  # a character of words, as folded (or dropped)
            else:
                self._table[ord(c)] = _SEPARATOR

    def words(self, text: str) -> list[str]:
        """The words of ``text``, in their order."""
        if text.isascii() and self._ascii_fast:
            return _ASCII_WORD.findall(text.lower())
        unknown = {c for c in set(text) if ord(c) not in self._table}
        if unknown:
            self._learn(unknown)
        if len(self._pieces) > _PIECES_KEPT:
            self._pieces = {}
        pieces, found = self._pieces, []
        for piece in text.split():  # mail repeats its words: each piece is translated once
            words = pieces.get(piece)
            if words is None:
                words = pieces[piece] = piece.translate(self._table).split()
            found.extend(words)
        return found

    def close(self) -> None:
        self._db.close()
