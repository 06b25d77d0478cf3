"""The ``BROWSER`` command of the tests whose server or ``login`` opens the user's browser itself:
``python browser_relay.py <socket> <url>`` hands the address, with the ``OIDC_TEST_*`` and
``APPROVAL_TEST_*`` words of its environment, to the test process that made the command
(:func:`tests.support.clients.chromium.relayed_browser`), whose headless Chromium opens it, and ends when
that browser is done (exit 1 if it failed). Starting a Chromium and its driver for each address took about
a CPU-second; the test process keeps one. With ``BROWSER_TEST_WAIT_FOR`` (a file) it hands nothing on until
that file exists. Only the standard library: it starts in a few hundredths of a second."""

from __future__ import annotations

import json
import os
import socket
import sys
import time

#: The environment words the browser acts on (:mod:`tests.support.clients.chromium`).
WORDS = ("OIDC_TEST_", "APPROVAL_TEST_")


def main(path: str, url: str) -> int:
    wait_for = os.environ.get("BROWSER_TEST_WAIT_FOR")
    # No deadline of its own: the test creates the file whatever happens, and the command that opened
    # this browser has its own.
    while wait_for and not os.path.exists(wait_for):
        time.sleep(0.02)
    words = {name: value for name, value in os.environ.items() if name.startswith(WORDS)}
    with socket.socket(socket.AF_UNIX) as relay:
        relay.connect(path)
        relay.sendall(json.dumps({"url": url, "env": words}).encode() + b"\n")
        answer = relay.makefile("rb").readline()
    return 0 if answer.strip() == b"done" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
