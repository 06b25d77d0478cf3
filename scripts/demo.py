"""Demo: a throwaway Dovecot with a small mailbox, `mail-imap-mcp serve` over stdio, a scripted client.

Prints each call's summary and its envelope, as an MCP client (and the model behind it) sees them.
Run it through `scripts/demo`, which installs what is needed first.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.accounts import account_settings, config_toml  # noqa: E402
from tests.support.mail import mailgen  # noqa: E402
from tests.support.servers.dovecot import Dovecot  # noqa: E402

SERVER = str(Path(sys.executable).parent / "mail-imap-mcp")
BOLD, DIM, RESET = ("\033[1m", "\033[2m", "\033[0m") if sys.stdout.isatty() else ("", "", "")


def seed(dovecot: Dovecot, user: str) -> None:
    start = dt.datetime.now(dt.UTC) - dt.timedelta(days=30)
    inbox = [mailgen.make_message(i, date=start + dt.timedelta(hours=12 * i)) for i in range(24)]
    inbox.append(mailgen.non_ascii_message(subject="Grüße aus Köln – 東京", from_name="Jürgen Müller"))
    inbox.append(mailgen.html_only_message(subject="Your weekly newsletter"))
    inbox.append(mailgen.large_attachment_message(3 * 1024 * 1024, subject="Scanned contract"))
    dovecot.seed(user, "INBOX", inbox, flags=lambda i: "" if i % 3 == 0 else "\\Seen")
    dovecot.seed(user, "Entwürfe", [mailgen.plain_message(subject="Entwurf", body="Noch nicht fertig.")])
    dovecot.seed(user, "Sent", [mailgen.plain_message(subject="Re: Lunch", body="Sounds good!")])


def show(step: str, arguments: dict[str, Any], envelope: dict[str, Any]) -> None:
    mark = "ok" if envelope.get("success") else f"error: {(envelope.get('error') or {}).get('code')}"
    print(f"\n{BOLD}» {step}{RESET}  {DIM}{json.dumps(arguments, ensure_ascii=False)}{RESET}")
    print(f"{BOLD}  summary:{RESET} {envelope.get('summary')}  [{mark}]")
    print("  envelope: " + json.dumps(envelope, indent=2, ensure_ascii=False).replace("\n", "\n  "))


async def drive(params: StdioServerParameters) -> list[str]:
    """Runs the calls; returns the steps whose outcome was not the expected one."""
    unexpected: list[str] = []
    async with Client(params) as client:

        async def call(
            step: str, tool: str, arguments: dict[str, Any], expected_error: str | None = None
        ) -> dict[str, Any]:
            result = await client.call_tool(tool, arguments)
            envelope: dict[str, Any] = result.structured_content or {}
            show(f"{step}: {tool}", arguments, envelope)
            outcome = (
                None if envelope.get("success") else (envelope.get("error") or {}).get("code", "no envelope")
            )
            if outcome != expected_error:
                unexpected.append(
                    f"step {step} answered {outcome or 'ok'}, expected {expected_error or 'ok'}"
                )
            return envelope

        def skipped(steps: str, why: str) -> None:
            print(f"\n{BOLD}» {steps}: skipped{RESET} ({why})")
            unexpected.append(f"steps {steps} skipped: {why}")

        await call("1", "imap_list_accounts", {})
        await call("2", "imap_list_mailboxes", {"include_counts": True})
        newest = {"limit": 3, "snippet_chars": 80}
        page = await call("3", "imap_search_messages", newest)
        # A compact page has no next_action: the next page is the same search with its next_cursor.
        cursor = (page.get("data") or {}).get("next_cursor")
        if cursor:
            await call("4 (next page via cursor)", "imap_search_messages", {**newest, "cursor": cursor})
        else:
            skipped("4", "step 3 gave no next_cursor")
        found = await call("5", "imap_search_messages", {"from": "Jürgen", "snippet_chars": 80})
        messages = (found.get("data") or {}).get("messages") or []
        if messages:
            message_id = messages[0]["message_id"]
            await call("6", "imap_get_message", {"message_id": message_id, "body_max_chars": 400})
            await call("7", "imap_get_message_raw", {"message_id": message_id, "max_bytes": 300})
        else:
            skipped("6-7", "step 5 found no message to read")
        mistake = {"last_days": 7, "since": "2025-01-01"}
        await call("8 (a mistake the model can fix)", "imap_search_messages", mistake, "invalid_input")
    return unexpected


def main() -> None:
    with Dovecot() as dovecot:
        user = dovecot.new_user("u")
        seed(dovecot, user)
        with tempfile.TemporaryDirectory(prefix="mim-demo-") as tmp:
            config = Path(tmp) / "config.toml"
            config.write_text(
                config_toml({"default": account_settings(dovecot, user, password_env="DEMO_IMAP_PASSWORD")})
            )
            print(f"{BOLD}Throwaway Dovecot on {dovecot.host}:{dovecot.tls_port} (TLS), user {user}.{RESET}")
            print(f"Launching: mail-imap-mcp serve --config {config}")
            params = StdioServerParameters(
                command=SERVER,
                args=["serve", "--config", str(config)],
                env={"DEMO_IMAP_PASSWORD": dovecot.password, "PATH": os.environ.get("PATH", "")},
            )
            unexpected = anyio.run(drive, params)
    if unexpected:
        # A demo that showed a broken answer must not end as if all went well.
        sys.exit("The demo did not go as it should:\n" + "\n".join(unexpected))
    print(f"\n{BOLD}Done: the server, the client and Dovecot have all stopped.{RESET}")


if __name__ == "__main__":
    main()
