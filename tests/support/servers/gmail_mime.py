"""The MIME side of the Gmail emulation (tests/support/servers/gmail_server.py): a message's entities found in
its bytes, so that ``BODY[section]``, ``BODYSTRUCTURE`` and ``ENVELOPE`` answer exactly what RFC 3501
section 6.4.5 and 7.4.2 say, byte for byte from the stored source (no re-serialisation)."""

from __future__ import annotations

import email
import email.policy
import email.utils
import re
from dataclasses import dataclass, field
from email.message import Message

#: A header block ends at the first empty line.
_HEADER_END = re.compile(rb"\r?\n\r?\n")


def nstring(value: str | bytes | None) -> bytes:
    """An IMAP nstring: NIL, a quoted string, or a literal where quoting cannot carry the bytes."""
    if value is None:
        return b"NIL"
    data = value.encode("utf-8") if isinstance(value, str) else value
    if any(byte > 126 or byte in (0, 10, 13) for byte in data):
        return b"{%d}\r\n" % len(data) + data
    return b'"' + data.replace(b"\\", b"\\\\").replace(b'"', b'\\"') + b'"'


def plist(values: list[bytes]) -> bytes:
    """A parenthesised list, or NIL when empty."""
    return b"(" + b" ".join(values) + b")" if values else b"NIL"


@dataclass
class Entity:
    """One MIME entity of a message: its header block (with the empty line that ends it) and body."""

    header: bytes
    body: bytes
    fields: Message
    children: list[Entity] = field(default_factory=list)
    embedded: Entity | None = None  # the message of a message/rfc822 part

    @property
    def maintype(self) -> str:
        return self.fields.get_content_maintype()

    @property
    def subtype(self) -> str:
        return self.fields.get_content_subtype()

    def params(self) -> list[tuple[str, str]]:
        return written_params(self.fields.get("content-type"))

    def section(self, path: list[int]) -> Entity | None:
        """The entity a section number names (RFC 3501 6.4.5): part 1 of a single-part body is itself."""
        entity: Entity | None = self
        for number in path:
            if entity is None:
                return None
            if entity.embedded is not None:  # a message/rfc822 part: its parts are the message's
                entity = entity.embedded
            if entity.children:
                entity = entity.children[number - 1] if 0 < number <= len(entity.children) else None
            elif number != 1:
                return None
        return entity


def parse(raw: bytes, *, default: str = "text/plain") -> Entity:
    """The entity tree of ``raw``."""
    found = _HEADER_END.search(raw)
    header, body = (raw[: found.end()], raw[found.end() :]) if found else (raw, b"")
    fields = email.message_from_bytes(header, policy=email.policy.compat32)
    if "content-type" not in fields:
        fields.set_default_type(default)
    entity = Entity(header, body, fields)
    if entity.maintype == "multipart":
        boundary = fields.get_param("boundary")
        if isinstance(boundary, str) and boundary:
            child_default = "message/rfc822" if entity.subtype == "digest" else "text/plain"
            entity.children = [parse(part, default=child_default) for part in _split(body, boundary)]
    elif (entity.maintype, entity.subtype) == ("message", "rfc822"):
        entity.embedded = parse(body)
    return entity


def _split(body: bytes, boundary: str) -> list[bytes]:
    """The parts of a multipart body between its delimiter lines (the CRLF before a delimiter belongs
    to the delimiter, RFC 2046 5.1.1)."""
    delimiter = re.compile(
        rb"(?:\A|\r?\n)--" + re.escape(boundary.encode("latin-1")) + rb"(--)?[ \t]*(?:\r?\n|\Z)"
    )
    parts: list[bytes] = []
    start: int | None = None
    for match in delimiter.finditer(body):
        if start is not None:
            parts.append(body[start : match.start()])
        if match.group(1):
            return parts
        start = match.end()
    if start is not None:
        parts.append(body[start:])
    return parts


#: One ``; name=value`` of a header (a value quoted, with its escapes, or a token).
_PARAM = re.compile(r';\s*([^\s=;]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^;\s]*)')


def written_params(value: object) -> list[tuple[str, str]]:
    """The parameters of a header value as the message writes them (an RFC 2231 ``filename*`` keeps its
    name and its ``charset''%xx`` value), as BODYSTRUCTURE gives them (RFC 3501 7.4.2: "as defined in
    [MIME-IMB]"); compat32's own reading turns such a value into a tuple."""
    if value is None:
        return []
    unfolded = re.sub(r"\r?\n[ \t]", " ", str(value))
    found = []
    for name, raw in _PARAM.findall(unfolded):
        if raw.startswith('"'):
            raw = re.sub(r"\\(.)", r"\1", raw[1:-1])
        found.append((name, raw))
    return found


def _header_value(fields: Message, name: str) -> str | None:
    value = fields.get(name)
    return None if value is None else str(value)


def _addresses(fields: Message, name: str) -> bytes:
    values = fields.get_all(name)
    if not values:
        return b"NIL"
    out = []
    for display, address in email.utils.getaddresses([str(v) for v in values]):
        mailbox, _, host = address.partition("@")
        out.append(
            b"("
            + b" ".join([nstring(display or None), b"NIL", nstring(mailbox or None), nstring(host or None)])
            + b")"
        )
    return plist(out)


