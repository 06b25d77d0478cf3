"""The new text of a message: what the sender wrote, without the quoted thread and the signature.

Pure text work (no IMAP, no MIME): :func:`new_text` reads a plain-text body line by line and leaves
out

- quoted lines (``>`` at the start of a line, after optional spaces);
- attribution lines that introduce a quote, "On Tue, 18 Nov 2026, Bob <b@x> wrote:" and its
  localised forms (German "Am ... schrieb ...:", French "Le ... a écrit :", Spanish "El ... escribió:",
  Italian, Dutch, Portuguese, Swedish, Danish/Norwegian, Finnish, Polish, Czech, Hungarian, Turkish,
  Russian), also when a mail client wrapped them onto two lines;
- the history below an Outlook-style header block ("-----Original Message-----", or
  "From: / Sent: / To: / Subject:" and its localised labels), which Outlook puts under the reply;
- the signature: from a "-- " line (or "--", which many clients send without the space) to the next
  quote or the end, when it is signature-sized; "Sent from my iPhone"-style trailers.

It never drops what a reader would call new: inline answers between quotes are kept, ``>`` in the
middle of a line is prose, an attribution-like line that no quote follows stays, a "signature" of
more than :data:`MAX_SIGNATURE_LINES` lines is kept, and a message that is all quote and signature
comes back whole (with nothing reported as dropped).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

#: A block after "-- " longer than this (non-blank lines) is not a signature but text.
MAX_SIGNATURE_LINES = 12
#: How far an Outlook header block may spread (its four labels within this many lines of text).
_OUTLOOK_SPAN = 8

_QUOTE = re.compile(r"^[ \t]{0,3}>")

# "wrote:" in the languages mail clients localise their attribution line into.
_WROTE = (
    r"wrote|schrieb|a\s+écrit|escribió|ha\s+scritto|schreef|escreveu|skrev|kirjoitti|napisał|napsal|"
    r"írta|yazdı|написал(?:\(а\))?|написала|пишет"
)
# The attribution starts with a date preamble word or a date/name, and ends with the verb and a colon.
_ATTRIBUTION = re.compile(rf"^.{{0,300}}\b(?:{_WROTE})\b[^:\n]{{0,80}}:\s*$", re.IGNORECASE)
_ATTRIBUTION_START = re.compile(
    r"^(?:On|Am|Le|El|Il|Op|Em|Den|Dne|Dnia|W\s+dniu|\d{1,4}[./-]|\w{2,4}\.?,?\s+\d)", re.IGNORECASE
)

_ORIGINAL_MESSAGE = re.compile(
    r"^\s*-{2,}\s*(?:Original Message|Ursprüngliche Nachricht|Message d'origine|Mensaje original|"
    r"Messaggio originale|Oorspronkelijk bericht|Mensagem original|Ursprungligt meddelande|"
    r"Oprindelig meddelelse|Opprinnelig melding|Alkuperäinen viesti|Wiadomość oryginalna|"
    r"Původní zpráva|Исходное сообщение)\s*-{2,}\s*$",
    re.IGNORECASE,
)
_HEADER_LABELS = {
    "from": r"From|Von|De|Da|Van|Från|Fra|Lähettäjä|Od|Feladó|Kimden|От",
    "sent": r"Sent|Date|Gesendet|Datum|Envoyé|Enviado|Enviada|Fecha|Inviato|Data|Verzonden|Skickat|Sendt|"
    r"Lähetetty|Wysłano|Odesláno|Elküldve|Gönderildi|Отправлено|Дата",
    "to": r"To|An|À|A|Para|Aan|Till|Til|Vastaanottaja|Do|Komu|Címzett|Kime|Кому",
    "subject": r"Subject|Betreff|Objet|Asunto|Oggetto|Onderwerp|Assunto|Ämne|Emne|Aihe|Temat|Předmět|"
    r"Tárgy|Konu|Тема",
}
_HEADER = {
    key: re.compile(rf"^\s*\*?(?:{labels})\s*\*?\s*:", re.IGNORECASE)
    for key, labels in _HEADER_LABELS.items()
}
#: Signature delimiters: "-- " (RFC 3676), "--" (the space stripped by many clients), and the em dash
#: above GitHub's and similar notification footers.
_SIGNATURE_DELIMITERS = frozenset({"--", "—"})
_MOBILE_TRAILER = re.compile(
    r"^(?:Sent from my \w[\w ]{0,30}|Sent from (?:Mail|Outlook) for \w+|Get Outlook for \w+|"
    r"Von meinem \w[\w ]{0,30} gesendet|Envoyé de mon \w[\w ]{0,30}|Enviado desde mi \w[\w ]{0,30}|"
    r"Inviato da \w[\w ]{0,30})\.?\s*$",
    re.IGNORECASE,
)


# Whole-text tests, run before the line-by-line reading: text with none of these (most mail that is
# not a reply) has nothing to leave out, and is returned as it is at the cost of a few C-level scans.
# Each pattern comes with the marks its every match holds (one of them at least): text without them
# skips the pattern, whose scan (anchored at line starts) costs more than looking for a character.
_MAYBE: list[tuple[tuple[str, ...], re.Pattern[str]]] = [
    ((">",), re.compile(r"^[ \t]{0,3}>", re.MULTILINE)),  # a quote
    ((":",), re.compile(r":\s*$", re.MULTILINE)),  # a line ending in ':' (attribution, Outlook labels)
    # a signature delimiter, "-----Original Message-----"
    (("--", "—"), re.compile(r"^\s*(?:--|—)", re.MULTILINE)),
    (
        (":",),
        re.compile(r"^\s*\*?(?:" + _HEADER_LABELS["from"] + r")\s*\*?\s*:", re.MULTILINE | re.IGNORECASE),
    ),
    ((), re.compile(_MOBILE_TRAILER.pattern.replace("^", "^\\s*", 1), re.MULTILINE | re.IGNORECASE)),
]


def _may_leave_out(text: str) -> bool:
    """Whether a pattern of _MAYBE finds something in ``text``."""
    return any(
        (not marks or any(mark in text for mark in marks)) and pattern.search(text)
        for marks, pattern in _MAYBE
    )


@dataclass(frozen=True)
class NewText:
    """The new text of a body and what was left out to get it."""

    text: str
    dropped_quote: bool = False
    dropped_signature: bool = False

    @property
    def dropped(self) -> bool:
        return self.dropped_quote or self.dropped_signature


def _is_quote(line: str) -> bool:
    return bool(_QUOTE.match(line))


def _next_content(lines: list[str], start: int) -> int | None:
    """Index of the first non-blank line at or after ``start``."""
    for index in range(start, len(lines)):
        if lines[index].strip():
            return index
    return None


def _attribution_length(lines: list[str], index: int) -> int:
    """Lines (1 or 2) of an attribution that starts at ``index`` and that a quote follows; else 0."""
    for length in (1, 2):
        if index + length > len(lines) or not lines[index + length - 1].rstrip().endswith(":"):
            continue  # cheap test first: this runs for every line of every snippet
        chunk = " ".join(line.strip() for line in lines[index : index + length])
        if not _ATTRIBUTION.match(chunk):
            continue
        if length == 2 and not _ATTRIBUTION_START.match(lines[index].strip()):
            continue
        following = _next_content(lines, index + length)
        if following is not None and _is_quote(lines[following]):
            return length
    return 0


def _outlook_block(lines: list[str], index: int) -> bool:
    """Whether an Outlook-style history starts at ``index`` (everything below it is the old thread)."""
    line = lines[index]
    if ":" not in line and "--" not in line:
        return False  # neither a header label nor an "-----Original Message-----" line
    if _ORIGINAL_MESSAGE.match(line):
        return True
    if not _HEADER["from"].match(line):
        return False
    # The next lines of text, blank lines and quotes not counted: they are what this module's own result
    # keeps of them, so that running it on its result finds the same block (or none) again.
    following = (other for other in lines[index + 1 :] if other.strip() and not _is_quote(other))
    window = list(itertools.islice(following, _OUTLOOK_SPAN - 1))
    found = {key for key in ("sent", "to", "subject") for other in window if _HEADER[key].match(other)}
    return found == {"sent", "to", "subject"}


def _signature_end(lines: list[str], index: int) -> tuple[int, int] | None:
    """End (exclusive) and size of the signature whose delimiter is at ``index``; None if too long.

    It runs to the next quote, delimiter or the end. A bare delimiter (a quote right below it) goes too,
    so that running :func:`new_text` on its own result changes nothing.
    """
    end = index + 1
    while end < len(lines) and not (
        _is_quote(lines[end])
        or lines[end].rstrip() in _SIGNATURE_DELIMITERS  # another delimiter: its own block, judged alone
        or _attribution_length(lines, end)
        or _outlook_block(lines, end)
    ):
        end += 1
    size = sum(1 for line in lines[index + 1 : end] if line.strip())
    return (end, size) if size <= MAX_SIGNATURE_LINES else None


def new_text(text: str, *, enough: int | None = None) -> NewText:
    """The part of ``text`` the sender wrote; ``text`` itself when that would leave nothing.

    ``enough``: stop once this many characters of new text are found (a snippet needs no more), leaving
    the rest of ``text`` unread.

    What one reading drops can bring lines together that it judged apart (a quote or a signature
    between an Outlook block's labels), so the reading repeats on its own result until that is left as
    it is: the new text of the new text is itself. Each repeat reads a shorter text (it only drops), and
    mail needs one repeat, over the new text alone.
    """
    result = _read_once(text, enough)
    while result.dropped:
        again = _read_once(result.text, enough)
        if not again.dropped:
            return result
        result = NewText(
            again.text,
            result.dropped_quote or again.dropped_quote,
            result.dropped_signature or again.dropped_signature,
        )
    return result


def _read_once(text: str, enough: int | None) -> NewText:
    """One reading of ``text``, line by line (see :func:`new_text`)."""
    normalized = text.replace("\r\n", "\n").replace("\r", "\n")
    if not _may_leave_out(normalized):
        return NewText(text)
    lines = normalized.split("\n")
    kept: list[str] = []
    dropped_quote = dropped_signature = False
    found = 0
    index = 0
    while index < len(lines) and (enough is None or found < enough):
        line = lines[index]
        stripped = line.strip()
        if _is_quote(line):
            dropped_quote = True
            index += 1
            continue
        attribution = _attribution_length(lines, index) if stripped else 0
        if attribution:
            dropped_quote = True
            index += attribution
            continue
        if stripped and _outlook_block(lines, index):
            dropped_quote = True
            _drop_separator(kept)
            index = len(lines)  # the rest is the old thread
            break
        if line.rstrip() in _SIGNATURE_DELIMITERS:
            signature = _signature_end(lines, index)
            if signature is not None:
                index, size = signature
                dropped_signature |= size > 0
                continue
        kept.append(line)
        found += len(stripped)
        index += 1
    if (
        _next_content(lines, index) is None
    ):  # read to the end (not stopped at enough): a trailer there is a signature
        dropped_signature |= _drop_mobile_trailer(kept)
    result = _tidy(kept)
    if not result.strip():
        return NewText(text)
    if not (dropped_quote or dropped_signature):
        return NewText(text)
    return NewText(result, dropped_quote, dropped_signature)


def _drop_separator(kept: list[str]) -> None:
    """Outlook web puts a line of underscores above its header block; it belongs to the history."""
    while kept and not kept[-1].strip():
        kept.pop()
    if kept and re.fullmatch(r"\s*_{8,}\s*", kept[-1]):
        kept.pop()


def _drop_mobile_trailer(kept: list[str]) -> bool:
    """Drop "Sent from my iPhone" lines at the end (when text remains above them)."""
    dropped = False
    while (last := _next_content_reversed(kept)) is not None and _MOBILE_TRAILER.match(kept[last].strip()):
        if not any(line.strip() for line in kept[:last]):
            break
        del kept[last:]
        dropped = True
    return dropped


def _next_content_reversed(lines: list[str]) -> int | None:
    for index in range(len(lines) - 1, -1, -1):
        if lines[index].strip():
            return index
    return None


def _tidy(lines: list[str]) -> str:
    """Join kept lines: no leading or trailing blank lines, at most one blank line in a row."""
    out: list[str] = []
    for line in lines:
        if not line.strip():
            if out and out[-1] != "":
                out.append("")
            continue
        out.append(line.rstrip())
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out)
