"""The SQL databases of the mock's database services: SQLite in memory, in a sandbox.

Each account has a database of its own per service (`ServiceStores.database`), used by one
call at a time. A call is one statement in a transaction of its own, which `SqlDatabase.run`
leaves open and the returned `PendingStatement` commits once the call is paid (or rolls back).
Whatever a caller sends, it stays in its box:

* no file access: ``ATTACH`` and ``DETACH`` (and so ``VACUUM INTO``), extension loading and
  temporary objects are refused by an authorizer, and temporary storage stays in memory;
* no transaction control: ``BEGIN``, ``COMMIT``, ``ROLLBACK``, ``END``, ``SAVEPOINT`` and
  ``RELEASE`` are refused (each call is already one transaction), and the database's lock is
  released whatever happens; a call that waits too long for it is a 409;
* bounded time and memory: a statement is stopped after ``statement_timeout`` seconds of wall
  time, a database holds at most `MAX_DATABASE_BYTES`, a value at most `MAX_VALUE_BYTES`, and
  a reply at most `MAX_ROWS` rows and `MAX_RESULT_BYTES`;
* ``PRAGMA`` only reads settings and the schema (``table_info``, ``index_list``...).

A refused statement raises `SqlRefused`, whose message is for the caller.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = [
    "MAX_DATABASE_BYTES",
    "MAX_RESULT_BYTES",
    "MAX_ROWS",
    "MAX_VALUE_BYTES",
    "PendingStatement",
    "SqlDatabase",
    "SqlRefused",
]

MAX_ROWS = 1_000
"""The most rows one call returns; more is a 400 (add a ``LIMIT``)."""
MAX_RESULT_BYTES = 8 * 1024 * 1024
"""The most text and blob bytes one call returns."""
MAX_VALUE_BYTES = 1024 * 1024
"""The largest string or blob a statement may make (from Python 3.11)."""
MAX_DATABASE_BYTES = 64 * 1024 * 1024
"""The most one account's database may hold."""

_SQLITE_LIMIT_LENGTH = 0
"""``sqlite3.SQLITE_LIMIT_LENGTH`` (named in the module from Python 3.11)."""
_PAGE_BYTES = 4096
_PROGRESS_STEPS = 1_000
"""SQLite instructions between two looks at the clock."""
_SCHEMA_PRAGMAS = frozenset(
    (
        "table_info",
        "table_xinfo",
        "table_list",
        "index_list",
        "index_info",
        "index_xinfo",
        "foreign_key_list",
    )
)
_DENIED_FUNCTIONS = frozenset({"load_extension", "fts3_tokenizer"})
_TRANSACTION_CONTROL = (
    "BEGIN, COMMIT, ROLLBACK, END, SAVEPOINT and RELEASE are not allowed: each call is "
    "already one transaction, committed when the call is paid"
)


