"""Debian's headless Chromium driven through its chromedriver (selenium's WebDriver), in the test's own
process, of the test's own (with flags of its own, e.g. a host resolver rule): a real browser for the
pages the server shows the user (the approval page of a send). A test gets the driver and acts the user (or
an attacker) in it; ``tests/support/clients/chromium.py`` keeps the process's shared browsers (the sign-in's
and the approval pages', and the one the ``BROWSER`` command hands its address to).

``scripts/test`` installs ``chromium`` and ``chromium-driver`` (``ensure_chromium`` in _bootstrap.sh);
without them a test that needs the browser fails, saying so, rather than skipping.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.chrome.webdriver import WebDriver

from tests.support.clients.chromium import FLAGS
from tests.support.patience import patient

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


def require_chromium() -> None:
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not os.access(path, os.X_OK)]
    if missing:
        pytest.fail(
            f"{' and '.join(missing)} not found: scripts/test installs them "
            "(Debian: apt-get install chromium chromium-driver)"
        )


@contextmanager
def chromium(profile: Path, *flags: str, page_load_within: float = 30.0) -> Iterator[WebDriver]:
    """A new headless Chromium with its own profile directory ``profile`` (made here), ``flags`` added
    to every test's :data:`tests.support.clients.chromium.FLAGS` (e.g. ``--host-resolver-rules=MAP rebound.test
    127.0.0.1``), a page given ``page_load_within`` idle-machine seconds to load; quit on exit."""
    require_chromium()
    profile.mkdir(parents=True, exist_ok=True)
    options = Options()
    options.binary_location = CHROMIUM
    for flag in (*FLAGS, f"--user-data-dir={profile}", *flags):
        options.add_argument(flag)
    # The driver named here (and SE_OFFLINE): selenium never looks for, or downloads, one of its own.
    os.environ.setdefault("SE_OFFLINE", "true")
    service = Service(executable_path=CHROMEDRIVER, log_output=subprocess.DEVNULL)
    driver = webdriver.Chrome(options=options, service=service)
    try:
        driver.set_page_load_timeout(patient(page_load_within))
        yield driver
    finally:
        driver.quit()
