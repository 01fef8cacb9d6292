"""PostgreSQL: bytes are this database's share of the WAL, rows come from ``pg_stat_user_tables``.

Every configuration runs in a database of its own, so its table statistics
belong to one workload. Bytes: the WAL inserted between just before and just
after the timed section, read from the WAL position, scaled to this database's
share of the window's records when ``pg_walinspect`` can decode them (records
naming its relations, and the other records of their transactions); a
temporary replication slot keeps the window's segments until they are read.
Rows: ``n_tup_ins + n_tup_upd + n_tup_del`` once the workload's backends have
disconnected, which is when a backend publishes its counters. Why each reading
is taken this way: ``bench/README.md``, "How bytes and rows are measured".
"""

from __future__ import annotations

import functools
import os
import time
from dataclasses import dataclass
from typing import Any

import psycopg

from bench.probes.base import StoreProbe

SETTLE_TIMEOUT_SECONDS = 15.0
FLUSH_TIMEOUT_SECONDS = 10.0

_SHARE = """
WITH recs AS (
    SELECT xid, record_length, block_ref FROM pg_get_wal_records_info(%(start)s, %(end)s)
), ours AS (
    SELECT DISTINCT xid FROM recs WHERE strpos(block_ref, %(tag)s) > 0 AND xid <> '0'::xid
)
SELECT
    coalesce(sum(record_length) FILTER (
        WHERE strpos(block_ref, %(tag)s) > 0 OR xid IN (SELECT xid FROM ours)), 0)::bigint,
    coalesce(sum(record_length), 0)::bigint
FROM recs
"""

_ROWS = (
    "SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0)::bigint FROM pg_stat_user_tables"
)
# Sampled at both ends of the timed section: when the WAL cannot be attributed to
# a database, a busy client of another database means the figure includes its writes.
_BUSY_ELSEWHERE = (
    "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'"
    " AND datname IS DISTINCT FROM current_database() AND state NOT IN ('idle')"
)
_OTHER_BACKENDS = (
    "SELECT count(*) FROM pg_stat_activity"
    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
)


@dataclass(frozen=True)
class WalReading:
    total: int  # LSN distance: every database's WAL in the window
    ours: int  # this database's share (== total when not attributed)
    attributed: bool

    @property
    def foreign_share(self) -> float:
        return 1 - self.ours / self.total if self.total else 0.0


class WalMeter:
    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn
        self.slot = f"bench_probe_{os.getpid()}"
        self.problem: str | None = None
        self._start = ""
        self._slot_taken = False

    def enable(self) -> None:
        """Install pg_walinspect in this database (before any measurement)."""
        try:
            self.conn.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect")
        except psycopg.Error as error:
            self.problem = f"pg_walinspect unavailable ({error.diag.message_primary})"

    def _lsn(self, function: str) -> str:
        row = self.conn.execute(f"SELECT {function}()::text").fetchone()
        return str(row[0]) if row else "0/0"

    def begin(self) -> None:
        if self.problem is None:
            try:
                self.conn.execute(
                    "SELECT pg_create_physical_replication_slot(%s, true, true)", (self.slot,)
                )
                self._slot_taken = True
            except psycopg.Error:
                pass  # no slot: segments might be recycled; end() falls back if so
        self._start = self._lsn("pg_current_wal_insert_lsn")

    def end(self) -> WalReading:
        end = self._lsn("pg_current_wal_insert_lsn")
        row = self.conn.execute(
            "SELECT pg_wal_lsn_diff(%s::pg_lsn, %s::pg_lsn)::bigint", (end, self._start)
        ).fetchone()
        total = int(row[0]) if row else 0
        try:
            if self.problem is None:
                return self._attribute(total, end)
        except psycopg.Error as error:
            self.problem = f"WAL attribution failed ({error.diag.message_primary})"
        finally:
            self._release_slot()
        return WalReading(total, total, False)

    def _attribute(self, total: int, end: str) -> WalReading:
        # pg_walinspect reads only flushed WAL; a commit of our own flushes past `end`.
        self.conn.execute("SELECT pg_current_xact_id()")
        deadline = time.monotonic() + FLUSH_TIMEOUT_SECONDS
        while not self._flushed_past(end):
            if time.monotonic() > deadline:
                raise psycopg.OperationalError("WAL not flushed past the window")
            time.sleep(0.05)
        oid_row = self.conn.execute(
            "SELECT oid FROM pg_database WHERE datname = current_database()"
        ).fetchone()
        tag = f"/{oid_row[0] if oid_row else 0}/"
        row = self.conn.execute(_SHARE, {"start": self._start, "end": end, "tag": tag}).fetchone()
        ours, decoded = (int(row[0]), int(row[1])) if row else (0, 0)
        share = ours / decoded if decoded else 1.0
        return WalReading(total, round(total * share), True)

    def _flushed_past(self, lsn: str) -> bool:
        row = self.conn.execute(
            "SELECT pg_current_wal_flush_lsn() >= %s::pg_lsn", (lsn,)
        ).fetchone()
        return bool(row and row[0])

    def _release_slot(self) -> None:
        if self._slot_taken:
            self.conn.execute("SELECT pg_drop_replication_slot(%s)", (self.slot,))
            self._slot_taken = False


