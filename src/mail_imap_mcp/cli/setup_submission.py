"""``setup``'s check of the submission server of an account that sends, once its IMAP login worked: the
server reached, secured and logged in to as ``check`` does it, nothing sent, so that a wrong server,
security, port or password shows before the user presses Send. On a terminal a failure asks again the SMTP
server, security and port, every other answer kept; a script, or the last of
:data:`~.setup_login.MAX_LOGINS`, stops and nothing is written. Part of the command line
(:mod:`mail_imap_mcp.cli`)."""

from __future__ import annotations

from typing import Any

from mail_imap_mcp.cli.setup_asker import CHECK_FAILED, SetupRefused, say
from mail_imap_mcp.cli.setup_login import MAX_LOGINS, Proof, validated
from mail_imap_mcp.cli.setup_sending import smtp_again
from mail_imap_mcp.cli.submission_check import failure_words, reach, reached_words, submission_target
from mail_imap_mcp.credentials.logins import credentials_for
from mail_imap_mcp.smtp.errors import SubmissionError

#: The SMTP security as setup's user gives it.
SECURITY_NAMED = "the SMTP security"


def prove_submission(proof: Proof, settings: dict[str, Any], secret: str | None) -> None:
    """Check the submission server of ``settings`` (its ``smtp`` changed in place by the answers given
    again), logging in with ``secret`` (None: the account's token); SetupRefused where it cannot work."""
    ask = proof.ask
    for attempt in range(1, MAX_LOGINS + 1):
        account = validated(settings if secret is None else {**settings, "password": secret})
        endpoint = account.submission
        if endpoint is None:  # sending_settings asks for a server where the provider table knows none
            return
        say(f"Checking the submission server {submission_target(account)}, sending nothing...")
        try:
            reached, not_tried = reach(account, credentials_for(proof.account_id, account))
        except SubmissionError as exc:
            failure = failure_words(exc, proof.words, SECURITY_NAMED)
        else:
            say(f"ok: {reached_words(reached, not_tried)}.")
            return
        if not ask.interactive or attempt == MAX_LOGINS:
            raise SetupRefused(f"{CHECK_FAILED}, so nothing was written: {failure}")
        say(f"The submission check failed: {failure}")
        settings["smtp"] = smtp_again(ask, endpoint)
    raise AssertionError("unreachable: the last attempt returns or raises")
