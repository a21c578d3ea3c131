"""What calls cost: the usage ledger, a credit budget, and fallback models."""

from aigateway import BudgetExceededError
from aigateway.testing import MockGateway

HELLO = [{"role": "user", "content": "Say hello."}]


def main() -> None:
    gateway = MockGateway(seed=7)
    with gateway.client(max_retries=0) as client:
        reply = client.chat.completions.create(model="gpt-4o", messages=HELLO)
        print("rate limit of this reply:", reply.rate_limit)

        # An unknown model: the call falls back to the next one.
        reply = client.chat.completions.create(
            model="gpt-5-preview", messages=HELLO, fallback_models=["gpt-4o-mini"]
        )
        assert reply.fallback is not None
        print("served by", reply.fallback.served_by, "after", len(reply.fallback.failed), "failure")

        limited = client.with_budget(max_credits=0.002)
        try:
            for _ in range(100):
                limited.chat.completions.create(model="gpt-4o", messages=HELLO)
        except BudgetExceededError as error:
            print(error)

        print(client.usage)


if __name__ == "__main__":
    main()
