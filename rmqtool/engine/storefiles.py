"""The store's own files beside its structures: `lock`, `abort` and the journals a killed writer leaves.

`store.files` is the one place a command asks who holds the store, takes its lock, marks it open or
closed clean, refuses a store whose last writer crashed, and settles what a killed process left: a bulk
load's adoption, a clean's removals and a journaled swap are finished, in that order, before anything is
read for a change. A killed write (`journal`) is rolled back by the writer that opens the store after it.
"""

from __future__ import annotations

from pathlib import Path

from rmqtool.engine import journal
from rmqtool.errors import RmqError
from rmqtool.files.lock import StoreLock, create_abort, lock_holder, remove_abort
from rmqtool.files.paths import StorePaths
from rmqtool.files.swap import JOURNAL, discard_staging, finish_swap, staging_root


class StoreFiles:
    """`lock`, `abort` and the journals of one store root."""

    def __init__(self, paths: StorePaths) -> None:
        self.paths = paths

    def holder(self) -> int | None:
        """The pid of the process holding the store's lock (a running broker), None when it is free."""
        return lock_holder(self.paths)

    def lock(self) -> StoreLock:
        """The store's lock, taken: a store held by anyone else is refused, naming the holder."""
        return StoreLock(self.paths)

    def abort_present(self) -> bool:
        return self.paths.abort.exists()

    def mark_open(self) -> None:
        """`abort` created, durably: until `mark_closed`, the next open treats the store as crashed."""
        create_abort(self.paths.abort)

    def mark_closed(self) -> None:
        """`abort` removed, durably: the last step of a clean close."""
        remove_abort(self.paths.abort)

    def refuse_unclean(self) -> None:
        """Refuse to write a store whose last writer crashed (its `abort` is present): recovery comes first."""
        if self.abort_present():
            raise RmqError(f"store {self.paths.root} was not shut down cleanly (abort file present): "
                           "run `rmqtool recover` first")

    def settle(self, *, drop_staging: bool = False) -> bool:
        """Finish what a killed process left, under the lock: a bulk load's adoption, a clean's removals, a
        journaled swap (returns whether one was finished); with `drop_staging`, staging no journal names goes."""
        from rmqtool.engine.staging import finish_pending  # start-up: staging loads numpy; every open builds files

        finish_pending(self.paths)
        journal.finish_deletions(self.paths)
        finished = finish_swap(self.paths)
        if drop_staging:
            discard_staging(self.paths)
        return finished

    def owns(self, path: Path) -> bool:
        """Whether `path` is one of these files: `lock`, `abort` (and the `.bak` a 5.x broker keeps of it), the
        journals of a killed write or clean, and the staging a stopped rebuild left."""
        root = self.paths.root
        named = (self.paths.lock, self.paths.abort, self.paths.abort.with_name(self.paths.abort.name + ".bak"),
                 root / journal.JOURNAL_NAME, root / journal.DELETIONS_NAME)
        return path in named or path.is_relative_to(staging_root(self.paths))

    def state(self) -> dict:
        """What `info` says of these files: abort, an unfinished swap, an interrupted write, the lock's holder."""
        interrupted = journal.pending(self.paths)  # the next writer rolls it back
        return {
            "abortFile": self.abort_present(),
            "unfinishedSwap": (staging_root(self.paths) / JOURNAL).exists(),  # the next writer finishes it
            "interruptedWrite": None if interrupted is None else {
                "command": interrupted["command"], "pid": interrupted["pid"], "startedMs": interrupted["startedMs"],
                "commitlogEnd": interrupted["mark"]["commitlogEnd"]},
            "lockHeldBy": self.holder(),
        }
