"""MIME decoding: headers (RFC 2047/2231), addresses, dates, parameters, transfer encodings, parts and
whole messages. Pure functions over bytes; no network, no IMAP, no MCP.

Real-world mail is full of broken charsets, bad encodings, truncated data and 8-bit headers, so every
function here degrades gracefully instead of raising.

Conventions:

* Text returned is always a valid ``str`` without control characters: bodies keep only tab,
  CR and LF, header-derived text only tab. (Terminal escape sequences such as ``ESC [2J`` or
  OSC 8 hyperlinks in mail must not reach whoever displays the output.)
* 8-bit header bytes are read as UTF-8, falling back to windows-1252 (the superset
  browsers use for "latin-1"), then latin-1.
* Section numbers follow IMAP (RFC 3501 §6.4.5), see :mod:`.parts`.

The package re-exports the names its callers use; the modules say where each piece lives.
Charset labels and lenient decoding are in :mod:`mail_imap_mcp.content.charsets` (text attachments
use them too); the server's BODYSTRUCTURE is read in :mod:`mail_imap_mcp.imap.bodystructure`.
"""

from __future__ import annotations

from .addresses import Address, format_address, parse_address_list
from .dates import parse_date
from .header_text import decode_header_value
from .headers import parse_header_block
from .message import ParsedMessage, message_leaves, parse_full_message
from .parts import Part, attachment_parts, choose_body_parts, decode_text, has_attachments
from .snippets import snippet_from_prefix, text_from_prefix
from .summary import MessageSummary, snippet_of, summarise
from .transfer import StreamDecoder, decode_transfer, encoding_name

__all__ = [
    "Address",
    "MessageSummary",
    "ParsedMessage",
    "Part",
    "StreamDecoder",
    "attachment_parts",
    "choose_body_parts",
    "decode_header_value",
    "decode_text",
    "decode_transfer",
    "encoding_name",
    "format_address",
    "has_attachments",
    "message_leaves",
    "parse_address_list",
    "parse_date",
    "parse_full_message",
    "parse_header_block",
    "snippet_from_prefix",
    "snippet_of",
    "summarise",
    "text_from_prefix",
]
