"""When the embedded store's WAL is copied into the database file and emptied.

A checkpoint that fails is owed, retried and run before the next write until the disk
has room again (docs/storage.md).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import Callable

import anyio

from symfonic.storage.failures import cannot_write

logger = logging.getLogger("symfonic.storage.sqlite")

# Commits on the loop between two checkpoints (about SQLite's own default of
# 1,000 WAL pages at a cycle's few pages per commit).
CHECKPOINT_EVERY = 256
# How long a checkpoint waits for the write lock and for readers of older
# snapshots. Writers queue behind it meanwhile, so a reader that keeps an old
# snapshot for long (another process's report, a backup) must not stall them
# with it: past this the checkpoint gives up, and the next one tries again.
CHECKPOINT_WAIT_MS = 250
# Every this many commits the free space is looked at: a WAL that could soon
# fill the disk is checkpointed while the database file still has room to grow,
# since a checkpoint copies the WAL's pages into it before it empties the WAL.
SPACE_CHECK_EVERY = 16
# Below this much free space it is looked at after every commit: 16 commits of
# a few large turns' WAL could take it all between two looks.
SHORT_OF_SPACE = 64 * 1024 * 1024
# Free space a write needs before the store says writes can resume: about a
# turn's (the health check's probe writes as much).
ROOM_TO_WRITE = 64 * 1024
# Checkpoint early when the disk has less free than this many times the WAL.
SPACE_MARGIN = 2
# Backoff of an owed checkpoint's retries, in seconds.
FIRST_RETRY_DELAY = 0.25
LONGEST_RETRY_DELAY = 10.0
# SQLITE_BUSY and SQLITE_LOCKED: another connection holds the lock.
BUSY_CODES = frozenset({5, 6})


class Checkpointer:
    """Counts the loop's commits, checkpoints every `CHECKPOINT_EVERY`, and
    retries a failed checkpoint until one succeeds."""

    def __init__(
        self,
        path: str,
        connect: Callable[[], sqlite3.Connection],
        after: Callable[[sqlite3.Connection], None] | None = None,
    ) -> None:
        """``after``: run on the checkpoint's connection and thread after each checkpoint."""
        self._path = path
        self._connect = connect
        self._after = after
        self._connection: sqlite3.Connection | None = None
        self._commits = 0
        self._space_check_at = 0  # the first commit looks
        self._running = False
        self._said_still_full = False
        self._one_at_a_time = threading.Lock()
        self._starting = threading.Lock()
        self._owed = threading.Event()
        self._closed = threading.Event()
        self._retrier: threading.Thread | None = None

    @property
    def owed(self) -> bool:
        return self._owed.is_set()

    async def committed(self) -> None:
        """Count one commit of the loop's; every `CHECKPOINT_EVERY`, checkpoint,
        or sooner when the WAL could take the disk's last free space."""
        self._commits += 1
        due = self._commits >= CHECKPOINT_EVERY
        if not due and self._commits >= self._space_check_at:
            due = self._disk_is_short()
        if due and not self._running:
            self._commits = 0
            self._space_check_at = 0  # look again at the next commit after a checkpoint
            await self._on_thread()

    def _disk_is_short(self) -> bool:
        """Whether the WAL should be checkpointed now for want of space; sets when to
        look next: in a few commits, or at the next one while the disk is short."""
        try:
            free = _free_space(self._path)
            wal = os.stat(f"{self._path}-wal").st_size
        except OSError:
            return False
        self._space_check_at = self._commits + (1 if free < SHORT_OF_SPACE else SPACE_CHECK_EVERY)
        return free < SPACE_MARGIN * wal

    async def before_write(self) -> None:
        """While a checkpoint is owed, run one before the write adds to the WAL."""
        if self._owed.is_set() and not self._running:
            await self._on_thread()

    async def now(self) -> bool:
        """Checkpoint now, on a thread (a write found the disk full); whether it emptied
        the WAL and left room to write. One already running is waited for on its
        lock, then run again."""
        return await self._on_thread()

    def write_refused(self, reason: str) -> None:
        """A write failed because the disk or file refused it: owe a checkpoint."""
        if not self._owed.is_set():
            logger.warning(
                "a write to %s failed: %s; checkpointing the WAL until one succeeds",
                self._path,
                reason,
            )
        self._owe()

    def close(self) -> None:
        with self._starting:
            self._closed.set()
            retrier, self._retrier = self._retrier, None
        if retrier is not None:
            retrier.join()
        with self._one_at_a_time:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    async def _on_thread(self) -> bool:
        self._running = True
        try:
            # A write has committed (or waits): its caller must learn so, cancelled or not.
            with anyio.CancelScope(shield=True):
                emptied = await anyio.to_thread.run_sync(self.run)
        finally:
            self._running = False
        return emptied

    def run(self, *, retrying: bool = False) -> bool:
        """Copy every committed WAL page into the database file and empty the WAL.

        ``TRUNCATE``, not passive, so the WAL is started over (docs/storage.md); it waits
        here, on a worker thread, at most ``CHECKPOINT_WAIT_MS``. Returns whether the WAL
        was emptied and, while a checkpoint is owed, the disk has room for writes again.
        """
        with self._one_at_a_time:
            if self._closed.is_set():
                return False
            try:
                busy = self._checkpoint()
                if self._after is not None and self._connection is not None:
                    self._after(self._connection)
            except sqlite3.Error as error:
                return self._failed(error, loud=retrying or not self._owed.is_set())
            if busy:
                logger.debug("a checkpoint could not empty the WAL; the next one tries again")
                return False
            return self._paid() if self._owed.is_set() else True

    def _paid(self) -> bool:
        """The WAL is empty; the debt is paid once the disk has room for a write too.

        An empty WAL on a full disk gives nothing back, so writes would still
        be refused: that is said once, and the retries go on until space is freed.
        """
        try:
            free = _free_space(self._path)
        except OSError:
            free = ROOM_TO_WRITE  # cannot tell: let the next write find out
        if free < ROOM_TO_WRITE:
            logger.log(
                logging.DEBUG if self._said_still_full else logging.WARNING,
                "the WAL of %s is empty, but its disk is still full (%d bytes free); "
                "writes resume once space is freed",
                self._path,
                free,
            )
            self._said_still_full = True
            return False
        self._owed.clear()
        self._said_still_full = False
        logger.warning("the WAL of %s is checkpointed again; writes can resume", self._path)
        return True

    def _checkpoint(self) -> int:
        if self._connection is None:
            self._connection = self._connect()
            self._connection.execute(f"PRAGMA busy_timeout={CHECKPOINT_WAIT_MS}")
        busy, _, _ = self._connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        return int(busy)

    def _failed(self, error: sqlite3.Error, *, loud: bool) -> bool:
        code = getattr(error, "sqlite_errorcode", None)
        if code is not None and code & 0xFF in BUSY_CODES:
            # Another process is checkpointing; the next turn of the count tries again.
            logger.debug("a checkpoint was refused: another connection holds the lock")
            return False
        reason = cannot_write(error) or f"SQLite said {error}"
        # Each retry of the backoff says so; a write's own attempt in between, once.
        logger.log(
            logging.WARNING if loud else logging.DEBUG,
            "the WAL checkpoint of %s failed: %s; the WAL grows until one succeeds, "
            "retrying with backoff",
            self._path,
            reason,
        )
        self._owe()
        return False

    def _owe(self) -> None:
        self._owed.set()
        with self._starting:
            if self._closed.is_set():
                return
            if self._retrier is None or not self._retrier.is_alive():
                self._retrier = threading.Thread(
                    target=self._retry, name=f"symfonic checkpoint {self._path}", daemon=True
                )
                self._retrier.start()

    def _retry(self) -> None:
        delay = FIRST_RETRY_DELAY
        while self._owed.is_set() and not self._closed.wait(delay):
            if self.run(retrying=True):
                return
            delay = min(delay * 2, LONGEST_RETRY_DELAY)


def _free_space(path: str) -> int:
    """Bytes free to this process on the file system holding ``path``."""
    stats = os.statvfs(path)
    return stats.f_bavail * stats.f_frsize
