"""The vectors of the index in PostgreSQL (search by meaning, :class:`~mail_imap_mcp.index.vectors.VectorStore`),
shared by every instance of a team deployment as the words are, written under the same advisory lock.

Each message's passages' vectors are rows of the schema's ``vectors`` table, removed with their message
(a foreign key, ``ON DELETE CASCADE``: expunged, stored again, its folder dropped); ``unvectored``
(schema version 3) holds the messages that have none yet, newest first. The table is made by the first vectors of a model, in one of two layouts (:class:`Layout`), and
made again when another model's come (their dimensions may differ); ``meta`` records the model, the
layout and a generation that each making raises:

- ``pgvector`` where the database has the ``vector`` extension (made here where the database offers it
  and the index's role may create it, else found where an administrator made it): each vector a
  ``halfvec`` (2 bytes a dimension) under an HNSW index by cosine distance, built once the first build
  is done and every message has its vectors (:func:`build_walk`), then kept by each insert; a search walks it with
  pgvector's iterative scan, the query's conditions applied to the rows it yields, and is made exact
  without the index where that walk finds fewer messages than asked.
- ``table`` elsewhere (Debian's PostgreSQL has no package for it): each vector's codes alone, ranked in
  each instance as the SQLite engines rank theirs, the signatures held in its memory and refreshed by row
  id (:mod:`.vector_copy`).

Either way each vector is kept in the SQLite engines' form too, six bits a component
(:mod:`mail_imap_mcp.meaning.packed`, a ``bytea``: ``embedding`` in a table, ``codes`` beside pgvector's
``halfvec``), and the final score of a candidate, whoever gathered it, is computed from it by the function
every engine ranks with (:func:`~mail_imap_mcp.meaning.vectors.exact`): the same vectors, the same query,
the same scores (issue 89). ``meta``'s ``vector_form`` records that form (:data:`CODES`); vectors of an
earlier form (int8 rows, or a ``halfvec`` alone) are taken for another model's and made again, in the
background.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import psycopg
from psycopg import sql

from mail_imap_mcp.index.engines.postgresql import densities as stored_densities
from mail_imap_mcp.index.engines.postgresql.counts import Scoped
from mail_imap_mcp.index.store import unpack_texts
from mail_imap_mcp.index.vectors import Densities, VectorCounts, VectorTodo

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

#: Schema version 3 (:data:`~.schema.MIGRATIONS`): the messages without vectors (every one indexed
#: before), each kept by a trigger on ``messages`` as it is stored, whichever release stores it, newest
#: first by an index of their own. A flag on ``messages`` would write each message's row again, and its
#: words' GIN entries with it, when its vectors come.
UNVECTORED_TABLE = (
    """CREATE TABLE {s}.unvectored(
        message bigint PRIMARY KEY REFERENCES {s}.messages(id) ON DELETE CASCADE, sent bigint NOT NULL)""",
    "CREATE INDEX ON {s}.unvectored(sent DESC, message DESC)",
    """CREATE FUNCTION {s}.unvectored_added() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO {s}.unvectored(message, sent) SELECT id, sent FROM added;
        RETURN NULL;
    END $$""",
    "CREATE TRIGGER unvectored_added AFTER INSERT ON {s}.messages REFERENCING NEW TABLE AS added "
    "FOR EACH STATEMENT EXECUTE FUNCTION {s}.unvectored_added()",
    "INSERT INTO {s}.unvectored(message, sent) SELECT id, sent FROM {s}.messages",
)
#: The oldest pgvector with ``halfvec`` (0.7).
HALFVEC_FROM = (0, 7)
#: The most dimensions pgvector's HNSW index takes of a ``halfvec``.
HNSW_MAX_DIMENSIONS = 4000
#: The form of the stored codes (``meta``'s ``vector_form``): six bits a component, as SQLite keeps them.
CODES = "packed6"
#: The HNSW index of the vectors (:func:`build_walk`), and the memory its build may take.
WALK_INDEX = "vectors_walk"
BUILD_MEMORY = "256MB"


class Layout(enum.Enum):
    """How an index keeps its vectors (see the module's text)."""

    PGVECTOR = "pgvector"
    TABLE = "table"


@dataclass(frozen=True)
class VectorMeta:
    """What ``meta`` records of the vectors: the model, its dimensions, the layout, the table's
    generation (raised each time it is made), pgvector's schema (its layout) and the form of its codes
    (:data:`CODES`: current; else the model recorded is named as another's, so its vectors are made
    again)."""

    model: str
    dimensions: int
    layout: Layout
    generation: int
    extension: str | None = None
    form: str = CODES

    @property
    def current(self) -> bool:
        """Whether the stored vectors are in this version's form (else none is read: they are remade)."""
        return self.form == CODES


def vector_meta(conn: Scoped) -> VectorMeta | None:
    """The vectors' record (None: none stored yet)."""
    return _meta_of(dict(conn.execute("SELECT key, value FROM meta WHERE key LIKE 'vector%'").fetchall()))


@dataclass(frozen=True)
class SearchState:
    """What a search by meaning reads first: the vectors' record (None: none of this form), each folder's
    name, row id and count of messages, and the last row id the ``table`` layout's sequence gave (None: none, or no such table)."""

    meta: VectorMeta | None
    folders: list[tuple[str, int, int]]
    last_row: int | None


def search_state(conn: Scoped) -> SearchState:
    """The :class:`SearchState`, in one statement (a round trip: each waits its turn for a core under
    load)."""
    sequence = '"' + conn.schema.replace('"', '""') + '".vectors_id_seq'
    meta: dict[str, str] = {}
    folders: list[tuple[str, int, int]] = []
    last_row: int | None = None
    for kind, name, value, number, count in conn.execute(
        "SELECT 'meta', key, value, NULL::bigint, NULL::bigint FROM meta WHERE key LIKE 'vector%%' "
        "UNION ALL SELECT 'folder', name, NULL, id, messages FROM folders "
        "UNION ALL SELECT 'last', NULL, NULL, pg_sequence_last_value(to_regclass(%s)), NULL",
        (sequence,),
    ):
        if kind == "meta":
            meta[str(name)] = str(value)
        elif kind == "folder":
            folders.append((str(name), int(number), int(count)))
        elif number is not None:
            last_row = int(number)
    found = _meta_of(meta)  # vectors of an earlier form are not searched: they are being made again
    return SearchState(found if found is not None and found.current else None, folders, last_row)


def _meta_of(rows: dict[str, str]) -> VectorMeta | None:
    if "vector_model" not in rows:
        return None
    form = rows.get("vector_form", "")
    model = str(rows["vector_model"])
    return VectorMeta(
        model if form == CODES else f"{model} (in an earlier form)",
        int(rows["vector_dimensions"]),
        Layout(rows["vector_layout"]),
        int(rows["vector_generation"]),
        rows.get("vector_extension"),
        form,
    )


def pgvector(conn: Scoped, *, create: bool) -> tuple[str, tuple[int, ...]] | None:
    """The schema and version of pgvector in the database: made first where ``create``, the database
    offers it and this role may (a refusal rolls back to a savepoint, the write goes on); None where
    it has none."""

    def found() -> tuple[str, tuple[int, ...]] | None:
        row = conn.execute(
            "SELECT n.nspname, e.extversion FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
            "WHERE e.extname = 'vector'"
        ).fetchone()
        if row is None:
            return None
        return str(row[0]), tuple(int(part) for part in str(row[1]).split(".") if part.isdigit())

    present = found()
    if present is not None or not create:
        return present
    if conn.execute("SELECT FROM pg_available_extensions WHERE name = 'vector'").fetchone() is None:
        return None
    try:
        with conn.conn.transaction():
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.Error:
        return None  # not this role's to create (an administrator may), or another instance's at once
    return found()


def describe(conn: Scoped) -> str:
    """Which layout the index's vectors are in, or will be, for the state listing."""
    meta = vector_meta(conn)
    extension = pgvector(conn, create=False)
    if meta is None and extension is None:
        offered = conn.execute(
            "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
        ).fetchone()
        if offered is not None:
            return (
                f"no vectors yet: the database offers pgvector {offered[0]}, made with the first where "
                "this role may (else a table, ranked in each instance)"
            )
    if (meta.layout if meta is not None else Layout.PGVECTOR if extension else Layout.TABLE) is Layout.TABLE:
        return "vectors in a table, ranked in each instance (no pgvector in the database)"
    version = ".".join(map(str, extension[1])) if extension is not None else "(since dropped)"
    walk = "HNSW index" if walkable(conn) else "HNSW index once every message has them; exact until then"
    return f"vectors in pgvector {version} (halfvec, {walk})"


def _make_table(conn: Scoped, model: str, dimensions: int, before: VectorMeta | None) -> VectorMeta:
    """The ``vectors`` table for ``model``'s vectors, made again (another model's go, and every message
    is to be embedded again), in the layout the database allows."""
    s = sql.Identifier(conn.schema)
    conn.conn.execute(sql.SQL("DROP TABLE IF EXISTS {}.vectors").format(s))
    conn.execute("DELETE FROM unvectored")
    conn.execute("INSERT INTO unvectored(message, sent) SELECT id, sent FROM messages")
    stored_densities.clear(conn)
    extension = pgvector(conn, create=True)
    usable = extension is not None and extension[1] >= HALFVEC_FROM and dimensions <= HNSW_MAX_DIMENSIONS
    layout = Layout.PGVECTOR if usable else Layout.TABLE
    statements: tuple[sql.SQL, ...]
    if extension is not None and usable:
        e = sql.Identifier(extension[0])
        statements = (
            sql.SQL(
                "CREATE TABLE {s}.vectors(message bigint NOT NULL REFERENCES {s}.messages(id) "
                "ON DELETE CASCADE, embedding {e}.halfvec({d}) NOT NULL, codes bytea NOT NULL)"
            ),
        )
    else:
        e = sql.Identifier("pg_catalog")
        statements = (
            sql.SQL(
                "CREATE TABLE {s}.vectors(id bigserial PRIMARY KEY, message bigint NOT NULL "
                "REFERENCES {s}.messages(id) ON DELETE CASCADE, embedding bytea NOT NULL)"
            ),
        )
    for statement in (*statements, sql.SQL("CREATE INDEX ON {s}.vectors(message)")):
        conn.conn.execute(statement.format(s=s, e=e, d=sql.Literal(dimensions)))
    made = VectorMeta(
        model,
        dimensions,
        layout,
        (before.generation if before is not None else 0) + 1,
        extension[0] if extension is not None and usable else None,
    )
    recorded = {
        "vector_model": made.model,
        "vector_dimensions": str(made.dimensions),
        "vector_layout": made.layout.value,
        "vector_generation": str(made.generation),
        "vector_extension": made.extension or "",
        "vector_form": made.form,
    }
    conn.execute(
        "INSERT INTO meta(key, value) SELECT * FROM unnest(%s::text[], %s::text[]) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (list(recorded), list(recorded.values())),
    )
    return made


def put(
    conn: Scoped,
    model: str,
    vectors: Mapping[tuple[str, int], npt.NDArray[np.float32]],
    densities: Densities | None = None,
) -> bool:
    """Keep ``vectors`` (each message's passages' rows) made by ``model``, in the writer's transaction,
    and their ``densities`` where of the reference recorded (else they have none, :mod:`.densities`):
    the table made first where it holds another model's (or none); messages no longer indexed skipped.
    Whether the HNSW index is to be built now (:func:`build_walk`: every folder's first build is done
    and every message has its vectors)."""
    import numpy as np

    if not vectors:
        return False
    dimensions = int(next(iter(vectors.values())).shape[1])
    meta = vector_meta(conn)
    if meta is None or meta.model != model or meta.dimensions != dimensions:
        meta = _make_table(conn, model, dimensions, meta)
    places = list(vectors)
    rows = conn.execute(
        "SELECT p.folder, p.uid, m.id FROM unnest(%s::text[], %s::bigint[]) AS p(folder, uid) "
        "JOIN folders f ON f.name = p.folder JOIN messages m ON m.folder = f.id AND m.uid = p.uid",
        ([folder for folder, _ in places], [uid for _, uid in places]),
    ).fetchall()
    ids = {(str(folder), int(uid)): int(row_id) for folder, uid, row_id in rows}
    owners: list[int] = []
    chosen: list[npt.NDArray[np.float32]] = []
    for place, row_id in ids.items():
        passages = np.asarray(vectors[place], dtype=np.float32).reshape(-1, dimensions)
        usable = passages[np.linalg.norm(passages, axis=1) > 0]  # an empty text's zero row ranks nothing
        owners += [row_id] * len(usable)
        chosen.append(usable)
    kept = list(ids.values())
    conn.execute("DELETE FROM vectors WHERE message = ANY(%s)", (kept,))
    if owners:
        from mail_imap_mcp.meaning.packed import packed

        every = np.concatenate(chosen)
        codes = [row.tobytes() for row in packed(every)]
        if meta.layout is Layout.PGVECTOR:
            conn.execute(
                "INSERT INTO vectors(message, embedding, codes) SELECT unnest(%s::bigint[]), "
                f"unnest(%s::text[])::{halfvec_type(meta)}, unnest(%s::bytea[])",
                (owners, [str(row) for row in every.astype(np.float16).astype(np.float32).tolist()], codes),
            )
        else:
            conn.execute(
                "INSERT INTO vectors(message, embedding) SELECT unnest(%s::bigint[]), unnest(%s::bytea[])",
                (owners, codes),
            )
    conn.execute("DELETE FROM unvectored WHERE message = ANY(%s)", (kept,))
    if densities is None or not stored_densities.put_values(conn, densities):
        stored_densities.forget(conn, kept)
    if meta.layout is not Layout.PGVECTOR:
        return False
    row = conn.execute(
        "SELECT NOT EXISTS (SELECT FROM unvectored) AND NOT EXISTS (SELECT FROM folders WHERE NOT complete) "
        "AND NOT coalesce((SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)), false)",
        (_walk_index(conn),),
    ).fetchone()
    return bool(row and row[0])


def _walk_index(conn: Scoped) -> str:
    """The HNSW index's name, qualified by the index's schema."""
    return '"' + conn.schema.replace('"', '""') + '".' + WALK_INDEX


def build_walk(conn: Scoped, meta: VectorMeta) -> None:
    """Build the HNSW index of the vectors (on a connection of its own, not in a transaction): once
    every folder's first build is done and every message has its vectors, as a whole, which takes a
    fraction of inserting each into it while the first vectors of an index are made; concurrently, so no writer waits for it (the words' sync
    goes on) and searches rank exactly meanwhile. One instance builds it (a lock of the session, tried);
    one that failed midway (left invalid) is dropped and built again."""
    lock = f"mail-imap-mcp vectors index:{conn.schema}"
    if not conn.execute("SELECT pg_try_advisory_lock(hashtext(%s))", (lock,)).fetchone()[0]:  # type: ignore[index]
        return  # another instance builds it
    try:
        s, name = sql.Identifier(conn.schema), sql.Identifier(WALK_INDEX)
        valid = conn.execute(
            "SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)", (_walk_index(conn),)
        ).fetchone()
        if valid is not None and valid[0]:
            return
        if valid is not None:
            conn.conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}.{}").format(s, name))
        # The graph is built in memory while it fits (else on disk, several times slower): about 900
        # bytes a passage of 256 dimensions, for this session's build alone.
        conn.execute("SELECT set_config('maintenance_work_mem', %s, false)", (BUILD_MEMORY,))
        conn.conn.execute(
            sql.SQL(
                "CREATE INDEX CONCURRENTLY IF NOT EXISTS {} ON {}.vectors USING hnsw(embedding {}.halfvec_cosine_ops)"
            ).format(name, s, sql.Identifier(meta.extension or "public"))
        )
    except psycopg.Error:
        return  # the table made again meanwhile (another model's vectors): the next vectors build it
    finally:
        conn.execute("RESET maintenance_work_mem")
        conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (lock,))


