"""The httpx clients the SDK makes itself keep cookies as httpx does (a load balancer's sticky
cookie is sent back), and skip httpx's urllib copies for a reply that sets none."""

from __future__ import annotations

import http.cookiejar

import httpx
import pytest

from aigateway import AsyncClient, Client
from aigateway._http.clients import AsyncHTTPClient, HTTPClient, ReplyCookies

from ..conftest import CHAT_REPLY, resolve

pytestmark = pytest.mark.anyio

HELLO = [{"role": "user", "content": "hello"}]


def client_for(kind: str, transport: httpx.MockTransport) -> Client | AsyncClient:
    options = {"api_key": "sk-test", "base_url": "https://gateway.test/v1", "max_retries": 0}
    if kind == "sync":
        return Client(transport=transport, **options)  # type: ignore[arg-type]
    return AsyncClient(transport=transport, **options)  # type: ignore[arg-type]


@pytest.fixture
def jar_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many Set-Cookie headers each read of a reply by the standard library's jar saw."""
    reads: list[int] = []
    original = http.cookiejar.CookieJar.extract_cookies

    def spy(self: http.cookiejar.CookieJar, response: object, request: object) -> None:
        reads.append(len(response.info().get_all("Set-Cookie") or []))  # type: ignore[attr-defined]
        original(self, response, request)  # type: ignore[arg-type]

    monkeypatch.setattr(http.cookiejar.CookieJar, "extract_cookies", spy)
    return reads


async def test_a_sticky_cookie_is_kept_and_sent_back(kind: str, jar_reads: list[int]) -> None:
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        headers = {"SET-COOKIE": "lb=node-7; Path=/"} if len(sent) == 1 else {}
        return httpx.Response(200, json=CHAT_REPLY, headers=headers)

    client = client_for(kind, httpx.MockTransport(handler))
    for _ in range(3):
        await resolve(client.chat.completions.create(model="gpt-4o", messages=HELLO))
    await resolve(client.close())
    assert "cookie" not in sent[0].headers
    assert [request.headers.get("cookie") for request in sent[1:]] == ["lb=node-7"] * 2
    assert jar_reads == [1]  # only the reply that set one was read


async def test_replies_without_cookies_are_not_copied_for_the_jar(
    kind: str, jar_reads: list[int]
) -> None:
    client = client_for(
        kind, httpx.MockTransport(lambda request: httpx.Response(200, json=CHAT_REPLY))
    )
    for _ in range(3):
        await resolve(client.chat.completions.create(model="gpt-4o", messages=HELLO))
    await resolve(client.close())
    assert jar_reads == []


def test_the_sdk_makes_its_http_clients_with_the_jar_and_keeps_a_given_one() -> None:
    with Client(api_key="sk-test", base_url="https://gateway.test/v1") as client:
        assert isinstance(client._pipeline.http_client, HTTPClient)
        assert isinstance(client._pipeline.http_client.cookies, ReplyCookies)
    own = httpx.Client()
    with Client(api_key="sk-test", base_url="https://gateway.test/v1", http_client=own) as client:
        assert client._pipeline.http_client is own
        assert type(own.cookies) is httpx.Cookies
    own.close()


@pytest.mark.parametrize("client_type", [HTTPClient, AsyncHTTPClient])
def test_cookies_given_or_set_later_stay_in_the_jar(
    client_type: type[HTTPClient] | type[AsyncHTTPClient],
) -> None:
    client = client_type(cookies={"team": "search"})
    assert isinstance(client.cookies, ReplyCookies)
    assert dict(client.cookies) == {"team": "search"}
    client.cookies = {"team": "ads"}  # type: ignore[assignment]
    assert isinstance(client.cookies, ReplyCookies)
    assert dict(client.cookies) == {"team": "ads"}
    request = client.build_request("GET", "https://gateway.test/v1/models")
    assert request.headers["cookie"] == "team=ads"


def test_a_set_cookie2_header_is_still_read(jar_reads: list[int]) -> None:
    jar = ReplyCookies()
    request = httpx.Request("GET", "https://gateway.test/v1/models")
    jar.extract_cookies(httpx.Response(200, headers={"Set-Cookie2": "a=1"}, request=request))
    jar.extract_cookies(httpx.Response(200, headers={"X-Other": "b=2"}, request=request))
    assert jar_reads == [0]  # read (the standard jar then ignores Set-Cookie2 by default)