class SqlRefused(Exception):
    """A statement the database will not run, or that failed: ``message`` is for the caller,
    ``code`` the Error code, ``status`` the HTTP status (400, or 409 when busy)."""

    def __init__(self, message: str, code: str = "sql_error", status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status


class SqlDatabase:
    """One account's in-memory SQLite database of one service, sandboxed; thread-safe."""

    def __init__(self, statement_timeout: float = 1.0) -> None:
        self.statement_timeout = statement_timeout
        """Seconds of wall time a statement may run before it is stopped (a 400)."""
        self._lock = threading.Lock()
        self._guarding = False
        self._denied = ""
        self._deadline = 0.0
        # no statement cache: each statement is authorized as it is prepared
        connection = sqlite3.connect(":memory:", check_same_thread=False, cached_statements=0)
        connection.isolation_level = None  # transactions are begun explicitly
        if hasattr(connection, "enable_load_extension"):
            connection.enable_load_extension(False)
        set_limit = getattr(connection, "setlimit", None)  # Python 3.11 and later
        if set_limit is not None:
            set_limit(_SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
        connection.execute("PRAGMA temp_store = MEMORY")
        connection.execute(f"PRAGMA max_page_count = {MAX_DATABASE_BYTES // _PAGE_BYTES}")
        connection.set_authorizer(self._authorize)
        connection.set_progress_handler(self._past_deadline, _PROGRESS_STEPS)
        self._connection = connection

    def run(
        self, sql: str, params: Sequence[Any] | Mapping[str, Any], *, read_only: bool = False
    ) -> PendingStatement:
        """Run ``sql`` in a new transaction (writes refused when ``read_only``) and return it
        pending; raises `SqlRefused` (with nothing changed) when it cannot run or fails."""
        if not self._lock.acquire(timeout=3 * self.statement_timeout):
            raise SqlRefused(
                "the database is busy with another call of this account; retry", "busy", 409
            )
        try:
            self._connection.execute("BEGIN")
            try:
                result = self._execute(sql, params, read_only)
            except BaseException:
                self._connection.execute("ROLLBACK")
                raise
        except BaseException:
            self._lock.release()
            raise
        return PendingStatement(result, self._finish)

    def _execute(
        self, sql: str, params: Sequence[Any] | Mapping[str, Any], read_only: bool
    ) -> dict[str, Any]:
        connection = self._connection
        if read_only:
            connection.execute("PRAGMA query_only = ON")
        self._denied = ""
        self._deadline = time.monotonic() + self.statement_timeout
        try:
            before = connection.total_changes
            self._guarding = True
            try:
                cursor = connection.execute(sql, params)
            finally:
                self._guarding = False
            columns = [column[0] for column in cursor.description or ()]
            rows = _bounded_rows(cursor)
            affected = connection.total_changes - before
        except (sqlite3.Error, sqlite3.Warning, OverflowError) as exc:
            raise self._refusal(exc, read_only) from None
        finally:
            self._deadline = 0.0
            if read_only:
                connection.execute("PRAGMA query_only = OFF")
        return {"columns": columns, "rows": rows, "row_count": len(rows), "rows_affected": affected}

    def _refusal(self, exc: BaseException, read_only: bool) -> SqlRefused:
        if self._denied:
            return SqlRefused(self._denied, "not_allowed")
        if self._deadline and time.monotonic() >= self._deadline:
            message = f"the statement ran longer than {self.statement_timeout:g} s and was stopped"
            return SqlRefused(message, "statement_timeout")
        if read_only and "readonly" in str(exc).replace(" ", ""):
            return SqlRefused(str(exc), "read_only")
        return SqlRefused(str(exc))

    def _finish(self, statement: str) -> None:
        """End the open transaction with ``statement`` and release the database."""
        try:
            if self._connection.in_transaction:
                self._connection.execute(statement)
        finally:
            self._lock.release()

    def _authorize(
        self, action: int, name: str | None, detail: str | None, database: str | None, _: object
    ) -> int:
        if not self._guarding:
            return sqlite3.SQLITE_OK
        denied = ""
        if action in (sqlite3.SQLITE_TRANSACTION, sqlite3.SQLITE_SAVEPOINT):
            denied = _TRANSACTION_CONTROL
        elif action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
            denied = "ATTACH, DETACH and VACUUM INTO are not allowed: the database has no files"
        elif database == "temp":
            denied = "temporary tables, views, indexes and triggers are not allowed"
        elif action == sqlite3.SQLITE_PRAGMA and not _reads(name, detail):
            denied = "PRAGMA may read settings and the schema, not change them"
        elif action == sqlite3.SQLITE_FUNCTION and (detail or "").lower() in _DENIED_FUNCTIONS:
            denied = f"the function {detail}() is not allowed"
        if denied:
            self._denied = denied
            return sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_OK

    def _past_deadline(self) -> int:
        return int(bool(self._deadline) and time.monotonic() >= self._deadline)


def _reads(pragma: str | None, argument: str | None) -> bool:
    """Whether a PRAGMA only reads: a setting without a value, or the schema."""
    return argument is None or (pragma or "").lower() in _SCHEMA_PRAGMAS


class PendingStatement:
    """A statement run in an open transaction: `commit` it (once paid) or `rollback`; either
    releases the database, and only the first of them counts."""

    def __init__(self, result: dict[str, Any], finish: Callable[[str], None]) -> None:
        self._result = result
        self._finish = finish
        self._done = False
        self._done_lock = threading.Lock()

    def commit(self) -> dict[str, Any]:
        """Commit; the statement's ``columns``, ``rows``, ``row_count``, ``rows_affected``."""
        self._end("COMMIT")
        return self._result

    def rollback(self) -> None:
        """Undo the statement."""
        self._end("ROLLBACK")

    def _end(self, statement: str) -> None:
        with self._done_lock:
            if self._done:
                return
            self._done = True
        self._finish(statement)


def _bounded_rows(cursor: sqlite3.Cursor) -> list[list[object]]:
    rows: list[list[object]] = []
    size = 0
    while batch := cursor.fetchmany(100):
        for row in batch:
            values = [value.hex() if isinstance(value, bytes) else value for value in row]
            size += sum(len(value) for value in values if isinstance(value, str))
            rows.append(values)
        if len(rows) > MAX_ROWS:
            raise SqlRefused(f"the statement returns more than {MAX_ROWS} rows; add a LIMIT")
        if size > MAX_RESULT_BYTES:
            raise SqlRefused(
                f"the statement returns more than {MAX_RESULT_BYTES} bytes; select less"
            )
    return rows
