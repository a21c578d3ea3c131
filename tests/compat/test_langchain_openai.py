"""langchain-openai's ``ChatOpenAI`` against the served mock: ``invoke``, ``stream``,
``bind_tools`` through a tool round, and ``with_structured_output`` in each of its methods."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from .._integrations import import_integration
from .._paths import ROOT
from .conftest import Served

langchain_openai = import_integration("langchain_openai", "compat")
messages = import_integration("langchain_core.messages", "compat")
output_parsers = import_integration("langchain_core.output_parsers", "compat")


class Movie(BaseModel):
    """A film and what the viewer made of it."""

    title: str
    year: int = Field(ge=1888, le=2030)
    rating: Literal["good", "bad"]


class GetWeather(BaseModel):
    """The weather in a city."""

    city: str = Field(examples=["Oslo"])


def chat_model(served: Served, **options: Any) -> Any:
    return langchain_openai.ChatOpenAI(
        model="gpt-4o-mini", base_url=served.url, api_key=served.api_key, max_retries=0, **options
    )


def test_invoke_and_stream(served: Served) -> None:
    model = chat_model(served)
    whole = model.invoke("Hi")
    assert whole.content
    assert whole.usage_metadata["total_tokens"] > 0
    pieces = list(model.stream("Hi"))
    assert len(pieces) > 1
    assert "".join(piece.content for piece in pieces) == whole.content


@pytest.mark.anyio
async def test_ainvoke_and_astream(served: Served) -> None:
    model = chat_model(served)
    whole = await model.ainvoke("Hi")
    streamed = "".join([piece.content async for piece in model.astream("Hi")])
    assert streamed == whole.content


def test_bind_tools_through_a_tool_round(served: Served) -> None:
    model = chat_model(served).bind_tools([GetWeather])
    conversation: list[Any] = [messages.HumanMessage("Weather in Oslo?")]
    first = model.invoke(conversation)
    (call,) = first.tool_calls
    assert call["name"] == "GetWeather"
    assert call["args"] == {"city": "Oslo"}
    conversation += [first, messages.ToolMessage("12 degrees, clear", tool_call_id=call["id"])]
    second = model.invoke(conversation)
    assert not second.tool_calls
    assert "12 degrees, clear" in second.content


@pytest.mark.parametrize("method", ["function_calling", "json_schema", "json_mode"])
def test_with_structured_output(served: Served, method: str) -> None:
    structured = chat_model(served).with_structured_output(Movie, method=method)
    prompt = "Rate the film Alien (1979)."
    if method == "json_mode":  # the schema travels in the prompt
        parser = output_parsers.PydanticOutputParser(pydantic_object=Movie)
        prompt += "\n" + parser.get_format_instructions()
    movie = structured.invoke(prompt)
    assert isinstance(movie, Movie)
    (body,) = served.chat_bodies()
    if method == "function_calling":
        assert body["tool_choice"]["function"]["name"] == "Movie"
    else:
        assert body["response_format"]["type"] == method.replace("_mode", "_object")


def test_structured_output_with_raw_and_a_stream(served: Served) -> None:
    structured = chat_model(served).with_structured_output(
        Movie, method="json_schema", include_raw=True
    )
    result = structured.invoke("Rate the film Alien (1979).")
    assert result["parsing_error"] is None
    assert isinstance(result["parsed"], Movie)
    tool_stream = chat_model(served).with_structured_output(Movie, method="function_calling")
    streamed = list(tool_stream.stream("Rate the film Alien (1979)."))
    assert isinstance(streamed[-1], Movie)


def test_the_docs_example_runs_as_it_stands(capsys: pytest.CaptureFixture[str]) -> None:
    """docs/testing.md's example, shown as text there (langchain-openai is not in the
    development install), run here as a reader pastes it."""
    page = (ROOT / "docs" / "testing.md").read_text(encoding="utf-8")
    after = page.split("This runs as pasted with `langchain-openai` installed", 1)[1]
    code = after.split("```text\n", 1)[1].split("```", 1)[0]
    exec(compile(code, "docs/testing.md", "exec"), {"__name__": "__main__"})
    assert capsys.readouterr().out.startswith("Movie ")
