"""run_tools with a plain-dict conversation, and a batch of request dicts."""

import aigateway
from aigateway import ChatCompletion, run_tools, tool
from aigateway.testing import MockGateway


@tool
def get_weather(city: str) -> str:
    """Get today's weather for a city."""
    return f"{city}: 18 °C"


gateway = MockGateway(seed=1)
messages = [{"role": "user", "content": "Weather in Paris?"}]
with gateway.client() as client:
    result = run_tools(client, model="gpt-4o", messages=messages, tools=[get_weather])
    text: str | None = result.text
    rounds: int = result.rounds
    print(text, rounds)

    items = [{"model": "gpt-4o-mini", "messages": messages} for _ in range(3)]
    batch = aigateway.run_batch(client, items, progress=False)
    for reply in batch.ok:
        completion: ChatCompletion = reply.value
        print(completion.text)
