"""PostgreSQL: bytes are WAL generated, rows come from ``pg_stat_user_tables``.

Every configuration runs in a database of its own (created and dropped by the
parent), so the table statistics of that database belong to one workload only.

Bytes. ``pg_wal_lsn_diff`` of ``pg_current_wal_insert_lsn()`` read just before and
just after the timed section: the exact WAL volume inserted, read synchronously.
(``pg_stat_wal.wal_bytes`` is the same quantity, but a backend publishes it only
when it flushes its statistics, up to 10 s later in PostgreSQL 15, so it cannot
bracket a few seconds of work.) WAL is cluster-wide: anything else writing to the
server at the same time is counted too, so run the benchmark on a quiet server.
A ``CHECKPOINT`` precedes the warm-up so every system starts from the same state
of full-page images.

Rows. ``n_tup_ins + n_tup_upd + n_tup_del`` summed over the database's user
tables. A backend publishes these counters when it disconnects (at the latest;
otherwise at most once a second and lazily), so the counting pass is bracketed by
the workload's connections being closed: the probe waits until no other backend
is connected to the database, clears its statistics snapshot and reads.
"""

from __future__ import annotations

import time
from urllib.parse import urlsplit, urlunsplit

import psycopg

from bench.probes.base import StoreProbe

SETTLE_TIMEOUT_SECONDS = 15.0

_ROWS = (
    "SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0)::bigint FROM pg_stat_user_tables"
)
# Sampled at both ends of the timed section: WAL is cluster-wide, so a busy client
# of another database means the WAL figure may include its writes.
_BUSY_ELSEWHERE = (
    "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'"
    " AND datname IS DISTINCT FROM current_database() AND state NOT IN ('idle')"
)
_OTHER_BACKENDS = (
    "SELECT count(*) FROM pg_stat_activity"
    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
)


class PostgresProbe(StoreProbe):
    bytes_method = "pg_wal_lsn_diff of pg_current_wal_insert_lsn() around the timed section"
    rows_method = (
        "pg_stat_user_tables n_tup_ins+n_tup_upd+n_tup_del delta over a separate counting "
        "pass, read after the workload's backends have exited"
    )
    rewarm_after_reset = True

    def __init__(self, url: str) -> None:
        self.url = url
        self._conn: psycopg.Connection | None = None
        self._lsn_at_start = ""
        self._busy_others = 0
        self._rows_at_start = 0

    @property
    def conn(self) -> psycopg.Connection:
        if self._conn is None:
            self._conn = psycopg.connect(self.url, autocommit=True)
        return self._conn

    def _scalar(self, sql: str, *args: object) -> object:
        row = self.conn.execute(sql, args or None).fetchone()  # type: ignore[arg-type]
        if row is None:
            raise RuntimeError(f"no row from {sql!r}")
        return row[0]

    def _int(self, sql: str, *args: object) -> int:
        return int(str(self._scalar(sql, *args)))

    def reset(self) -> str | None:
        # Flush dirty pages, so every system's warm-up and timed section start from
        # the same state of full-page images in the WAL.
        try:
            self.conn.execute("CHECKPOINT")
        except psycopg.Error as error:
            return f"CHECKPOINT refused ({error}); WAL may hold more full-page images"
        return None

    def begin_bytes(self) -> None:
        self._busy_others = self._int(_BUSY_ELSEWHERE)
        self._lsn_at_start = str(self._scalar("SELECT pg_current_wal_insert_lsn()::text"))

    def end_bytes(self) -> int:
        written = self._int(
            "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), %s::pg_lsn)::bigint",
            self._lsn_at_start,
        )
        self._busy_others = max(self._busy_others, self._int(_BUSY_ELSEWHERE))
        return written

    def interference(self) -> list[str]:
        if not self._busy_others:
            return []
        return [
            f"{self._busy_others} client(s) of other databases were busy on the server at the "
            "start or end of the timed section; its WAL bytes may include theirs"
        ]

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


def server_version(url: str) -> str:
    with psycopg.connect(url, autocommit=True, connect_timeout=3) as conn:
        row = conn.execute("SHOW server_version").fetchone()
        return str(row[0]) if row else "unknown"


def reachable(url: str) -> str | None:
    """None when the server answers, else why not."""
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception as error:  # any failure to connect means "skip PostgreSQL"
        return f"{type(error).__name__}: {error}".strip()
    return None


def create_database(admin_url: str, name: str) -> None:
    with psycopg.connect(admin_url, autocommit=True, connect_timeout=10) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        # FILE_COPY: copying template0 through the WAL would dwarf the figures'
        # WAL volume for no reason (the copy happens before any measurement anyway).
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template0 STRATEGY FILE_COPY')


def drop_database(admin_url: str, name: str) -> None:
    with psycopg.connect(admin_url, autocommit=True, connect_timeout=10) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def database_url(admin_url: str, name: str) -> str:
    """``admin_url`` (a ``postgresql://`` URL) with its database replaced by ``name``."""
    parts = urlsplit(admin_url)
    return urlunsplit(parts._replace(path=f"/{name}"))
