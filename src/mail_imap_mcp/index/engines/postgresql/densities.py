"""Each message's density beside its vectors in PostgreSQL (:mod:`mail_imap_mcp.index.densities`), shared
by every instance of a team deployment: ``densities`` (a row per message that has one: the reference's
generation it was found against, the density) and ``density_members`` (the reference's messages), both
removed with their message (a foreign key, ``ON DELETE CASCADE``), made by schema version 7
(:data:`DENSITY_TABLES`); ``meta`` records the reference's generation, the messages with vectors when
it was drawn and how many it drew (``density_drawn``; 0: none recorded). Written under the index's
advisory lock, as the vectors are."""

from __future__ import annotations

from collections.abc import Sequence

from mail_imap_mcp.index.engines.postgresql.counts import Scoped
from mail_imap_mcp.index.vectors import Densities, DensityReference

Place = tuple[str, int]

#: Schema version 7 (:data:`~.schema.MIGRATIONS`): every message's density found again by the pass.
DENSITY_TABLES = (
    """CREATE TABLE IF NOT EXISTS {s}.densities(message bigint PRIMARY KEY REFERENCES {s}.messages(id) ON DELETE CASCADE,
        generation integer NOT NULL, density real NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS {s}.density_members(
        message bigint PRIMARY KEY REFERENCES {s}.messages(id) ON DELETE CASCADE)""",
)
_PLACES = (
    "unnest(%s::text[], %s::bigint[]) AS p(folder, uid) JOIN folders f ON f.name = p.folder "
    "JOIN messages m ON m.folder = f.id AND m.uid = p.uid"
)


def _places(places: Sequence[Place]) -> tuple[list[str], list[int]]:
    return [folder for folder, _ in places], [uid for _, uid in places]


def _recorded(conn: Scoped) -> tuple[int, int] | None:
    """The reference's generation and the messages with vectors when it was drawn (None: none recorded)."""
    meta = dict(conn.execute("SELECT key, value FROM meta WHERE key LIKE 'density%'").fetchall())
    if int(meta.get("density_drawn", 0)) <= 0:
        return None
    return int(meta["density_generation"]), int(meta["density_counted"])


def _record(conn: Scoped, values: dict[str, int]) -> None:
    conn.execute(
        "INSERT INTO meta(key, value) SELECT * FROM unnest(%s::text[], %s::text[]) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (list(values), [str(value) for value in values.values()]),
    )


def reference(conn: Scoped) -> DensityReference | None:
    """The reference recorded, its members newest first."""
    recorded = _recorded(conn)
    if recorded is None:
        return None
    members = conn.execute(
        "SELECT f.name, m.uid FROM density_members d JOIN messages m ON m.id = d.message "
        "JOIN folders f ON f.id = m.folder ORDER BY m.sent DESC, m.id DESC"
    ).fetchall()
    return DensityReference(*recorded, tuple((str(name), int(uid)) for name, uid in members))


def put_reference(conn: Scoped, messages: Sequence[int], counted: int) -> int:
    """Record the messages ``messages`` (row ids) as the reference (in the writer's transaction); its
    generation."""
    conn.execute("DELETE FROM density_members")
    conn.execute(
        "INSERT INTO density_members(message) SELECT unnest(%s::bigint[]) ON CONFLICT DO NOTHING",
        (list(messages),),
    )
    row = conn.execute("SELECT value FROM meta WHERE key = 'density_generation'").fetchone()
    made = (0 if row is None else int(row[0])) + 1
    _record(conn, {"density_generation": made, "density_counted": counted, "density_drawn": len(messages)})
    return made


def clear(conn: Scoped) -> None:
    """Drop every density and the reference (in the writer's transaction): the vectors are made again.
    The generation stays, so none found before is taken for one of the next reference."""
    conn.execute("DELETE FROM densities")
    conn.execute("DELETE FROM density_members")
    _record(conn, {"density_drawn": 0, "density_counted": 0})


def put_values(conn: Scoped, densities: Densities) -> bool:
    """Keep ``densities`` (in the writer's transaction) where their generation is the reference's; whether
    it is."""
    recorded = _recorded(conn)
    if recorded is None or recorded[0] != densities.generation:
        return False
    places = list(densities.values)
    conn.execute(
        "INSERT INTO densities(message, generation, density) SELECT m.id, %s, p.density FROM "
        "unnest(%s::text[], %s::bigint[], %s::real[]) AS p(folder, uid, density) JOIN folders f ON f.name = "
        "p.folder JOIN messages m ON m.folder = f.id AND m.uid = p.uid "
        "ON CONFLICT (message) DO UPDATE SET generation = excluded.generation, density = excluded.density",
        (densities.generation, *_places(places), [densities.values[place] for place in places]),
    )
    return True


def forget(conn: Scoped, messages: Sequence[int]) -> None:
    """Drop the densities of ``messages`` (row ids: their vectors were made again without one)."""
    conn.execute("DELETE FROM densities WHERE message = ANY(%s)", (list(messages),))


def todo(
    conn: Scoped, made: int, after: tuple[int, int] | None, limit: int
) -> list[tuple[tuple[int, int], Place]]:
    """Up to ``limit`` messages with vectors (none left to make) and no density of the generation
    ``made``, newest first, older than ``after`` (sent, row id; None: from the newest), with their sent
    time and row id."""
    bound = "" if after is None else "AND (m.sent, m.id) < (%s, %s)"
    rows = conn.execute(
        "SELECT m.sent, m.id, f.name, m.uid FROM messages m JOIN folders f ON f.id = m.folder "
        "WHERE NOT EXISTS (SELECT FROM unvectored u WHERE u.message = m.id) AND NOT EXISTS "
        f"(SELECT FROM densities d WHERE d.message = m.id AND d.generation = %s) {bound} "
        "ORDER BY m.sent DESC, m.id DESC LIMIT %s",
        (made, limit) if after is None else (made, *after, limit),
    ).fetchall()
    return [((int(sent), int(row_id)), (str(name), int(uid))) for sent, row_id, name, uid in rows]


def stored(conn: Scoped, places: Sequence[Place]) -> Densities | None:
    """The densities of the reference recorded of those of ``places`` that have one (None: none recorded)."""
    recorded = _recorded(conn)
    if recorded is None:
        return None
    rows = conn.execute(
        f"SELECT p.folder, p.uid, d.density FROM {_PLACES} JOIN densities d ON d.message = m.id "
        "AND d.generation = %s",
        (*_places(places), recorded[0]),
    ).fetchall()
    return Densities(recorded[0], {(str(folder), int(uid)): float(value) for folder, uid, value in rows})
