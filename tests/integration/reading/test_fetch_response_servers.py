"""Each server's FETCH answers parse with our parser as with imapclient's, on the servers of the matrix.

The answers are the ones our tools ask for (a search page's summary items, imap_get_message's first
command, flags, ENVELOPE), of a mailbox holding generated corpus mail, every malformed kind the
generator makes and every hand-written hostile message of tests/data/hostile: the raw imaplib data of
each ``UID FETCH`` is parsed by both and the results compared, values and types. Unit tests of the
lexing cases and random answers: tests/pure/test_fetch_response.py.
"""

from __future__ import annotations

from pathlib import Path

from imapclient.imapclient import seq_to_parenstr_upper
from imapclient.response_parser import parse_fetch_response as imapclient_parse

from mail_imap_mcp.imap.fetch import MESSAGE_ITEMS, summary_items
from mail_imap_mcp.imap.fetch_response import _values, parse_fetch_response
from tests.support.mail import mailgen
from tests.support.servers.matrix import INBOX_ONLY, MatrixServer
from tests.support.shared.fetch_response import typed

HOSTILE = Path(__file__).parents[2] / "data" / "hostile"
ITEM_SETS = [summary_items(200), summary_items(0), MESSAGE_ITEMS, ["FLAGS", "RFC822.SIZE"], ["ENVELOPE"]]


@INBOX_ONLY
def test_every_answer_parses_as_imapclient_parses_it(imap_server: MatrixServer, user: str) -> None:
    imap_server.seed(user, "INBOX", mailgen.corpus(60), flags=lambda i: "" if i % 3 else "\\Seen $Label")
    stored = 60
    odd = [*map(mailgen.malformed_message, mailgen.MALFORMED_KINDS)]
    odd += [path.read_bytes() for path in sorted(HOSTILE.glob("*.eml"))]
    for message in odd:
        try:  # Cyrus refuses some of them ("Message contains invalid header"): those are not answers
            imap_server.seed(user, "INBOX", [message])
        except RuntimeError as refused:
            if "answered NO" not in str(refused):
                raise
        else:
            stored += 1
    assert stored >= 60 + len(odd) // 2
    with imap_server.connect(user) as client:
        client.select_folder("INBOX", readonly=True)
        uids = sorted(client.search(["ALL"]))
        assert len(uids) == stored
        compared = read_by_expression = 0
        for items in ITEM_SETS:
            for start in range(0, len(uids), 20):
                window = uids[start : start + 20]
                imap = client._imap
                tag = imap._command("UID", "FETCH", ",".join(map(str, window)), seq_to_parenstr_upper(items))
                typ, data = imap._command_complete("FETCH", tag)
                _, data = imap._untagged_response(typ, data, "FETCH")
                ours = parse_fetch_response(data, client.normalise_times, True)
                theirs = imapclient_parse(data, client.normalise_times, True)
                assert typed(dict(ours)) == typed(dict(theirs)), (items, window)
                assert sorted(ours) == window
                compared += 1
                read_by_expression += _values(data) is not None
    # The fast way reads the servers' answers; imapclient's parser is only the way out for the odd one.
    assert read_by_expression == compared
