"""A tool loop against the bundled mock gateway: the model calls two tools, then answers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aigateway import run_tools, tool
from aigateway.testing import MockGateway


@tool
def get_weather(city: str, days: int = 1) -> str:
    """Get the weather forecast for a city.

    Args:
        city: The city's name, in English.
        days: How many days ahead.
    """
    return f"{city}: sunny for {days} day(s)"


@tool
async def local_time(city: str) -> str:
    """The local time in a city."""
    return f"{city}: 14:05"


def scripted_model(request: Mapping[str, Any]) -> Any:
    """Stands in for the model: calls both tools, then answers with their results."""
    last = request["messages"][-1]
    if last["role"] == "user":
        return [
            {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}},
            {"name": "local_time", "arguments": {"city": "Paris"}},
        ]
    results = [m["content"] for m in request["messages"] if m["role"] == "tool"]
    return "Here is what I found: " + "; ".join(results)


def main() -> None:
    gateway = MockGateway(seed=42)
    gateway.reply_with(scripted_model)
    with gateway.client() as client:
        result = run_tools(
            client,
            model="gpt-4o",
            messages=[{"role": "user", "content": "Weather and time in Paris?"}],
            tools=[get_weather, local_time],
        )
    for message in result.messages:
        print(message)
    print(f"{result.rounds} rounds: {result.text}")


if __name__ == "__main__":
    main()
