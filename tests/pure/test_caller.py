"""The caller record (state/caller.py): the user's name folded where it is an address, and what an audit
line says of them."""

from __future__ import annotations

from mail_imap_mcp.state import ANONYMOUS_CALLER, Caller, fold_user


def test_an_email_claim_is_casefolded_and_every_other_claim_kept_exactly() -> None:
    assert fold_user("Alice@Corp.Example", "email") == fold_user("ALICE@corp.example", "email")
    assert fold_user("Alice@Corp.Example", "email") == "alice@corp.example"
    assert fold_user("Straße@corp.example", "email") == "strasse@corp.example"  # casefold, not lower
    for claim in ("preferred_username", "sub", "oid", "upn"):
        assert fold_user("Alice@Corp.Example", claim) == "Alice@Corp.Example"


def test_an_audit_line_names_the_user_and_whose_mailbox_a_per_user_account_opened() -> None:
    alice = Caller("alice@corp.example", frozenset({"own"}))
    assert alice.audit_fields("own") == {"user": "alice@corp.example", "mailbox_of": "alice@corp.example"}
    assert alice.audit_fields("support") == {"user": "alice@corp.example"}
    assert ANONYMOUS_CALLER.audit_fields("default") == {"user": "-"}


def test_store_keys_and_tags_are_per_user_and_show_no_name() -> None:
    alice, bob = Caller("alice@corp.example"), Caller("bob@corp.example")
    assert alice.key("op", "op_1") != bob.key("op", "op_1") != ANONYMOUS_CALLER.key("op", "op_1")
    assert "alice" not in alice.key("op", "op_1") and alice.tag not in ("", "-")
    assert ANONYMOUS_CALLER.tag == "-"


def test_a_mailbox_key_is_shared_by_the_users_of_a_shared_account_and_own_for_a_per_user_one() -> None:
    alice, bob = (
        Caller("alice@corp.example", frozenset({"own"})),
        Caller("bob@corp.example", frozenset({"own"})),
    )
    assert alice.mailbox_key("send", "support", "<m@x>") == bob.mailbox_key("send", "support", "<m@x>")
    assert alice.mailbox_key("send", "own", "<m@x>") != bob.mailbox_key("send", "own", "<m@x>")
    assert "alice" not in alice.mailbox_key("send", "own", "<m@x>")


def test_regression_a_sends_record_and_rate_belong_to_the_mailbox_not_the_user() -> None:
    """Two team users of one shared account each had a record and an hourly allowance of their own, so
    both could send the same draft at once and the account sent twice its send_rate_per_hour."""
    from types import SimpleNamespace

    from mail_imap_mcp.services import send_draft

    alice, bob = (SimpleNamespace(caller=Caller(name)) for name in ("alice@corp.example", "bob@corp.example"))
    account = SimpleNamespace(host="imap.corp.example", effective_port=993, username="support@corp.example")
    draft = SimpleNamespace(
        account_id="support", account=account, outgoing=SimpleNamespace(header_id="<m@x>")
    )
    assert send_draft._record_key(alice, draft) == send_draft._record_key(bob, draft)  # type: ignore[arg-type]
    assert send_draft._rate_key(alice, draft) == send_draft._rate_key(bob, draft)  # type: ignore[arg-type]


def test_two_accounts_of_one_id_keep_records_and_rates_apart_on_one_machine() -> None:
    """The state directory's file is shared by every configuration of the machine: two configurations
    whose account ``default`` is another mailbox neither share a record nor an hourly count."""
    from types import SimpleNamespace

    from mail_imap_mcp.services import send_draft

    app = SimpleNamespace(caller=Caller())
    drafts = [
        SimpleNamespace(
            account_id="default",
            account=SimpleNamespace(host="imap.example.org", effective_port=993, username=user),
            outgoing=SimpleNamespace(header_id="<m@x>"),
        )
        for user in ("alice", "bob")
    ]
    assert len({send_draft._record_key(app, draft) for draft in drafts}) == 2  # type: ignore[arg-type]
    assert len({send_draft._rate_key(app, draft) for draft in drafts}) == 2  # type: ignore[arg-type]
