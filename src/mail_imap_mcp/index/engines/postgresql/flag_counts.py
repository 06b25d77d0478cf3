"""Kept counts of the messages' flags in the PostgreSQL index (schema version 5): how many messages of each
folder hold each value of ``flag_bits``, kept exact by triggers on ``messages`` in the transaction of each
change, whichever instance or release writes.

A page whose filter is flags alone (``seen``, ``unseen``, most messages pass) counted its matches over
their rows, 300-350 ms at a million messages (docs/benchmarks.md); its ``total`` is now the sum of the
counts of the values its filter passes (:func:`~mail_imap_mcp.index.flag_filter.flag_values`) in the
folders searched (:func:`flag_total`), a few rows read in the page's own snapshot. Each folder's count of
messages is their sum too (the store's ``_count``).

Since schema version 6 a change of flags or folders is counted once per statement, from its old and new
rows together (:data:`FLAG_COUNTS_PER_STATEMENT`).
"""

from __future__ import annotations

from mail_imap_mcp.index.engines.postgresql.counts import Scoped
from mail_imap_mcp.index.engines.postgresql.query import PgQuery

#: Schema version 5 (:data:`~.schema.MIGRATIONS`): the table, its triggers, then its counts (the triggers
#: made first take the lock that holds writers back until the migration commits, so none falls between).
#: A removal only lowers counts (a folder dropped takes its counts with it, by its foreign key, first).
FLAG_COUNT_TABLE = (
    """CREATE TABLE {s}.flag_counts(
        folder integer NOT NULL REFERENCES {s}.folders(id) ON DELETE CASCADE,
        flag_bits integer NOT NULL, messages integer NOT NULL, PRIMARY KEY (folder, flag_bits))""",
    """CREATE FUNCTION {s}.flag_counts_added() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO {s}.flag_counts AS k(folder, flag_bits, messages)
        SELECT a.folder, a.flag_bits, count(*) FROM added a GROUP BY a.folder, a.flag_bits
        ON CONFLICT (folder, flag_bits) DO UPDATE SET messages = k.messages + excluded.messages;
        RETURN NULL;
    END $$""",
    """CREATE FUNCTION {s}.flag_counts_removed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE {s}.flag_counts k SET messages = k.messages - r.n
        FROM (SELECT o.folder, o.flag_bits, count(*) AS n FROM removed o GROUP BY o.folder, o.flag_bits) r
        WHERE k.folder = r.folder AND k.flag_bits = r.flag_bits;
        RETURN NULL;
    END $$""",
    """CREATE FUNCTION {s}.flag_counts_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE {s}.flag_counts SET messages = messages - 1
        WHERE folder = OLD.folder AND flag_bits = OLD.flag_bits;
        INSERT INTO {s}.flag_counts AS k(folder, flag_bits, messages) VALUES (NEW.folder, NEW.flag_bits, 1)
        ON CONFLICT (folder, flag_bits) DO UPDATE SET messages = k.messages + 1;
        RETURN NULL;
    END $$""",
    "CREATE TRIGGER flag_counts_added AFTER INSERT ON {s}.messages REFERENCING NEW TABLE AS added "
    "FOR EACH STATEMENT EXECUTE FUNCTION {s}.flag_counts_added()",
    "CREATE TRIGGER flag_counts_removed AFTER DELETE ON {s}.messages REFERENCING OLD TABLE AS removed "
    "FOR EACH STATEMENT EXECUTE FUNCTION {s}.flag_counts_removed()",
    "CREATE TRIGGER flag_counts_changed AFTER UPDATE OF folder, flag_bits ON {s}.messages FOR EACH ROW "
    "WHEN (OLD.folder <> NEW.folder OR OLD.flag_bits <> NEW.flag_bits) EXECUTE FUNCTION {s}.flag_counts_changed()",
    "INSERT INTO {s}.flag_counts(folder, flag_bits, messages) "
    "SELECT folder, flag_bits, count(*) FROM {s}.messages GROUP BY folder, flag_bits",
)


#: Schema version 6: an update's counts kept per statement. Version 5's row trigger ran two statements for
#: each message whose flags changed: a sync's 10,000 flag changes took 2.1-2.6 s against 0.5-0.6 s with it
#: disabled, at 50,000 messages (docs/benchmarks.md, "A folder's count from the kept counts"). PostgreSQL
#: names no columns for a trigger with transition tables, so this one runs after every UPDATE of
#: ``messages``; one that changes no folder and no flags nets nothing and writes nothing. A release of
#: version 5 beside it (one UPDATE a message) is counted right, a statement at a time.
FLAG_COUNTS_PER_STATEMENT = (
    "DROP TRIGGER flag_counts_changed ON {s}.messages",
    """CREATE OR REPLACE FUNCTION {s}.flag_counts_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO {s}.flag_counts AS k(folder, flag_bits, messages)
        SELECT d.folder, d.flag_bits, sum(d.n)::integer FROM (
            SELECT w.folder, w.flag_bits, -count(*) AS n FROM was w GROUP BY w.folder, w.flag_bits
            UNION ALL
            SELECT i.folder, i.flag_bits, count(*) AS n FROM now_is i GROUP BY i.folder, i.flag_bits
        ) d GROUP BY d.folder, d.flag_bits HAVING sum(d.n) <> 0
        ON CONFLICT (folder, flag_bits) DO UPDATE SET messages = k.messages + excluded.messages;
        RETURN NULL;
    END $$""",
    "CREATE TRIGGER flag_counts_changed AFTER UPDATE ON {s}.messages REFERENCING OLD TABLE AS was "
    "NEW TABLE AS now_is FOR EACH STATEMENT EXECUTE FUNCTION {s}.flag_counts_changed()",
)


def flag_total(conn: Scoped, query: PgQuery, folders: list[str]) -> int | None:
    """How many messages of ``folders`` match ``query``, from the flags' counts, where its filter is flags
    alone (None: it tests more, its matches are counted)."""
    if query.flag_values is None:
        return None
    row = conn.execute(
        "SELECT coalesce(sum(k.messages), 0) FROM flag_counts k JOIN folders f ON f.id = k.folder "
        "WHERE f.name = ANY(%s) AND k.flag_bits = ANY(%s)",
        (folders, sorted(query.flag_values)),
    ).fetchone()
    return int(row[0]) if row is not None else 0
