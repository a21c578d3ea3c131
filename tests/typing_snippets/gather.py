"""Ten calls at once with asyncio.gather on one AsyncClient."""

import asyncio

from aigateway import AsyncClient
from aigateway.testing import MockGateway


async def ask(client: AsyncClient, question: str) -> str:
    reply = await client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": question}]
    )
    return reply.choices[0].message.content or ""


async def main() -> None:
    gateway = MockGateway(seed=1)
    async with gateway.async_client() as client:
        questions = [f"Question {n}" for n in range(10)]
        answers = await asyncio.gather(*(ask(client, q) for q in questions))
        for question, answer in zip(questions, answers, strict=True):
            print(question, "->", answer[:30])
        replies = await asyncio.gather(
            *(
                client.chat.completions.create(
                    model="gpt-4o-mini", messages=[{"role": "user", "content": q}]
                )
                for q in questions
            )
        )
        print(sum(r.usage.total_tokens for r in replies if r.usage))


asyncio.run(main())
