"""What tests/integration/team/test_team_shared_index.py shares with other test modules."""

from __future__ import annotations

import re
from collections import Counter

from tests.support.servers.dovecot import Dovecot

#: Every session's FETCH counts, logged by Dovecot when it ends (whatever ended it).
FETCH_COUNTS = (
    "imap_logout_format = in=%i out=%o hdr_count=%{fetch_hdr_count} body_count=%{fetch_body_count}\n"
)


COUNTS = re.compile(r"imap\(([^)]+)\).*hdr_count=(\d+) body_count=(\d+)")


def fetch_counts(dovecot: Dovecot) -> dict[str, Counter[str]]:
    """Each user's FETCH counts summed over every session Dovecot logged as ended."""
    counts: dict[str, Counter[str]] = {}
    for line in dovecot.log_path.read_text(errors="replace").splitlines():
        if found := COUNTS.search(line):
            user, headers, bodies = found.groups()
            counts.setdefault(user, Counter()).update(headers=int(headers), bodies=int(bodies), sessions=1)
    return counts


def sessions(dovecot: Dovecot) -> int:
    listed = dovecot.doveadm("who", "-1", check=False).stdout.splitlines()
    return sum(1 for line in listed if "imap" in line)
