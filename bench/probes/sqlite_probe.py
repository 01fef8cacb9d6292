"""SQLite: bytes are WAL frames appended, rows are counted by temporary triggers.

Bytes: frames of ``page_size + 24`` bytes, read from ``mxFrame`` in the WAL-index
header (``-shm``) before and after the timed section, while the probe holds a
read transaction open on a snapshot taken just after a marker write, so that no
checkpoint can restart the WAL under it. Rows: ``AFTER INSERT/UPDATE/DELETE …
FOR EACH ROW`` triggers on every table of the workload, each adding one to a
counter, for the counting pass only (their own writes would distort bytes). Why,
and what it costs every system alike: ``bench/README.md``, "How bytes and rows
are measured".
"""

from __future__ import annotations

import sqlite3
import struct
from pathlib import Path

from bench.probes.base import StoreProbe

COUNTER = "bench_probe_rows"
MARKER = "bench_probe_marker"
_TRIGGER_PREFIX = "bench_probe_"
# WalIndexHdr: u32 iVersion, u32 unused, u32 iChange, u8 isInit, u8 bigEndCksum,
# u16 szPage, u32 mxFrame, ...; native byte order; two copies, 48 bytes each.
_HEADER = struct.Struct("=IIIBBHI")


class SqliteProbe(StoreProbe):
    bytes_method = (
        "WAL frames appended during the timed section × (page_size + 24); "
        "WAL restart prevented by a probe read transaction"
    )
    rows_method = "AFTER INSERT/UPDATE/DELETE row triggers during a separate counting pass"

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self._conn: sqlite3.Connection | None = None
        self._frames_at_start = 0
        self._tables: list[str] = []

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = sqlite3.connect(self.path, isolation_level=None, timeout=60)
            # The probe's own marker write must never checkpoint (and so never
            # let the WAL restart under it).
            self._conn.execute("PRAGMA wal_autocheckpoint=0")
        return self._conn

    def prepare_store(self) -> None:
        mode = self.conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if mode != "wal":
            raise RuntimeError(f"{self.path} refused WAL mode ({mode})")
        self.conn.execute(f"CREATE TABLE IF NOT EXISTS {MARKER} (n INTEGER)")

    def _frames(self) -> int:
        header = Path(f"{self.path}-shm").read_bytes()[:96]
        first, second = header[:48], header[48:96]
        if first != second:
            raise RuntimeError("WAL-index header copies differ; a writer was mid-commit")
        return int(_HEADER.unpack_from(first)[6])

    def begin_bytes(self) -> None:
        mode = self.conn.execute("PRAGMA journal_mode").fetchone()[0]
        if mode != "wal":
            raise RuntimeError(f"the workload switched {self.path} to {mode} mode")
        # A marker frame past the last checkpoint: the read snapshot below then uses
        # the WAL (a non-zero read mark), which is what blocks a WAL restart.
        self.conn.execute(f"INSERT INTO {MARKER} VALUES (1)")
        self.conn.execute("BEGIN")
        self.conn.execute(f"SELECT count(*) FROM {MARKER}").fetchone()
        self._frames_at_start = self._frames()

    def end_bytes(self) -> int:
        frames = self._frames() - self._frames_at_start
        self.conn.execute("COMMIT")
        if frames < 0:
            raise RuntimeError("WAL restarted during the timed section; bytes unknown")
        page_size = int(self.conn.execute("PRAGMA page_size").fetchone()[0])
        return frames * (page_size + 24)

    def begin_rows(self) -> None:
        self._tables = [
            name
            for (name,) in self.conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'"
                " AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'bench_probe_%'"
            )
        ]
        self.conn.execute("BEGIN IMMEDIATE")
        self.conn.execute(f"CREATE TABLE IF NOT EXISTS {COUNTER} (n INTEGER NOT NULL)")
        self.conn.execute(f"DELETE FROM {COUNTER}")
        self.conn.execute(f"INSERT INTO {COUNTER} VALUES (0)")
        for table in self._tables:
            for event in ("INSERT", "UPDATE", "DELETE"):
                self.conn.execute(
                    f'CREATE TRIGGER "{_TRIGGER_PREFIX}{table}_{event.lower()}"'
                    f' AFTER {event} ON "{table}" FOR EACH ROW'
                    f" BEGIN UPDATE {COUNTER} SET n = n + 1; END"
                )
        self.conn.execute("COMMIT")

    def end_rows(self) -> int:
        count = int(self.conn.execute(f"SELECT n FROM {COUNTER}").fetchone()[0])
        self.conn.execute("BEGIN IMMEDIATE")
        for table in self._tables:
            for event in ("insert", "update", "delete"):
                self.conn.execute(f'DROP TRIGGER IF EXISTS "{_TRIGGER_PREFIX}{table}_{event}"')
        self.conn.execute("COMMIT")
        return count

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._conn = None
