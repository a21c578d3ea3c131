"""instructor against the served mock: a pydantic model out of each mode that works with an
OpenAI-compatible chat API (tools, JSON, MD_JSON, JSON schema), sync and async, and a stream
of partial objects."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from .._integrations import import_integration
from .conftest import Served

instructor = import_integration("instructor", "compat")
openai = import_integration("openai", "compat")


class Contact(BaseModel):
    name: str = Field(min_length=2, max_length=40)
    email: str = Field(json_schema_extra={"format": "email"})
    role: Literal["admin", "editor", "viewer"]
    age: int = Field(ge=18, le=99)
    tags: list[str] = Field(min_length=1, max_length=3)


MODES = ["TOOLS", "JSON", "MD_JSON", "JSON_SCHEMA"]
REQUEST_SHAPE = {
    "TOOLS": lambda body: body["tool_choice"]["function"]["name"] == "Contact",
    "JSON": lambda body: body["response_format"] == {"type": "json_object"},
    "MD_JSON": lambda body: "response_format" not in body,
    "JSON_SCHEMA": lambda body: body["response_format"]["type"] == "json_schema",
}
"""How each mode asks for the object: the mock's path under test."""


def check(served: Served, mode: str, contact: Any) -> None:
    assert isinstance(contact, Contact)
    assert "@" in contact.email
    (body,) = served.chat_bodies()  # the first reply validated: no retry
    assert REQUEST_SHAPE[mode](body), body


@pytest.mark.parametrize("mode", MODES)
def test_each_mode_gives_a_valid_object(served: Served, mode: str) -> None:
    raw = openai.OpenAI(base_url=served.url, api_key=served.api_key, max_retries=0)
    with raw:
        client = instructor.from_openai(raw, mode=instructor.Mode[mode])
        contact = client.chat.completions.create(
            model="gpt-4o-mini",
            response_model=Contact,
            messages=[{"role": "user", "content": "Ada Lovelace, admin, ada@example.com"}],
            max_retries=1,
        )
    check(served, mode, contact)


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["TOOLS", "JSON"])
async def test_async_modes(served: Served, mode: str) -> None:
    raw = openai.AsyncOpenAI(base_url=served.url, api_key=served.api_key, max_retries=0)
    async with raw:
        client = instructor.from_openai(raw, mode=instructor.Mode[mode])
        contact = await client.chat.completions.create(
            model="gpt-4o-mini",
            response_model=Contact,
            messages=[{"role": "user", "content": "Ada Lovelace, admin, ada@example.com"}],
            max_retries=1,
        )
    check(served, mode, contact)


def test_partial_stream_ends_in_a_valid_object(served: Served) -> None:
    raw = openai.OpenAI(base_url=served.url, api_key=served.api_key, max_retries=0)
    with raw:
        client = instructor.from_openai(raw, mode=instructor.Mode.TOOLS)
        partials = list(
            client.chat.completions.create_partial(
                model="gpt-4o-mini",
                response_model=Contact,
                messages=[{"role": "user", "content": "Ada Lovelace, admin"}],
            )
        )
    assert len(partials) > 1
    Contact.model_validate(partials[-1].model_dump())
