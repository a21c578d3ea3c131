"""The SQL databases of the mock's database services: SQLite in memory, in a sandbox.

Each account has a database of its own per service (`ServiceStores.database`), used by one
call at a time. A call is one statement in a transaction of its own, which `SqlDatabase.run`
leaves open and the returned `PendingStatement` commits once the call is paid (or rolls back).
Whatever a caller sends, it stays in its box:

* no file access: ``ATTACH`` and ``DETACH`` (and so ``VACUUM INTO``), extension loading and
  temporary objects are refused by an authorizer (sorts and ``DISTINCT`` that outgrow a small
  cache spill to SQLite's own anonymous temporary files, not to memory);
* no transaction control: ``BEGIN``, ``COMMIT``, ``ROLLBACK``, ``END``, ``SAVEPOINT`` and
  ``RELEASE`` are refused (each call is already one transaction), and the database's lock is
  released whatever happens; a call that waits too long for it is a 409;
* bounded time: a statement is stopped after ``statement_timeout`` seconds of wall time (a
  progress handler, between SQLite's instructions), and the functions whose one call SQLite
  cannot stop (``printf``, ``format``, ``instr``, ``replace``, ``trim``) are replaced by
  bounded ones (`aigateway.testing._sql.functions`);
* bounded memory: SQLite's limits (`LIMITS`: a value at most `MAX_VALUE_BYTES`, the
  statement at most `MAX_SQL_BYTES`, expressions at most 100 deep, LIKE patterns at most 100
  characters...), a database at most ``max_bytes`` (its quota, `MAX_DATABASE_BYTES` by
  default; over it is a 403 ``quota_exceeded``, and what is deleted is given back), a reply at
  most `MAX_ROWS` rows and `MAX_RESULT_BYTES`;
* ``PRAGMA`` only reads settings and the schema (``table_info``, ``index_list``...).

SQLite's limits need Python 3.11 (``Connection.setlimit``); on Python 3.10 the sandbox runs
without them: the time limit, the bounded functions and the database size still hold, a
single value is bounded only by the time it takes to build.

A refused statement raises `SqlRefused`, whose message is for the caller.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from aigateway.testing._sql.functions import install as install_bounded_functions

__all__ = [
    "LIMITS",
    "MAX_DATABASE_BYTES",
    "MAX_RESULT_BYTES",
    "MAX_ROWS",
    "MAX_SQL_BYTES",
    "MAX_VALUE_BYTES",
    "PendingStatement",
    "SqlDatabase",
    "SqlRefused",
]

MAX_ROWS = 1_000
"""The most rows one call returns; more is a 400 (add a ``LIMIT``)."""
MAX_RESULT_BYTES = 4 * 1024 * 1024
"""The most text and blob bytes one call returns."""
MAX_VALUE_BYTES = 1024 * 1024
"""The largest string or blob a statement may make (from Python 3.11)."""
MAX_SQL_BYTES = 1024 * 1024
"""The longest statement (from Python 3.11)."""
MAX_DATABASE_BYTES = 16 * 1024 * 1024
"""The most one database holds unless its account's quota says otherwise."""
LIMITS = {
    "SQLITE_LIMIT_LENGTH": MAX_VALUE_BYTES,
    "SQLITE_LIMIT_SQL_LENGTH": MAX_SQL_BYTES,
    "SQLITE_LIMIT_COLUMN": 500,
    "SQLITE_LIMIT_EXPR_DEPTH": 100,
    "SQLITE_LIMIT_COMPOUND_SELECT": 50,
    "SQLITE_LIMIT_VDBE_OP": 100_000,
    "SQLITE_LIMIT_FUNCTION_ARG": 100,
    "SQLITE_LIMIT_ATTACHED": 0,
    "SQLITE_LIMIT_LIKE_PATTERN_LENGTH": 100,
    "SQLITE_LIMIT_VARIABLE_NUMBER": 1_000,
    "SQLITE_LIMIT_TRIGGER_DEPTH": 10,
}
"""SQLite's run-time limits on every sandboxed connection (``sqlite3_limit``)."""

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

    def __init__(self, statement_timeout: float = 1.0, max_bytes: int = MAX_DATABASE_BYTES) -> None:
        self.statement_timeout = statement_timeout
        """Seconds of wall time a statement may run before it is stopped (a 400)."""
        self.max_bytes = max_bytes
        """The most the database may hold, from its next statement on (a 403 over it)."""
        self._applied_max_bytes = -1
        self._lock = threading.Lock()
        self._guarding = False
        self._refused: SqlRefused | None = None
        self._deadline = 0.0
        # no statement cache: each statement is authorized as it is prepared
        connection = sqlite3.connect(":memory:", check_same_thread=False, cached_statements=0)
        connection.isolation_level = None  # transactions are begun explicitly
        if hasattr(connection, "enable_load_extension"):
            connection.enable_load_extension(False)
        set_limit = getattr(connection, "setlimit", None)  # Python 3.11 and later
        if set_limit is not None:
            for name, value in LIMITS.items():
                set_limit(getattr(sqlite3, name), value)
        connection.execute("PRAGMA temp_store = FILE")  # sorts spill to disk, not to memory
        connection.execute("PRAGMA auto_vacuum = FULL")  # what is deleted is given back
        install_bounded_functions(connection, MAX_VALUE_BYTES, self._refuse_function)
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
            if self.max_bytes != self._applied_max_bytes:
                pages = max(1, self.max_bytes // _PAGE_BYTES)
                self._connection.execute(f"PRAGMA max_page_count = {pages}")
                self._applied_max_bytes = self.max_bytes
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
        self._refused = None
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
        if self._refused is not None:
            return self._refused
        if self._deadline and time.monotonic() >= self._deadline:
            message = f"the statement ran longer than {self.statement_timeout:g} s and was stopped"
            return SqlRefused(message, "statement_timeout")
        if read_only and "readonly" in str(exc).replace(" ", ""):
            return SqlRefused(str(exc), "read_only")
        if getattr(exc, "sqlite_errorname", "") == "SQLITE_FULL" or "is full" in str(exc):
            message = (
                f"the database would hold more than its {self._applied_max_bytes} bytes "
                "(this account's database_bytes quota); delete or drop some of it, or raise "
                "the quota (PUT /_mock/accounts/{key}/quota)"
            )
            return SqlRefused(message, "quota_exceeded", 403)
        return SqlRefused(str(exc))

    def _refuse_function(self, message: str) -> None:
        self._refused = SqlRefused(message, "value_too_large")

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
            self._refused = SqlRefused(denied, "not_allowed")
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
