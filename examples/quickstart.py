"""A chat completion against the bundled mock gateway: no key, no network.

The mock is not a language model: it answers with filler words drawn from a small vocabulary,
the same reply every time for the same request (and seed), so that tests can compare replies
from run to run. A test that needs a particular answer scripts it with
``gateway.enqueue_reply(...)``, as the second call here does.
"""

from aigateway.testing import MockGateway


def main() -> None:
    gateway = MockGateway(seed=42)
    with gateway.client() as client:
        messages = [{"role": "user", "content": "Say hello to a newcomer."}]
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages)
        print("The mock's reply: deterministic filler words (the mock writes no sentences;")
        print("the same request always gets this same reply):")
        print(f"  {reply.text}")
        assert reply.usage is not None
        print(f"  ({reply.usage.total_tokens} tokens, {client.remaining_credits} credits left)")

        gateway.enqueue_reply("Hello, newcomer!")
        scripted = client.chat.completions.create(model="gpt-4o-mini", messages=messages)
        print(f"A reply scripted with gateway.enqueue_reply(...): {scripted.text}")


if __name__ == "__main__":
    main()
