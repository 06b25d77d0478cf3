"""mail/sieve_presence.py: a server's ManageSieve is looked at once per process; a look that could not
tell (no network, a name that does not resolve) is not kept, so the next use looks again; a verdict kept
for a while (a port that did not answer) lapses then, and the next use looks again."""

from __future__ import annotations

from mail_imap_mcp.mail.sieve_presence import Look, SievePresence
from tests.support.fake_clock import FakeClock

WHY = "no ManageSieve on this server (port 4190 refused the connection)"


def test_a_verdict_is_kept_and_a_look_that_could_not_tell_is_not() -> None:
    presence, looks = SievePresence(), []
    endpoint = ("mail.example.org", 4190)

    def cannot_tell() -> Look:
        looks.append("cannot tell")
        return Look(False, None)

    assert presence.learn(endpoint, cannot_tell) is None and not presence.known(endpoint)
    assert presence.absent(endpoint) is None

    def refused() -> Look:
        looks.append("refused")
        return Look(True, WHY)

    assert presence.learn(endpoint, refused) == WHY
    assert presence.learn(endpoint, refused) == WHY  # kept: not looked at again
    assert looks == ["cannot tell", "refused"] and presence.absent(endpoint) == WHY
    assert presence.absent(("other.example.org", 4190)) is None
    presence.forget(endpoint)
    assert not presence.known(endpoint) and presence.absent(endpoint) is None


def test_a_server_that_greeted_as_managesieve_is_known_to_offer_it() -> None:
    presence = SievePresence()
    assert presence.learn(("mail.example.org", 4190), lambda: Look(True, None)) is None
    assert presence.known(("mail.example.org", 4190)) and presence.absent(("mail.example.org", 4190)) is None


def test_a_verdict_kept_for_a_while_lapses_then_and_the_next_use_looks_again() -> None:
    clock = FakeClock(1000.0)
    presence, looks = SievePresence(clock), []
    endpoint = ("mail.example.org", 4190)
    silent = "no ManageSieve on this server (port 4190 did not answer in 5 s)"

    def unanswered() -> Look:
        looks.append("unanswered")
        return Look(True, silent, kept_s=300.0)

    assert presence.learn(endpoint, unanswered) == silent
    clock.now += 299.5
    assert presence.absent(endpoint) == silent and presence.known(endpoint)
    assert presence.learn(endpoint, unanswered) == silent and looks == ["unanswered"]
    clock.now += 1.0
    assert presence.absent(endpoint) is None and not presence.known(endpoint)  # taken to offer it again
    assert presence.learn(endpoint, lambda: Look(True, None)) is None  # the server answered this time
    clock.now += 10_000.0
    assert presence.known(endpoint) and presence.absent(endpoint) is None  # kept for the process


def test_listeners_are_told_when_a_verdict_changes_what_absent_says() -> None:
    """A first verdict that the server offers ManageSieve is what was taken already: no change. No
    ManageSieve found, a lapse of that verdict, and forgetting it are changes."""
    clock = FakeClock(1000.0)
    presence, told = SievePresence(clock), []
    stop = presence.on_change(lambda: told.append(presence.absent(("mail.example.org", 4190))))
    offered, silent = ("pigeonhole.example.org", 4190), ("mail.example.org", 4190)
    assert presence.learn(offered, lambda: Look(True, None)) is None
    assert presence.learn(silent, lambda: Look(False, None)) is None  # could not tell
    assert told == []
    presence.learn(silent, lambda: Look(True, WHY, kept_s=300.0))
    assert told == [WHY]
    presence.learn(silent, lambda: Look(True, None))  # kept: not looked at again, nothing changed
    clock.now += 300.0
    assert presence.absent(silent) is None and told == [WHY, None]  # lapsed: offered again
    presence.learn(silent, lambda: Look(True, WHY))
    presence.forget(silent)
    assert told == [WHY, None, WHY, None]
    presence.forget(offered)  # a verdict that it is offered: forgetting it changes nothing
    stop()
    presence.learn(silent, lambda: Look(True, WHY))
    assert told == [WHY, None, WHY, None]
