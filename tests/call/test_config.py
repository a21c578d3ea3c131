"""Client settings: environment fallback, clear errors at construction, no key in any repr."""

from __future__ import annotations

import gc
import logging
import warnings

import httpx
import pytest

from aigateway import AsyncClient, Client, ConfigurationError

from .._stack import http
from ..conftest import API_KEY, BASE_URL


def test_settings_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIGATEWAY_API_KEY", API_KEY)
    monkeypatch.setenv("AIGATEWAY_BASE_URL", "https://env.test/v1")
    with Client() as client:
        assert str(client.base_url) == "https://env.test/v1/"
        assert client.config.api_key.reveal() == API_KEY


def test_arguments_win_over_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIGATEWAY_API_KEY", "from-env")
    monkeypatch.setenv("AIGATEWAY_BASE_URL", "https://env.test/v1")
    with Client(api_key="from-arg", base_url="https://arg.test/v1") as client:
        assert client.config.api_key.reveal() == "from-arg"
        assert client.base_url.host == "arg.test"


@pytest.mark.parametrize("client_type", [Client, AsyncClient])
def test_missing_key_is_a_clear_error_at_construction(
    monkeypatch: pytest.MonkeyPatch, client_type: type[Client] | type[AsyncClient]
) -> None:
    monkeypatch.delenv("AIGATEWAY_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="AIGATEWAY_API_KEY") as caught:
        client_type(base_url=BASE_URL)
    assert isinstance(caught.value, ValueError)


def test_missing_base_url_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AIGATEWAY_BASE_URL", raising=False)
    with pytest.raises(ConfigurationError, match="AIGATEWAY_BASE_URL"):
        Client(api_key=API_KEY)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://gw.test/v1", "https://gw.test/v1/"),
        ("https://gw.test/v1/", "https://gw.test/v1/"),
        ("http://127.0.0.1:8080/proxy/v1//", "http://127.0.0.1:8080/proxy/v1/"),
    ],
)
def test_base_url_tolerates_a_trailing_slash(url: str, expected: str) -> None:
    with Client(api_key=API_KEY, base_url=url) as client:
        assert str(client.base_url) == expected


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("https://gw.test", "must end in the version segment /v1"),
        ("https://gw.test/v2", "must end in the version segment /v1"),
        ("https://gw.test/api", "https://gw.test/api/v1"),
        ("gw.test/v1", "absolute http:// or https://"),
        ("ftp://gw.test/v1", "absolute http:// or https://"),
    ],
)
def test_malformed_base_url_is_a_clear_error(url: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match="base_url") as caught:
        Client(api_key=API_KEY, base_url=url)
    assert message in str(caught.value)


def test_bad_max_retries_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="max_retries"):
        Client(api_key=API_KEY, base_url=BASE_URL, max_retries=-1)


def test_wrong_kind_of_http_client_is_refused() -> None:
    with (
        httpx.Client() as sync_http,
        pytest.raises(ConfigurationError, match=r"httpx\.AsyncClient"),
    ):
        AsyncClient(api_key=API_KEY, base_url=BASE_URL, http_client=sync_http)  # type: ignore[arg-type]


def test_key_never_in_repr_str_or_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with Client(api_key=API_KEY, base_url=BASE_URL) as client:
        for text in (repr(client), str(client), repr(client.config), str(client.config.api_key)):
            assert API_KEY not in text
            assert "redacted" in text
        assert API_KEY not in repr(client.with_options(max_retries=0))
    assert API_KEY not in caplog.text


def test_user_supplied_http_client_is_not_closed() -> None:
    http_client = httpx.Client()
    with Client(api_key=API_KEY, base_url=BASE_URL, http_client=http_client):
        pass
    assert not http_client.is_closed
    http_client.close()


def test_owned_http_client_is_closed() -> None:
    client = Client(api_key=API_KEY, base_url=BASE_URL)
    client.close()
    assert client.is_closed
    assert client._pipeline.http_client.is_closed


@pytest.mark.anyio
async def test_async_close_closes_the_pool() -> None:
    async with AsyncClient(api_key=API_KEY, base_url=BASE_URL) as client:
        pass
    assert client.is_closed
    assert client._pipeline.http_client.is_closed


@pytest.mark.parametrize("client_type", [Client, AsyncClient])
def test_unclosed_client_warns_when_collected(
    client_type: type[Client] | type[AsyncClient],
) -> None:
    client = client_type(api_key=API_KEY, base_url=BASE_URL)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del client
        gc.collect()
    assert any(
        issubclass(w.category, ResourceWarning) and "without being closed" in str(w.message)
        for w in caught
    )
    # silence the pool's own warning, if any
    gc.collect()


def test_closed_client_does_not_warn() -> None:
    client = Client(api_key=API_KEY, base_url=BASE_URL)
    client.close()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del client
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]


def test_with_options_shares_the_pool_and_changes_settings() -> None:
    with Client(api_key=API_KEY, base_url=BASE_URL, max_retries=2) as client:
        other = client.with_options(max_retries=0, timeout=5.0, default_headers={"X-A": "1"})
        assert other.config.max_retries == 0
        assert other.config.timeout == http.Timeout(5.0)
        assert other.config.default_headers == {"X-A": "1"}
        assert client.config.max_retries == 2
        assert other._pipeline.http_client is client._pipeline.http_client
        assert other.chat.completions._pipeline is other._pipeline
        assert client.chat.completions._pipeline is client._pipeline
