"""Data services: ``client.documents`` (parsing), ``client.storage``, ``client.databases``.

Writes (``storage.put``, ``storage.delete``, ``databases.execute``) are marked as side
effects, retried only with an ``idempotency_key``; ``databases.query`` is read-only (the
service refuses writes), so it is retried like any read.
"""

from __future__ import annotations

from typing_extensions import Unpack

from aigateway.resources._base import keyword_signature
from aigateway.resources._services import AsyncServiceResource, ServiceMethod, ServiceResource
from aigateway.types.service_params import (
    DatabaseInputs,
    DatabaseParams,
    DocumentInputs,
    DocumentParams,
    StorageDeleteInputs,
    StorageDeleteParams,
    StorageGetInputs,
    StorageGetParams,
    StorageListInputs,
    StorageListParams,
    StoragePutInputs,
    StoragePutParams,
)
from aigateway.types.services import (
    DatabaseResult,
    DocumentResult,
    StorageDeleteResult,
    StorageListResult,
    StoredObject,
)

__all__ = ["AsyncDatabases", "AsyncDocuments", "AsyncStorage", "Databases", "Documents", "Storage"]

DOCUMENT_PARSE = ServiceMethod("documents.parse", DocumentParams, DocumentInputs, DocumentResult)
STORAGE_PUT = ServiceMethod(
    "storage.put",
    StoragePutParams,
    StoragePutInputs,
    StoredObject,
    side_effect=True,
    fixed={"operation": "put"},
)
STORAGE_GET = ServiceMethod(
    "storage.get", StorageGetParams, StorageGetInputs, StoredObject, fixed={"operation": "get"}
)
STORAGE_LIST = ServiceMethod(
    "storage.list",
    StorageListParams,
    StorageListInputs,
    StorageListResult,
    fixed={"operation": "list"},
)
STORAGE_DELETE = ServiceMethod(
    "storage.delete",
    StorageDeleteParams,
    StorageDeleteInputs,
    StorageDeleteResult,
    side_effect=True,
    fixed={"operation": "delete"},
)
DATABASE_QUERY = ServiceMethod(
    "databases.query", DatabaseParams, DatabaseInputs, DatabaseResult, fixed={"read_only": True}
)
DATABASE_EXECUTE = ServiceMethod(
    "databases.execute", DatabaseParams, DatabaseInputs, DatabaseResult, side_effect=True
)


class Documents(ServiceResource):
    """Document parsing."""

    @keyword_signature(DocumentParams)
    def parse(self, **params: Unpack[DocumentParams]) -> DocumentResult:
        """Parse ``file`` (a path, bytes, a binary file object or a URL; at most `MAX_FILE_BYTES`)
        into pages of text. Billed per page."""
        return self._run(DOCUMENT_PARSE, params)


class AsyncDocuments(AsyncServiceResource):
    """Document parsing."""

    @keyword_signature(DocumentParams)
    async def parse(self, **params: Unpack[DocumentParams]) -> DocumentResult:
        """Parse ``file`` (a path, bytes, a binary file object or a URL; at most `MAX_FILE_BYTES`)
        into pages of text. Billed per page."""
        return await self._run(DOCUMENT_PARSE, params)


class Storage(ServiceResource):
    """Object storage."""

    @keyword_signature(StoragePutParams)
    def put(self, **params: Unpack[StoragePutParams]) -> StoredObject:
        """Store ``data`` (a path, bytes, a binary file object or a URL) under ``key``.
        Retried only with an ``idempotency_key``."""
        return self._run(STORAGE_PUT, params)

    @keyword_signature(StorageGetParams)
    def get(self, **params: Unpack[StorageGetParams]) -> StoredObject:
        """The object stored under ``key``; ``read()`` / ``save(path)`` fetch its bytes."""
        return self._run(STORAGE_GET, params)

    @keyword_signature(StorageListParams)
    def list(self, **params: Unpack[StorageListParams]) -> StorageListResult:
        """The objects whose keys start with ``prefix``."""
        return self._run(STORAGE_LIST, params)

    @keyword_signature(StorageDeleteParams)
    def delete(self, **params: Unpack[StorageDeleteParams]) -> StorageDeleteResult:
        """Delete the object stored under ``key``. Retried only with an ``idempotency_key``."""
        return self._run(STORAGE_DELETE, params)


class AsyncStorage(AsyncServiceResource):
    """Object storage."""

    @keyword_signature(StoragePutParams)
    async def put(self, **params: Unpack[StoragePutParams]) -> StoredObject:
        """Store ``data`` (a path, bytes, a binary file object or a URL) under ``key``.
        Retried only with an ``idempotency_key``."""
        return await self._run(STORAGE_PUT, params)

    @keyword_signature(StorageGetParams)
    async def get(self, **params: Unpack[StorageGetParams]) -> StoredObject:
        """The object stored under ``key``; ``read()`` / ``save(path)`` fetch its bytes."""
        return await self._run(STORAGE_GET, params)

    @keyword_signature(StorageListParams)
    async def list(self, **params: Unpack[StorageListParams]) -> StorageListResult:
        """The objects whose keys start with ``prefix``."""
        return await self._run(STORAGE_LIST, params)

    @keyword_signature(StorageDeleteParams)
    async def delete(self, **params: Unpack[StorageDeleteParams]) -> StorageDeleteResult:
        """Delete the object stored under ``key``. Retried only with an ``idempotency_key``."""
        return await self._run(STORAGE_DELETE, params)


class Databases(ServiceResource):
    """SQL databases."""

    @keyword_signature(DatabaseParams)
    def query(self, **params: Unpack[DatabaseParams]) -> DatabaseResult:
        """Run a read-only ``sql`` query with ``params``; the service refuses writes."""
        return self._run(DATABASE_QUERY, params)

    @keyword_signature(DatabaseParams)
    def execute(self, **params: Unpack[DatabaseParams]) -> DatabaseResult:
        """Run an ``sql`` statement that may write. Retried only with an ``idempotency_key``."""
        return self._run(DATABASE_EXECUTE, params)


class AsyncDatabases(AsyncServiceResource):
    """SQL databases."""

    @keyword_signature(DatabaseParams)
    async def query(self, **params: Unpack[DatabaseParams]) -> DatabaseResult:
        """Run a read-only ``sql`` query with ``params``; the service refuses writes."""
        return await self._run(DATABASE_QUERY, params)

    @keyword_signature(DatabaseParams)
    async def execute(self, **params: Unpack[DatabaseParams]) -> DatabaseResult:
        """Run an ``sql`` statement that may write. Retried only with an ``idempotency_key``."""
        return await self._run(DATABASE_EXECUTE, params)
