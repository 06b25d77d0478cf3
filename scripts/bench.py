"""Benchmark ``mail-imap-mcp serve`` against the raw-IMAP floor and a peer server, in one run.

Run it through ``scripts/bench`` (which installs Dovecot and the virtualenv first); see
``docs/benchmarks.md`` for what the numbers mean and how the latest run came out.

What one run does:

1. Starts a throwaway Dovecot (``tests/support/servers/dovecot.py``) and, per mailbox size (10,000 and
   100,000 by default), seeds a fresh user's INBOX with realistic messages from
   ``tests/support/mail/mailgen.py`` (mixed senders, non-ASCII headers, HTML, attachments; every third
   message unread) plus four known messages in the middle: a small plain one, a non-ASCII one, an
   HTML-only one and one with a 25 MB attachment.
2. Spawns ``mail-imap-mcp serve`` over stdio through the MCP SDK's ``Client`` (stderr to a file).
   For each operation, after a warm-up, it alternates one *floor* call (the same IMAP commands issued
   with raw imapclient on one warm, already-selected connection, mirroring ``imap/search/`` and
   ``imap/fetch.py``) with one call of our server, and records median and p95. The time the SDK
   client itself spends on an answer (JSON-RPC parsing, outputSchema validation) is measured too.
3. Repeats every operation on a second server process with ``MAIL_IMAP_MCP_LOG_LEVEL=DEBUG``: the
   ``imap_commands=N`` line it logs to stderr after every call gives that call's IMAP round trips.
   (Timings come from the first process, at the default log level.)
4. Measures the server's startup (spawn until ``tools/list`` is answered) and its peak RSS from
   ``/proc/<pid>/status`` (``VmHWM``, reset through ``/proc/<pid>/clear_refs`` around the 25 MB
   message so the growth of that call is visible).
5. Installs ``mcp-email-server`` into ``.bench/peer-venv`` (never into ``.venv``) and times the
   operations it has (newest-20 page, subject search) against the same Dovecot over verified TLS.
6. Prints a table with ratios and writes ``benchmarks.json``, ``benchmarks.png`` and the generated
   section of ``benchmarks.md`` into the output directory (``docs/`` for a full run).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.support: the Dovecot harness

from benchmark.cli import main

if __name__ == "__main__":
    sys.exit(main())
