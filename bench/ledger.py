"""``python -m bench.ledger``: does ``client.usage`` equal the mock's own ledger, to the last digit?

It serves the SDK's `MockGateway` on loopback (unlimited rate limits, a million credits) and
sends ``--calls`` chat completions (22,000) with ``--concurrency`` in flight (200) through ONE
fresh `aigateway.AsyncClient`, over three models of the default catalogue (whose prices make
costs of seven decimals), one call in ten a stream read to its end. It runs this twice:

- **first reply states its cost**: the client's first call is a ``/run`` call, whose reply
  states what it cost and the balance after it; from then on every chat reply's cost is the
  fall of the balance. The client's total must equal the mock's spend exactly, as the mock's
  replies write balances (6 decimals); the run exits 1 otherwise.
- **first reply is a chat completion** (the case users meet first): that reply states only the
  balance after it, so its own cost cannot be known (``usage.uncounted`` is 1). Reported: the
  difference, which is that one call's cost.

The mock keeps exact decimal balances; its replies round them to 6 decimals, so that is the
last digit a client can have. Speed is printed, never judged.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import anyio

MODELS = ("gpt-4o-mini", "gpt-4o", "claude-3-haiku")
FIRST_RUN = ("tavily/search", {"query": "what the first call costs"})


@dataclass
class Outcome:
    """One scenario: what the client counted against what the mock charged."""

    name: str
    calls: int
    seconds: float
    client: Decimal
    uncounted: int
    mock_exact: Decimal
    mock_stated: Decimal
    first_charge: Decimal

    @property
    def difference(self) -> Decimal:
        return self.mock_stated - self.client


def _stated(amount: Decimal) -> Decimal:
    """A balance as the mock's replies write it (`credits_value`: a float of 6 decimals)."""
    from aigateway.testing._core.billing import credits_value

    return Decimal(repr(credits_value(amount)))


async def _calls(client: Any, count: int, concurrency: int) -> None:
    limiter = anyio.CapacityLimiter(concurrency)
    chat = client.chat.completions

    async def one(index: int) -> None:
        messages = [{"role": "user", "content": "hello " * (1 + index % 7)}]
        model = MODELS[index % len(MODELS)]
        async with limiter:
            if index % 10 == 9:
                async with await chat.create(model=model, messages=messages, stream=True) as s:
                    async for _chunk in s:
                        pass
            else:
                await chat.create(model=model, messages=messages)

    async with anyio.create_task_group() as group:
        for index in range(count):
            group.start_soon(one, index)


async def _scenario(url: str, gateway: Any, name: str, calls: int, concurrency: int) -> Outcome:
    import httpx

    from aigateway import AsyncClient

    account = gateway.create_account(1_000_000)
    before = gateway.ledger.balance(account.key)
    charges_before = len(gateway.charges)
    # the server shares this process (and its GIL): connecting can be slow under load
    timeout = httpx.Timeout(600.0, connect=60.0)
    started = time.perf_counter()
    async with AsyncClient(api_key=account.key, base_url=url, timeout=timeout) as client:
        if name.startswith("first reply states"):
            await client.run(*FIRST_RUN)
            calls -= 1
        await _calls(client, calls, concurrency)
        counted, uncounted = client.usage.exact_credits, client.usage.total().uncounted
    seconds = time.perf_counter() - started
    after = gateway.ledger.balance(account.key)
    first = gateway.charges[charges_before]
    return Outcome(
        name=name,
        calls=len(gateway.charges) - charges_before,
        seconds=seconds,
        client=counted,
        uncounted=uncounted,
        mock_exact=before - after,
        mock_stated=_stated(before) - _stated(after),
        first_charge=Decimal(repr(first.amount)),
    )


def run(calls: int, concurrency: int, time_limit: float) -> list[Outcome]:
    """Both scenarios against one served mock."""
    from aigateway.testing import MockGateway

    gateway = MockGateway(rate_limits="unlimited", max_logged_requests=0)
    names = ("first reply states its cost", "first reply is a chat completion")

    async def both(url: str) -> list[Outcome]:
        with anyio.fail_after(time_limit):
            return [await _scenario(url, gateway, name, calls, concurrency) for name in names]

    with gateway.serve() as url:
        return anyio.run(both, url)


def render(outcomes: list[Outcome]) -> str:
    lines = []
    for outcome in outcomes:
        ppm = outcome.difference / outcome.mock_stated * 1_000_000 if outcome.mock_stated else 0
        lines += [
            f"{outcome.name}: {outcome.calls:,} calls in {outcome.seconds:.1f} s",
            f"  mock charged (exact)          {outcome.mock_exact}",
            f"  mock charged (as stated)      {outcome.mock_stated}",
            f"  client.usage.exact_credits    {outcome.client}  (uncounted: {outcome.uncounted})",
            f"  difference                    {outcome.difference} ({ppm:.2f} ppm); "
            f"the first call cost {outcome.first_charge}",
        ]
    exact = outcomes[0].difference == 0
    lines.append("invariant (the first case is exact): " + ("holds" if exact else "FAILS"))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ledger", description=__doc__)
    parser.add_argument("--calls", type=int, default=22_000, help="calls per case (22,000)")
    parser.add_argument("--concurrency", type=int, default=200, help="in flight (200)")
    parser.add_argument("--time-limit", type=float, default=600.0, help="seconds (600)")
    options = parser.parse_args(argv)
    print(
        f"ledger: {options.calls:,} calls at {options.concurrency} in flight, twice, one fresh "
        "AsyncClient each, served MockGateway on loopback",
        flush=True,
    )
    try:
        outcomes = run(options.calls, options.concurrency, options.time_limit)
    except TimeoutError:
        print(f"ledger: stopped after the {options.time_limit:.0f} s limit", file=sys.stderr)
        return 1
    print(render(outcomes))
    return 0 if outcomes[0].difference == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
