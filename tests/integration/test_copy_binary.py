"""app.db.copy_binary: the COPY stream numpy builds is read back by PostgreSQL as written, and
the byte order it sorts ids in is PostgreSQL's "C" order."""

from __future__ import annotations

import numpy as np
import psycopg
import pytest
from sqlalchemy import Engine

from app.db.copy_binary import Fixed, Texts, copy_data, timestamptz

IDS = ["b", "a", "éclair", "ab", "z" * 200, "Zeta", "€uro", "a b", "✓", "a"]
# An optional text column: the empty string is NULL (Texts.optional).
ENTITIES = ["", "card-1", "", "carte é", "", "x" * 200, "c", "", "✓", "c"]


def test_byte_order_is_utf8_byte_order() -> None:
    order = Texts.of(IDS).byte_order()
    assert order is not None
    assert [IDS[i] for i in order] == sorted(IDS, key=str.encode)
    assert Texts.of(sorted(IDS, key=str.encode)).byte_order() is None
    taken = Texts.of(IDS).take(order)
    assert taken.data == b"".join(IDS[i].encode() for i in order)
    optional = Texts.optional(ENTITIES).take(order)
    assert optional.nulls is not None
    assert optional.nulls.tolist() == [ENTITIES[i] == "" for i in order]
    assert Texts.optional(["a", "b"]).nulls is None  # no NULL: no mask to carry


def test_postgresql_reads_back_every_value(backend: str, engine: Engine) -> None:
    if backend != "postgresql":
        pytest.skip("binary COPY is PostgreSQL's")
    n = len(IDS)
    micros = np.array([0, -1, 1, 10**15, -(10**15), 1_795_000_000_123_456, 5, 6, 7, 8])
    labels = np.array([1, -1, 0, -1, 1, 0, 0, 1, -1, 0], dtype=np.int8)
    scores = np.linspace(0, 1, n)
    data = copy_data(
        [
            Fixed(np.arange(n, dtype=">i4")),
            Texts.of(IDS),
            timestamptz(micros),
            Fixed(scores.astype(">f8")),
            Fixed(labels.astype(">i2"), nulls=labels < 0),
            Texts.optional(ENTITIES),
        ],
        n,
    )
    raw = engine.raw_connection()
    try:
        connection = raw.driver_connection
        assert isinstance(connection, psycopg.Connection)
        with connection.cursor() as cursor:
            cursor.execute(
                "CREATE TEMPORARY TABLE copied (n int, id text, at timestamptz, "
                "score double precision, label smallint, entity text)"
            )
            with cursor.copy("COPY copied FROM STDIN (FORMAT BINARY)") as copy:
                copy.write(data)
            cursor.execute(
                "SELECT n, id, (EXTRACT(EPOCH FROM at) * 1000000)::bigint, score, label, "
                "entity FROM copied ORDER BY n"
            )
            back = cursor.fetchall()
            cursor.execute('SELECT id FROM copied ORDER BY id COLLATE "C", n')
            in_c_order = [row[0] for row in cursor.fetchall()]
        connection.rollback()
    finally:
        raw.close()
    assert back == [
        (
            i,
            IDS[i],
            int(micros[i]),
            float(scores[i]),
            None if labels[i] < 0 else int(labels[i]),
            ENTITIES[i] or None,
        )
        for i in range(n)
    ]
    order = Texts.of(IDS).byte_order()
    assert order is not None
    assert in_c_order == [IDS[i] for i in order]