def envelope(entity: Entity) -> bytes:
    """The ENVELOPE of a message entity (RFC 3501 7.4.2)."""
    fields = entity.fields
    sender = "sender" if fields.get("sender") else "from"
    reply_to = "reply-to" if fields.get("reply-to") else "from"
    items = [
        nstring(_header_value(fields, "date")),
        nstring(_header_value(fields, "subject")),
        _addresses(fields, "from"),
        _addresses(fields, sender),
        _addresses(fields, reply_to),
        _addresses(fields, "to"),
        _addresses(fields, "cc"),
        _addresses(fields, "bcc"),
        nstring(_header_value(fields, "in-reply-to")),
        nstring(_header_value(fields, "message-id")),
    ]
    return b"(" + b" ".join(items) + b")"


def _param_list(pairs: list[tuple[str, str]]) -> bytes:
    return plist([nstring(k.upper()) + b" " + nstring(v) for k, v in pairs])


def _disposition(entity: Entity) -> bytes:
    value = entity.fields.get("content-disposition")
    if value is None:
        return b"NIL"
    kind = str(value).split(";", 1)[0].strip()
    return b"(" + nstring(kind.upper()) + b" " + _param_list(written_params(value)) + b")"


def _lines(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def bodystructure(entity: Entity, *, extended: bool = True) -> bytes:
    """BODYSTRUCTURE (``extended``) or BODY of an entity (RFC 3501 7.4.2)."""
    if entity.maintype == "multipart":
        inner = b"".join(bodystructure(child, extended=extended) for child in entity.children)
        if not inner:  # a multipart without parts: one empty text part, as servers answer
            inner = b'("TEXT" "PLAIN" NIL NIL NIL "7BIT" 0 0)'
        out = inner + b" " + nstring(entity.subtype.upper())
        if extended:
            out += b" " + _param_list(entity.params()) + b" " + _disposition(entity) + b" NIL NIL"
        return b"(" + out + b")"
    fields = entity.fields
    encoding = (_header_value(fields, "content-transfer-encoding") or "7BIT").strip().upper()
    items = [
        nstring(entity.maintype.upper()),
        nstring(entity.subtype.upper()),
        _param_list(entity.params()),
        nstring(_header_value(fields, "content-id")),
        nstring(_header_value(fields, "content-description")),
        nstring(encoding),
        b"%d" % len(entity.body),
    ]
    if entity.embedded is not None:
        items += [envelope(entity.embedded), bodystructure(entity.embedded, extended=extended)]
        items.append(b"%d" % _lines(entity.body))
    elif entity.maintype == "text":
        items.append(b"%d" % _lines(entity.body))
    if extended:
        items += [nstring(_header_value(fields, "content-md5")), _disposition(entity), b"NIL", b"NIL"]
    return b"(" + b" ".join(items) + b")"


def header_fields(header: bytes, names: list[str], *, exclude: bool) -> bytes:
    """The fields of a header block named (or, ``exclude``, not named) in ``names``, and the empty line."""
    wanted = {name.lower() for name in names}
    out: list[bytes] = []
    keep = False
    for line in re.split(rb"(?<=\n)", header):
        if not line.strip():
            break
        if line[:1] in (b" ", b"\t"):
            if keep:
                out.append(line)
            continue
        name = line.split(b":", 1)[0].strip().decode("latin-1").lower()
        keep = (name in wanted) != exclude
        if keep:
            out.append(line)
    return b"".join(out) + b"\r\n"


def section_bytes(root: Entity, raw: bytes, spec: str) -> bytes | None:
    """The bytes ``BODY[spec]`` names in a message (None: no such part)."""
    spec = spec.strip()
    if not spec:
        return raw
    path: list[int] = []
    rest = spec
    while rest and rest[0].isdigit():
        number, _, rest = rest.partition(".")
        path.append(int(number))
    entity = root.section(path) if path else root
    if entity is None:
        return None
    text = rest.upper()
    if not text:
        return entity.body if path else raw
    if text == "MIME":
        return entity.header if path else None
    if path:  # HEADER and TEXT of a part are those of its message/rfc822 message
        if entity.embedded is None:
            return None
        entity = entity.embedded
    if text == "HEADER":
        return entity.header
    if text == "TEXT":
        return entity.body
    match = re.fullmatch(r"HEADER\.FIELDS(\.NOT)?\s*\((.*)\)", text, re.S)
    if match:
        return header_fields(entity.header, match.group(2).split(), exclude=bool(match.group(1)))
    return None


def text_of(entity: Entity) -> str:
    """The decoded text of the text parts of an entity (for searching)."""
    if entity.children:
        return "\n".join(text_of(child) for child in entity.children)
    if entity.embedded is not None:
        return text_of(entity.embedded)
    if entity.maintype != "text":
        return ""
    message = email.message_from_bytes(entity.header + entity.body, policy=email.policy.compat32)
    payload = message.get_payload(decode=True)
    if not isinstance(payload, bytes):
        return ""
    charset = message.get_content_charset() or "utf-8"
    try:
        return payload.decode(charset, "replace")
    except LookupError:
        return payload.decode("utf-8", "replace")


def has_attachment(entity: Entity) -> bool:
    """Whether some part is an attachment (a disposition of attachment, or a named non-text part)."""
    if entity.children:
        return any(has_attachment(child) for child in entity.children)
    disposition = str(entity.fields.get("content-disposition", "")).split(";", 1)[0].strip().lower()
    if disposition == "attachment":
        return True
    named = entity.fields.get_filename() or entity.fields.get_param("name")
    return bool(named) and entity.maintype not in ("text", "multipart")


def filenames(entity: Entity) -> list[str]:
    if entity.children:
        return [name for child in entity.children for name in filenames(child)]
    name = entity.fields.get_filename()
    return [name] if name else []
