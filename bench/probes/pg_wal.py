"""PostgreSQL WAL written by one database, even on a server others are writing to.

WAL is cluster-wide: ``pg_wal_lsn_diff`` around the timed section counts every
database's writes. On a shared machine (other test suites on the same server)
that can be most of it. So, when ``pg_walinspect`` is available (contrib, since
PostgreSQL 15; creating it needs superuser), the meter decodes the WAL records of
the window and keeps this database's share: records that touch its relations
(``block_ref`` names ``spc/<db oid>/rel``, full-page images included) and the
records of the same transactions (their commit records carry no block). The
figure is the LSN distance scaled by that share, so page headers and alignment
count in proportion. Without ``pg_walinspect`` it is the plain LSN distance, and
the probe warns when other clients were busy.

A temporary physical replication slot, taken at the start, keeps the window's
WAL segments from being recycled by a checkpoint before they are read; the
server drops it with the probe's session even if the process dies.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import psycopg

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
