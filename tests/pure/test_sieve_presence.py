"""mail/sieve_presence.py: a server's ManageSieve is looked at once per process; a look that could not
tell (no network, a name that does not resolve) is not kept, so the next use looks again; a verdict kept
for a while (a port that did not answer) lapses then, and the next use looks again."""

from __future__ import annotations

import threading

from mail_imap_mcp.mail.sieve_presence import Look, SievePresence
from tests.support.fake_clock import FakeClock
from tests.support.patience import eventually

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


def test_a_lapse_is_told_when_it_falls_due_with_no_call_asking() -> None:
    """Regression: a lapsed "did not answer" was noticed only when a listing or a rules call next asked,
    so a client was told the rules were back only then."""
    clock, timers = FakeClock(1000.0), []
    presence, told = SievePresence(clock, lambda seconds, call: timers.append((seconds, call))), []
    presence.on_change(lambda: told.append(presence.absent(("mail.example.org", 4190))))
    presence.learn(("mail.example.org", 4190), lambda: Look(True, WHY, kept_s=300.0))
    presence.learn(("pigeonhole.example.org", 4190), lambda: Look(True, None))  # kept for the process
    assert told == [WHY] and [seconds for seconds, _ in timers] == [300.0]
    clock.now += 299.5
    timers.pop()[1]()  # a timer early: waits again for what is left
    assert told == [WHY] and [seconds for seconds, _ in timers] == [0.5]
    clock.now += 1.0
    timers.pop()[1]()
    assert told == [WHY, None] and not presence.known(("mail.example.org", 4190))


def test_a_lapse_forgotten_or_told_already_is_not_told_again() -> None:
    clock, timers = FakeClock(1000.0), []
    presence, told = SievePresence(clock, lambda seconds, call: timers.append((seconds, call))), []
    presence.on_change(lambda: told.append("changed"))
    presence.learn(("mail.example.org", 4190), lambda: Look(True, WHY, kept_s=300.0))
    presence.forget(("mail.example.org", 4190))
    clock.now += 301.0
    timers.pop()[1]()
    assert told == ["changed", "changed"]  # found, forgotten; the timer's lapse was no change


def test_the_default_timer_tells_of_a_lapse_on_its_own_thread() -> None:
    presence, told = SievePresence(), []
    threads = set()

    def listener() -> None:
        told.append(presence.absent(("mail.example.org", 4190)))
        threads.add(threading.current_thread())

    presence.on_change(listener)
    presence.learn(("mail.example.org", 4190), lambda: Look(True, WHY, kept_s=0.05))
    eventually(lambda: len(told) == 2, what="the lapse told by the timer")
    assert told == [WHY, None] and len(threads) == 2  # the look's thread, then the timer's
