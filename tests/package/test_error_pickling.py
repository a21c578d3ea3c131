"""Errors pickle and unpickle (as process pools send them back) without the API key."""

from __future__ import annotations

import inspect
import multiprocessing
import pickle
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import httpx
import pytest

from aigateway import errors
from aigateway.errors import (
    AIGatewayError,
    APIError,
    APIResponseValidationError,
    APIStatusError,
    IncompleteStreamError,
    InvalidRequestError,
    MaxRoundsExceededError,
    RateLimitError,
    RateLimitInfo,
    RecordedError,
    ResponseTooLargeError,
    Violation,
)
from aigateway.types import ChatCompletion

KEY = "sk-live-PICKLE-5ecret"
URL = "http://gateway.test/v1/chat/completions"
RATE_LIMITS = {"X-RateLimit-Limit": "60", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "9"}
ERROR_CLASSES = sorted(
    (
        cls
        for cls in vars(errors).values()
        if inspect.isclass(cls)
        and issubclass(cls, BaseException)
        and cls.__module__ == errors.__name__
    ),
    key=lambda cls: cls.__name__,
)


def keyed_request() -> httpx.Request:
    return httpx.Request(
        "POST", URL, headers={"Authorization": f"Bearer {KEY}"}, json={"model": "m"}
    )


def build(cls: type[BaseException]) -> BaseException:
    """An instance of ``cls`` with every attribute it has set to something worth checking."""
    request = keyed_request()
    if issubclass(cls, APIStatusError):
        body = {"error": {"message": "no", "type": "t", "code": "c", "param": "temperature"}}
        headers = {"x-request-id": "req_7", **RATE_LIMITS}
        response = httpx.Response(429, json=body, headers=headers, request=request)
        status_error = cls("no", response=response, body=body, error_type="t", code="c", attempts=3)
        status_error.retry_after = 90.0
        return status_error
    if issubclass(cls, APIResponseValidationError):
        return cls(
            "bad shape", body=b"<html/>", status_code=200, headers={"X-A": "1"}, request=request
        )
    if issubclass(cls, IncompleteStreamError):
        return cls("cut", chunks=[{"n": 1}, {"n": 2}], received=7, request=request)
    if issubclass(cls, ResponseTooLargeError):
        limits = {"limit": 100, "limit_name": "max_response_bytes", "received": 101}
        return cls("too large", **limits, status_code=200, headers={"X-A": "1"}, request=request)
    if issubclass(cls, APIError):
        return cls("refused", request=request)
    if issubclass(cls, InvalidRequestError):
        return cls([Violation("temperature", 9, "at most 2"), Violation("n", 0, "at least 1")])
    if issubclass(cls, MaxRoundsExceededError):
        completion = ChatCompletion.model_validate({"id": "c1", "model": "m", "choices": []})
        return cls(3, completion, [{"role": "user", "content": "hi"}])
    if issubclass(cls, RecordedError):
        return cls("NotFoundError", "no such model", 404)
    return cls("something")


@pytest.mark.parametrize("cls", ERROR_CLASSES, ids=lambda cls: cls.__name__)
def test_every_error_pickles_without_the_key(cls: type[BaseException]) -> None:
    error = build(cls)
    data = pickle.dumps(error)
    assert KEY.encode() not in data
    restored = pickle.loads(data)

    assert type(restored) is cls
    assert str(restored) == str(error)
    assert restored.args == error.args
    for name, value in vars(error).items():
        if name not in ("request", "response"):
            assert getattr(restored, name) == value, name
    request = getattr(restored, "request", None)
    if request is not None:
        assert request.headers["authorization"] == "Bearer <redacted>"
        assert (request.method, request.url, request.content) == ("POST", URL, b'{"model":"m"}')
    if isinstance(error, APIStatusError):
        assert restored.response.status_code == error.status_code
        assert restored.response.content == error.response.content
        assert restored.response.request.headers["authorization"] == "Bearer <redacted>"
    original_request = getattr(error, "request", None)
    if original_request is not None:  # pickling redacts a copy, never the error itself
        assert original_request.headers["authorization"] == f"Bearer {KEY}"


def test_the_enumeration_found_the_whole_tree() -> None:
    names = {cls.__name__ for cls in ERROR_CLASSES}
    assert {"AIGatewayError", "ConflictError", "RateLimitError", "StreamTimeoutError"} <= names
    assert all(issubclass(cls, AIGatewayError) for cls in ERROR_CLASSES)


def test_status_errors_keep_what_tests_read() -> None:
    error = build(RateLimitError)
    assert isinstance(error, RateLimitError)
    restored = pickle.loads(pickle.dumps(error))
    assert restored.param == "temperature"
    assert restored.request_id == "req_7"
    assert restored.attempts == 3
    assert restored.retry_after == 90.0
    assert restored.rate_limit == RateLimitInfo(limit=60, remaining=0, reset=9)
    assert isinstance(restored.headers, httpx.Headers)


def test_an_unread_reply_and_a_streamed_request_body_still_pickle() -> None:
    error = build(RateLimitError)
    assert isinstance(error, RateLimitError)
    streamed = httpx.Request(
        "POST", URL, headers={"Authorization": f"Bearer {KEY}"}, content=iter([b"{}"])
    )
    error.response = httpx.Response(
        429, headers=RATE_LIMITS, content=iter([b"x"]), request=streamed
    )
    data = pickle.dumps(error)
    assert KEY.encode() not in data
    restored = pickle.loads(data)
    assert restored.response.status_code == 429
    assert restored.response.headers["x-ratelimit-limit"] == "60"
    assert restored.response.request.headers["authorization"] == "Bearer <redacted>"


@pytest.mark.parametrize(
    ("sent", "kept"), [(KEY, "<redacted>"), (f"  Basic {KEY}", "Basic <redacted>")]
)
def test_a_key_without_a_bearer_scheme_is_redacted_too(sent: str, kept: str) -> None:
    request = httpx.Request("GET", URL, headers={"Authorization": sent})
    data = pickle.dumps(errors.APIConnectionError("refused", request=request))
    assert KEY.encode() not in data
    assert pickle.loads(data).request.headers["authorization"] == kept


def test_what_cannot_be_pickled_is_left_out() -> None:
    error = IncompleteStreamError("cut", chunks=[1], partial=lambda: None)
    restored = pickle.loads(pickle.dumps(error))
    assert restored.partial is None
    assert restored.chunks == [1]


def raise_rate_limit_error() -> None:
    """Runs in a worker process."""
    raise build(RateLimitError)


def test_a_worker_process_raises_a_rate_limit_error_the_parent_can_catch() -> None:
    with ProcessPoolExecutor(
        max_workers=1, mp_context=multiprocessing.get_context("spawn")
    ) as pool:
        with pytest.raises(RateLimitError) as caught:
            pool.submit(raise_rate_limit_error).result(timeout=60)
        assert pool.submit(pow, 2, 10).result(timeout=60) == 1024  # the pool survived
    error: Any = caught.value
    assert error.status_code == 429
    assert error.rate_limit == RateLimitInfo(limit=60, remaining=0, reset=9)
    assert error.request.headers["authorization"] == "Bearer <redacted>"
