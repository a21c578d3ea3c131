"""GET /models and GET /models/{id}, id spellings, and the replaceable catalogue."""

from __future__ import annotations

from urllib.parse import quote

import httpx
import pytest

from aigateway.testing import Catalogue, MockGateway, ModelSpec, default_catalogue
from aigateway.testing._core.catalogue import normalize_id

from ._helpers import user

DEFAULT_IDS = [spec.id for spec in default_catalogue()]


def test_list_has_the_eleven_default_models(client: httpx.Client) -> None:
    response = client.get("/models")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"object", "data"}
    assert body["object"] == "list"
    assert [model["id"] for model in body["data"]] == DEFAULT_IDS
    assert len(body["data"]) == 11
    assert len({model["id"] for model in body["data"]}) == 11


def test_default_catalogue_has_three_families_and_two_prefixed_ids() -> None:
    specs = default_catalogue()
    prefixed = [spec for spec in specs if "/" in spec.id]
    assert len(prefixed) == 2
    assert {spec.owned_by for spec in specs if "/" not in spec.id} == {
        "openai",
        "anthropic",
        "google",
    }
    assert any(spec.vision for spec in specs)
    assert any(not spec.vision for spec in specs)
    for spec in specs:
        assert 0.0005 <= spec.input_price_per_1k <= 0.075
        assert 0.0005 <= spec.output_price_per_1k <= 0.075


def test_list_entries_have_spec_fields_and_our_extras(client: httpx.Client) -> None:
    for entry, spec in zip(client.get("/models").json()["data"], default_catalogue(), strict=True):
        assert entry == {
            "id": spec.id,
            "object": "model",
            "created": spec.created,
            "owned_by": spec.owned_by,
            "pricing": {
                "input_per_1k": spec.input_price_per_1k,
                "output_per_1k": spec.output_price_per_1k,
                "unit": "credits",
            },
            "capabilities": {
                "vision": spec.vision,
                "tools": spec.tools,
                "json_mode": True,
                "streaming": True,
            },
            "context_window": spec.context_window,
        }
        assert isinstance(entry["created"], int)


@pytest.mark.parametrize("model_id", DEFAULT_IDS)
def test_retrieve_each_model(client: httpx.Client, model_id: str) -> None:
    response = client.get(f"/models/{model_id}")
    assert response.status_code == 200
    listed = {m["id"]: m for m in client.get("/models").json()["data"]}
    assert response.json() == listed[model_id]


@pytest.mark.parametrize(
    "path",
    [
        "/models/meta-llama/llama-3.1-70b-instruct",
        "/models/meta-llama%2Fllama-3.1-70b-instruct",
        "/models/meta-llama%2fllama-3.1-70b-instruct",
        "/models/" + quote("meta-llama/llama-3-1-70b-instruct", safe=""),
    ],
)
def test_retrieve_a_provider_prefixed_id_raw_or_encoded(client: httpx.Client, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 200
    assert response.json()["id"] == "meta-llama/llama-3.1-70b-instruct"
    assert response.json()["owned_by"] == "meta-llama"


@pytest.mark.parametrize(
    ("asked", "canonical"),
    [
        ("claude-3.5-sonnet", "claude-3-5-sonnet"),
        ("claude-3-5-sonnet", "claude-3-5-sonnet"),
        ("gpt-3-5-turbo", "gpt-3.5-turbo"),
        ("gpt-3.5-turbo", "gpt-3.5-turbo"),
        ("gemini-1-5-pro", "gemini-1.5-pro"),
        ("GPT-4o", "gpt-4o"),
        ("Claude-3.5-Sonnet", "claude-3-5-sonnet"),
        ("meta-llama/llama-3-1-70b-instruct", "meta-llama/llama-3.1-70b-instruct"),
    ],
)
def test_both_id_spellings_are_accepted_and_echoed_canonically(
    client: httpx.Client, asked: str, canonical: str
) -> None:
    assert client.get(f"/models/{asked}").json()["id"] == canonical
    chat = client.post("/chat/completions", json={"model": asked, "messages": user()})
    assert chat.status_code == 200
    assert chat.json()["model"] == canonical


def test_unknown_model_is_404_naming_the_closest_ids(client: httpx.Client) -> None:
    response = client.get("/models/gpt-4-omni")
    assert response.status_code == 404
    error = response.json()["error"]
    assert error["code"] == "model_not_found"
    assert error["type"] == "invalid_request_error"
    assert error["param"] == "model"
    assert "gpt-4-omni" in error["message"]
    assert "gpt-4o" in error["message"]
    named = [i for i in DEFAULT_IDS if i in error["message"].split("closest known ids: ")[1]]
    assert 1 <= len(named) <= 3


def test_a_far_away_unknown_id_still_gets_an_error_body(client: httpx.Client) -> None:
    response = client.get("/models/zzzzzzzzzzzzzzzzzzzz")
    assert response.status_code == 404
    assert "GET /models" in response.json()["error"]["message"]


def test_closest_and_find() -> None:
    catalogue = Catalogue(default_catalogue())
    assert catalogue.closest("claude-3-sonnet")[0] in {"claude-3-5-sonnet", "claude-3-opus"}
    assert "claude-3-5-sonnet" in catalogue.closest("claude-3-sonnet")
    assert len(catalogue.closest("gpt")) <= 3
    assert catalogue.find("GEMINI-1.5-FLASH") is catalogue["gemini-1.5-flash"]
    assert catalogue.find("gemini-15-flash") is None
    assert normalize_id("Claude-3.5-Sonnet") == "claude-3-5-sonnet"
    assert normalize_id("v1.2.3") == "v1-2-3"
    assert normalize_id("a.b") == "a.b"


def test_catalogue_can_be_replaced(gateway: MockGateway, client: httpx.Client) -> None:
    gateway.catalogue = [ModelSpec("house-model-1.0", "us", 1, input_price_per_1k=0.001)]
    ids = [m["id"] for m in client.get("/models").json()["data"]]
    assert ids == ["house-model-1.0"]
    reply = client.post("/chat/completions", json={"model": "house-model-1-0", "messages": user()})
    assert reply.json()["model"] == "house-model-1.0"
    assert client.get("/models/gpt-4o").status_code == 404


def test_catalogue_is_a_mutable_mapping(gateway: MockGateway, client: httpx.Client) -> None:
    gateway.catalogue.add(ModelSpec("acme/tiny", "acme", 5))
    gateway.catalogue["acme/big"] = ModelSpec("acme/big", "acme", 6, vision=True)
    del gateway.catalogue["gpt-4o"]
    ids = [m["id"] for m in client.get("/models").json()["data"]]
    assert len(ids) == 12
    assert ids[-2:] == ["acme/tiny", "acme/big"]
    assert "gpt-4o" not in ids
    assert client.get("/models/acme%2Ftiny").json()["owned_by"] == "acme"
    with pytest.raises(ValueError, match="differs"):
        gateway.catalogue["other"] = ModelSpec("acme/tiny", "acme", 5)
    with pytest.raises(TypeError):
        gateway.catalogue["x"] = "x"  # type: ignore[assignment]


def test_catalogue_given_at_construction() -> None:
    gateway = MockGateway(catalogue=[ModelSpec("only", "me", 1)])
    assert list(gateway.catalogue) == ["only"]
    assert len(MockGateway().catalogue) == 11


def test_default_catalogue_returns_a_fresh_list() -> None:
    first = default_catalogue()
    first.clear()
    assert len(default_catalogue()) == 11
