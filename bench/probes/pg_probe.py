"""PostgreSQL: bytes are this database's WAL, rows come from ``pg_stat_user_tables``.

Every configuration runs in a database of its own (created and dropped by the
parent), so the table statistics of that database belong to one workload only.

Bytes. The WAL inserted between just before and just after the timed section,
read synchronously from the WAL position (``pg_stat_wal.wal_bytes`` is the same
quantity, but a backend publishes it only when it flushes its statistics, up to
10 s later in PostgreSQL 15, so it cannot bracket a few seconds of work), and
narrowed to this database's share by :mod:`bench.probes.pg_wal`. The reset before
the last warm-up is a ``CHECKPOINT``, so every system starts from the same state
of full-page images.

Rows. ``n_tup_ins + n_tup_upd + n_tup_del`` summed over the database's user
tables. A backend publishes these counters when it disconnects (at the latest;
otherwise at most once a second and lazily), so the counting pass is bracketed by
the workload's connections being closed: the probe waits until no other backend
is connected to the database, clears its statistics snapshot and reads.
"""

from __future__ import annotations

import time
from typing import Any

import psycopg

from bench.probes.base import StoreProbe
from bench.probes.pg_wal import WalMeter, WalReading

SETTLE_TIMEOUT_SECONDS = 15.0

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
        self._wal: WalMeter | None = None
        self._reading: WalReading | None = None
        self._rows_at_start = 0

    @property
    def conn(self) -> psycopg.Connection:
        if self._conn is None:
            self._conn = psycopg.connect(self.url, autocommit=True)
        return self._conn

    def _scalar(self, sql: str, *args: object) -> object:
        row = self.conn.execute(sql, args or None).fetchone()
        if row is None:
            raise RuntimeError(f"no row from {sql!r}")
        return row[0]

    def _int(self, sql: str, *args: object) -> int:
        return int(str(self._scalar(sql, *args)))

    @property
    def wal(self) -> WalMeter:
        if self._wal is None:
            self._wal = WalMeter(self.conn)
        return self._wal

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
