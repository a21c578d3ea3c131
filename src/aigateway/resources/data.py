"""Data services: ``client.documents`` (parsing), ``client.storage``, ``client.databases``.

Writes (``storage.put``, ``storage.delete``, ``databases.execute``) are marked as side
effects, retried only with an ``idempotency_key``; ``databases.query`` is read-only (the
service refuses writes), so it is retried like any read.
"""

from __future__ import annotations

from typing_extensions import Unpack

from aigateway._call.call import APICall
from aigateway.resources._base import AsyncResource, SyncResource, endpoint, keyword_signature
from aigateway.resources._services import ServiceMethod, ServiceResource, build_service_call
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


class _DocumentsMethods(ServiceResource):
    """The methods of `Documents` and `AsyncDocuments`."""

    @endpoint
    @keyword_signature(DocumentParams)
    def parse(self, **params: Unpack[DocumentParams]) -> APICall[DocumentResult]:
        """Parse ``file`` (a path, bytes, a binary file object or a URL; at most `MAX_FILE_BYTES`)
        into pages of text. Billed per page."""
        return build_service_call(DOCUMENT_PARSE, params, self._pipeline.fetch)


class Documents(_DocumentsMethods, SyncResource):
    """Document parsing."""


class AsyncDocuments(_DocumentsMethods, AsyncResource):
    """Document parsing."""


class _StorageMethods(ServiceResource):
    """The methods of `Storage` and `AsyncStorage`."""

    @endpoint
    @keyword_signature(StoragePutParams)
    def put(self, **params: Unpack[StoragePutParams]) -> APICall[StoredObject]:
        """Store ``data`` (a path, bytes, a binary file object or a URL) under ``key``.
        Retried only with an ``idempotency_key``."""
        return build_service_call(STORAGE_PUT, params, self._pipeline.fetch)

    @endpoint
    @keyword_signature(StorageGetParams)
    def get(self, **params: Unpack[StorageGetParams]) -> APICall[StoredObject]:
        """The object stored under ``key``; ``read()`` / ``save(path)`` fetch its bytes."""
        return build_service_call(STORAGE_GET, params, self._pipeline.fetch)

    @endpoint
    @keyword_signature(StorageListParams)
    def list(self, **params: Unpack[StorageListParams]) -> APICall[StorageListResult]:
        """The objects whose keys start with ``prefix``."""
        return build_service_call(STORAGE_LIST, params, self._pipeline.fetch)

    @endpoint
    @keyword_signature(StorageDeleteParams)
    def delete(self, **params: Unpack[StorageDeleteParams]) -> APICall[StorageDeleteResult]:
        """Delete the object stored under ``key``. Retried only with an ``idempotency_key``."""
        return build_service_call(STORAGE_DELETE, params, self._pipeline.fetch)


class Storage(_StorageMethods, SyncResource):
    """Object storage."""


class AsyncStorage(_StorageMethods, AsyncResource):
    """Object storage."""


class _DatabasesMethods(ServiceResource):
    """The methods of `Databases` and `AsyncDatabases`."""

    @endpoint
    @keyword_signature(DatabaseParams)
    def query(self, **params: Unpack[DatabaseParams]) -> APICall[DatabaseResult]:
        """Run a read-only ``sql`` query with ``params``; the service refuses writes."""
        return build_service_call(DATABASE_QUERY, params, self._pipeline.fetch)

    @endpoint
    @keyword_signature(DatabaseParams)
    def execute(self, **params: Unpack[DatabaseParams]) -> APICall[DatabaseResult]:
        """Run an ``sql`` statement that may write. Retried only with an ``idempotency_key``."""
        return build_service_call(DATABASE_EXECUTE, params, self._pipeline.fetch)


class Databases(_DatabasesMethods, SyncResource):
    """SQL databases."""


class AsyncDatabases(_DatabasesMethods, AsyncResource):
    """SQL databases."""