def halfvec_type(meta: VectorMeta) -> str:
    """pgvector's ``halfvec`` type, qualified by the extension's schema."""
    assert meta.extension is not None
    return '"' + meta.extension.replace('"', '""') + '".halfvec'


def todo(conn: Scoped, model: str, limit: int) -> list[VectorTodo]:
    """Up to ``limit`` messages without vectors of ``model``, newest first (every message where the
    stored vectors are another model's)."""
    meta = vector_meta(conn)
    if meta is not None and meta.model != model:
        source, order = "messages m", "m.sent DESC, m.id DESC"
    else:
        source, order = "unvectored u JOIN messages m ON m.id = u.message", "u.sent DESC, u.message DESC"
    rows = conn.execute(
        f"SELECT f.name, m.uid, m.doc FROM {source} JOIN folders f ON f.id = m.folder ORDER BY {order} LIMIT %s",
        (limit,),
    ).fetchall()
    return [VectorTodo(str(name), int(uid), tuple(unpack_texts(bytes(doc)))) for name, uid, doc in rows]


def counts(conn: Scoped, model: str, folders: Sequence[str] | None = None) -> VectorCounts:
    """How many indexed messages (of ``folders``; None: every folder) have vectors of ``model`` (the
    folders' kept counts, less those without)."""
    if folders is None:
        row = conn.execute(
            "SELECT (SELECT coalesce(sum(messages), 0) FROM folders), (SELECT count(*) FROM unvectored)"
        ).fetchone()
    else:
        row = conn.execute(
            "SELECT (SELECT coalesce(sum(messages), 0) FROM folders WHERE name = ANY(%s)), (SELECT count(*) "
            "FROM unvectored u JOIN messages m ON m.id = u.message JOIN folders f ON f.id = m.folder "
            "WHERE f.name = ANY(%s))",
            (list(folders), list(folders)),
        ).fetchone()
    assert row is not None
    indexed, without = int(row[0]), int(row[1])
    meta = vector_meta(conn)
    return VectorCounts(indexed - without if meta is not None and meta.model == model else 0, indexed)


def walkable(conn: Scoped) -> bool:
    """Whether the HNSW index is there to walk (built, :func:`build_walk`)."""
    row = conn.execute(
        "SELECT coalesce((SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)), false)",
        (_walk_index(conn),),
    ).fetchone()
    return bool(row and row[0])
