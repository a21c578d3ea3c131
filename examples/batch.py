"""A batch of chat requests against the bundled mock gateway, interrupted and resumed from its
checkpoint file: no key, no network."""

import tempfile
from pathlib import Path
from typing import Any

import aigateway
from aigateway import ChatCompletion, Client
from aigateway.testing import MockGateway


def main() -> None:
    gateway = MockGateway(seed=42)
    items: list[Any] = [
        {
            "id": f"q{n}",
            "model": "gpt-4o-mini",
            "messages": [{"role": "user", "content": f"Fact {n}"}],
        }
        for n in range(30)
    ]
    items.append({"id": "bad", "model": "gpt-4o-mini", "messages": "not a list"})

    def stop_at_q12(client: Client, item: dict[str, Any]) -> ChatCompletion:
        if item["id"] == "q12":
            raise KeyboardInterrupt  # as if Ctrl-C was pressed
        return client.chat.completions.create(model=item["model"], messages=item["messages"])

    with tempfile.TemporaryDirectory() as folder, gateway.client() as client:
        checkpoint = Path(folder) / "facts.jsonl"
        try:
            aigateway.run_batch(
                client, items, concurrency=4, call=stop_at_q12, checkpoint=checkpoint
            )
        except KeyboardInterrupt:
            done = len(checkpoint.read_text().splitlines())
            print(f"interrupted with {done} items in {checkpoint.name}")

        sent_before = len(gateway.requests)
        results = aigateway.run_batch(client, items, concurrency=4, checkpoint=checkpoint)
        print(results, f"({len(gateway.requests) - sent_before} requests sent on resume)")
        for failed in results.failed:
            print(f"{failed.id}: {failed.error}")
        print(f"first reply: {results[0].value.text[:60]!r}")
        print(f"credits spent on resume: {results.credits_spent}")


if __name__ == "__main__":
    main()
