"""mail/sieve_presence.py: a server's ManageSieve is looked at once per process; a look that could not
tell (no network, a name that does not resolve) is not kept, so the next use looks again."""

from __future__ import annotations

from mail_imap_mcp.mail.sieve_presence import SievePresence

WHY = "no ManageSieve on this server (port 4190 refused the connection)"


def test_a_verdict_is_kept_and_a_look_that_could_not_tell_is_not() -> None:
    presence, looks = SievePresence(), []
    endpoint = ("mail.example.org", 4190)

    def cannot_tell() -> tuple[bool, str | None]:
        looks.append("cannot tell")
        return False, None

    assert presence.learn(endpoint, cannot_tell) is None and not presence.known(endpoint)
    assert presence.absent(endpoint) is None

    def refused() -> tuple[bool, str | None]:
        looks.append("refused")
        return True, WHY

    assert presence.learn(endpoint, refused) == WHY
    assert presence.learn(endpoint, refused) == WHY  # kept: not looked at again
    assert looks == ["cannot tell", "refused"] and presence.absent(endpoint) == WHY
    assert presence.absent(("other.example.org", 4190)) is None
    presence.forget(endpoint)
    assert not presence.known(endpoint) and presence.absent(endpoint) is None


def test_a_server_that_greeted_as_managesieve_is_known_to_offer_it() -> None:
    presence = SievePresence()
    assert presence.learn(("mail.example.org", 4190), lambda: (True, None)) is None
    assert presence.known(("mail.example.org", 4190)) and presence.absent(("mail.example.org", 4190)) is None
