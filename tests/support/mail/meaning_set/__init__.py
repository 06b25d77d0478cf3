"""The meaning set (issue 80): labelled mail to measure search by meaning on, public and deterministic.

132 relevant messages in 20 topics (``relevant.json``: 16 in English, 2 in German, 2 in French) among
1,200 other messages made from templates (``others.json``, :mod:`.others`), and 40 queries: each topic
asked once as a paraphrase that shares no content word with its messages (:mod:`.words` checks that)
and once as the keywords a person would type. Every message of a topic is relevant to both its queries.

API::

    labelled = meaning_set()
    labelled.messages                  # SetMessage: id, folder, uid, sender, subject, body, sent, language
    labelled.queries                   # SetQuery: id, text, kind, language, relevant (message ids)
    labelled.halves()                  # {"paraphrase, English": [...], "keyword, English": [...], ...}
    message.indexed()                  # the index's record of it (IndexedMessage)
    labelled.id_at(folder, uid)        # the message id of a hit
"""

from __future__ import annotations

import datetime as dt
import json
from collections import defaultdict
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

from mail_imap_mcp.index.store import IndexedMessage
from tests.support.mail.meaning_set.others import Drafted, other_messages

HERE = Path(__file__).parent
#: The folders the set's mail is in (every fourth message in the archive).
FOLDERS = ("INBOX", "Archive")
UIDVALIDITY = 80
#: Every message of the set is addressed to this user.
RECIPIENT = "Sam Lind <sam@lind.example>"
OTHERS = 1200
SEED = 80
#: The set's mail was sent in 2024, one message every few hours.
_FIRST_SENT = dt.datetime(2024, 1, 2, 8, 0, tzinfo=dt.UTC)
_LANGUAGES = {"en": "English", "de": "German and French", "fr": "German and French"}

Kind = Literal["paraphrase", "keyword"]


@dataclass(frozen=True)
class SetMessage:
    """One message of the set, where it is and what it says."""

    id: str
    folder: str
    uid: int
    sender: str
    subject: str
    body: str
    sent: dt.datetime
    language: str

    @property
    def texts(self) -> tuple[str, ...]:
        """Its text columns, as :data:`mail_imap_mcp.index.store.TEXT_COLUMNS` orders them."""
        message_id = f"<{self.folder.lower()}.{self.uid}@meaning-set.example>"
        return (self.subject, self.sender, RECIPIENT, "", "", message_id, self.body, "", "", "")

    def indexed(self) -> IndexedMessage:
        """The index's record of the message (what the sync would store from its FETCH)."""
        size = len(self.subject) + len(self.sender) + len(self.body) + 400
        return IndexedMessage(
            uid=self.uid,
            sent=int(self.sent.timestamp()),
            arrival_day=int(self.sent.strftime("%Y%m%d")),
            size=size,
            flags=("\\Seen",),
            has_attachment=False,
            texts=self.texts,
            arrival=int(self.sent.timestamp()),
        )


@dataclass(frozen=True)
class SetQuery:
    """One query of the set and the ids of the messages it should find."""

    id: str
    text: str
    kind: Kind
    language: str
    relevant: frozenset[str]

    @property
    def half(self) -> str:
        """The part of the set it is reported in: its kind, and English or not."""
        return f"{self.kind}, {_LANGUAGES[self.language]}"


@dataclass(frozen=True, eq=False)
class MeaningSet:
    """The labelled messages among the others, and the queries (one set is equal only to itself: it is
    hashed by who it is, not by its thousands of messages)."""

    messages: tuple[SetMessage, ...]
    queries: tuple[SetQuery, ...]

    def halves(self) -> dict[str, list[SetQuery]]:
        """The queries by :attr:`SetQuery.half`: English paraphrases, English keywords, then the German
        and French of each kind."""
        found: dict[str, list[SetQuery]] = defaultdict(list)
        for query in self.queries:
            found[query.half].append(query)
        english = [half for half in ("paraphrase, English", "keyword, English") if half in found]
        order = english + sorted(found.keys() - set(english), reverse=True)
        return {half: found[half] for half in order}

    def in_folder(self, folder: str) -> list[SetMessage]:
        return [message for message in self.messages if message.folder == folder]

    @property
    def by_id(self) -> dict[str, SetMessage]:
        return {message.id: message for message in self.messages}

    def id_at(self, folder: str, uid: int) -> str:
        """The id of the message at ``folder`` and ``uid``."""
        return _places(self)[folder, uid]


@cache
def _places(labelled: MeaningSet) -> dict[tuple[str, int], str]:
    return {(message.folder, message.uid): message.id for message in labelled.messages}


def _relevant() -> tuple[list[Drafted], list[SetQuery]]:
    topics = json.loads((HERE / "relevant.json").read_text(encoding="utf-8"))["topics"]
    drafted, queries = [], []
    for topic in topics:
        ids = []
        for number, message in enumerate(topic["messages"], 1):
            ids.append(f"{topic['key']}-{number}")
            drafted.append(
                Drafted(ids[-1], message["from"], message["subject"], message["body"], topic["language"])
            )
        for kind in ("paraphrase", "keyword"):
            queries.append(
                SetQuery(f"{topic['key']}/{kind}", topic[kind], kind, topic["language"], frozenset(ids))
            )
    return drafted, queries


@cache
def meaning_set(others_count: int = OTHERS) -> MeaningSet:
    """The set, the same on every call and every machine: the labelled messages spread among the others
    (``others_count`` of them: every 10th message is labelled until they run out), sent a few hours
    apart, every fourth in the archive, UIDs in the order sent."""
    relevant, queries = _relevant()
    others = other_messages(others_count, SEED)
    mixed: list[Drafted] = []
    while relevant or others:
        source = relevant if relevant and (len(mixed) % 10 == 3 or not others) else others
        mixed.append(source.pop(0))
    return MeaningSet(placed(mixed), tuple(queries))


def placed(mixed: list[Drafted]) -> tuple[SetMessage, ...]:
    """The messages in the order sent, a few hours apart, every fourth in the archive, UIDs in the
    order sent."""
    uids = dict.fromkeys(FOLDERS, 0)
    messages = []
    for number, drafted in enumerate(mixed):
        folder = FOLDERS[number % 4 == 1]
        uids[folder] += 1
        sent = _FIRST_SENT + dt.timedelta(hours=5 * number, minutes=(number * 37) % 60)
        messages.append(
            SetMessage(
                drafted.id,
                folder,
                uids[folder],
                drafted.sender,
                drafted.subject,
                drafted.body,
                sent,
                drafted.language,
            )
        )
    return tuple(messages)
