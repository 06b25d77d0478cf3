"""README's links into docs/ land on a heading that exists, and the quick start reaches each provider's
registration steps in one click (issue 56 item 8)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\]\((docs/[a-z_-]+\.md)#([a-z0-9_-]+)\)")


def anchors(markdown: str) -> set[str]:
    """The anchors GitHub makes of a file's headings: lower-cased, punctuation dropped, spaces to '-'."""
    headings = re.findall(r"^#+ (.+)$", markdown, re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


def test_every_readme_link_into_docs_names_an_existing_heading() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    broken = [
        f"{path}#{anchor}"
        for path, anchor in LINK.findall(readme)
        if anchor not in anchors((ROOT / path).read_text(encoding="utf-8"))
    ]
    assert broken == []


def test_the_quick_start_links_to_the_registration_steps_of_entra_id_and_google() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick_start = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    linked = {f"{path}#{anchor}" for path, anchor in LINK.findall(quick_start)}
    assert {
        "docs/providers.md#register-an-app-in-microsoft-entra-id",
        "docs/providers.md#register-a-desktop-client-in-google-cloud",
    } <= linked
    providers = (ROOT / "docs" / "providers.md").read_text(encoding="utf-8")
    for heading in (
        "### Register an app in Microsoft Entra ID",
        "### Register a desktop client in Google Cloud",
    ):
        steps = providers.split(heading, 1)[1].split("\n#", 1)[0]
        assert re.findall(r"^\d\. ", steps, re.MULTILINE)[:3] == ["1. ", "2. ", "3. "], heading
    entra = providers.split("### Register an app in Microsoft Entra ID", 1)[1].split("\n### ", 1)[0]
    for needed in ("Application (client) ID", "replyUrlsWithType", "IMAP.AccessAsUser.All", "SMTP.Send",
                   "SMTP AUTH", "Directory (tenant) ID"):  # fmt: skip
        assert needed in entra, needed