class PostgresProbe(StoreProbe):
    bytes_method = (
        "WAL inserted during the timed section (pg_current_wal_insert_lsn distance), "
        "scaled to this database's share of the WAL records (pg_walinspect)"
    )
    rows_method = (
        "pg_stat_user_tables n_tup_ins+n_tup_upd+n_tup_del delta over a separate counting "
        "pass, read after the workload's backends have exited"
    )
    rewarm_after_reset = True

    def __init__(self, url: str) -> None:
        self.url = url
        self._conn: psycopg.Connection | None = None
        self._busy_others = 0
        self._reading: WalReading | None = None
        self._rows_at_start = 0

    @property
    def conn(self) -> psycopg.Connection:
        if self._conn is None:
            self._conn = psycopg.connect(self.url, autocommit=True)
        return self._conn

    @functools.cached_property
    def wal(self) -> WalMeter:
        return WalMeter(self.conn)

    def _int(self, sql: str) -> int:
        row = self.conn.execute(sql).fetchone()
        if row is None:
            raise RuntimeError(f"no row from {sql!r}")
        return int(row[0])

    def reset(self) -> str | None:
        self.wal.enable()  # catalog writes now, not in the timed section
        # Flush dirty pages, so every system's warm-up and timed section start from
        # the same state of full-page images in the WAL.
        try:
            self.conn.execute("CHECKPOINT")
        except psycopg.Error as error:
            return f"CHECKPOINT refused ({error}); WAL may hold more full-page images"
        return None

    def begin_bytes(self) -> None:
        self._busy_others = self._int(_BUSY_ELSEWHERE)
        self.wal.begin()

    def end_bytes(self) -> int:
        self._reading = self.wal.end()
        self._busy_others = max(self._busy_others, self._int(_BUSY_ELSEWHERE))
        return self._reading.ours

    def details(self) -> dict[str, Any]:
        if self._reading is None:
            return {}
        return {
            "wal_server_bytes": self._reading.total,
            "wal_attributed": self._reading.attributed,
            "wal_foreign_share": round(self._reading.foreign_share, 3),
        }

    def interference(self) -> list[str]:
        reading, notes = self._reading, []
        if self.wal.problem:
            notes.append(f"WAL not attributed to the database: {self.wal.problem}")
        # With attribution, other databases' WAL is excluded; the report summarises
        # how much there was from ``details``.
        if (reading is None or not reading.attributed) and self._busy_others:
            notes.append(
                f"{self._busy_others} client(s) of other databases were busy on the server at "
                "the start or end of the timed section; its WAL bytes may include theirs"
            )
        return notes

    def _settled_rows(self) -> int:
        deadline = time.monotonic() + SETTLE_TIMEOUT_SECONDS
        while self._int(_OTHER_BACKENDS) != 0:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    "workload connections stayed open after close; row statistics unknown"
                )
            time.sleep(0.05)
        self.conn.execute("SELECT pg_stat_clear_snapshot()")
        return self._int(_ROWS)

    def begin_rows(self) -> None:
        self._rows_at_start = self._settled_rows()

    def end_rows(self) -> int:
        return self._settled_rows() - self._rows_at_start

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._conn = None
