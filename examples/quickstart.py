"""A chat completion against the bundled mock gateway: no key, no network."""

from aigateway.testing import MockGateway


def main() -> None:
    gateway = MockGateway(seed=42)
    with gateway.client() as client:
        reply = client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": "Say hello to a newcomer."}],
        )
        print(reply.text)
        assert reply.usage is not None
        print(f"({reply.usage.total_tokens} tokens, {client.remaining_credits} credits left)")


if __name__ == "__main__":
    main()
