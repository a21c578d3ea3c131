"""The async client: the same calls with await, async for and async with."""

import asyncio

from aigateway import AsyncClient, ChatCompletion
from aigateway.testing import MockGateway


async def main(client: AsyncClient) -> None:
    history = [{"role": "user", "content": "Hi"}]
    reply = await client.chat.completions.create(model="gpt-4o-mini", messages=history)
    completion: ChatCompletion = reply
    stream = await client.chat.completions.create(
        model="gpt-4o-mini", messages=[*history, reply.choices[0].message], stream=True
    )
    async with stream:
        async for chunk in stream:
            if chunk.choices:
                content: str | None = chunk.choices[0].delta.content
                print(content or "", end="")
    print(completion.text)
    async with client.chat.completions.stream(model="gpt-4o-mini", messages=history) as helper:
        async for text in helper.text_stream:
            piece: str = text
            print(piece, end="")
    print()


gateway = MockGateway(seed=1)


async def run() -> None:
    async with gateway.async_client() as client:
        await main(client)


asyncio.run(run())
