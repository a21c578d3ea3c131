"""``python -m aigateway.testing.scorecard``: a client through every fault the mock injects.

It serves a `MockGateway` on loopback (needs the ``server`` extra) and, for each fault the
mock can inject (a 5xx then success, a 429 with ``Retry-After``, a dropped connection, a slow
reply, a stream cut half-way, a malformed chunk, truncated JSON, a proxy's HTML page, a 402,
...), makes one call and prints what was expected, what happened, how many attempts reached
the mock (from its request log) and how long it took. ``--client openai`` runs the official
``openai`` package (``openai.OpenAI(base_url=..., api_key=..., max_retries=2)``) against the
same faults and the same expectations; ``--markdown`` prints a Markdown table. It exits 0
when every row passes, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from aigateway import errors
from aigateway.testing import MockGateway
from aigateway.testing._clients import served_client

__all__ = ["Row", "Scenario", "main", "run_scorecard"]

MESSAGES = [{"role": "user", "content": "Hello"}]
MODEL = "gpt-4o-mini"
TIMEOUT = 0.5
"""The clients' read timeout in seconds; a slow reply waits a little longer than this."""
SLOW = 1.0


@dataclass(frozen=True)
class Scenario:
    """One fault: how to set it up on the gateway, the call made, and what a user expects.

    ``expected`` is ``"ok"`` (the call returns a whole reply) or an error kind of `KINDS`
    (``also``: other kinds that say the same to a user); ``attempts`` the requests the mock
    should receive.
    """

    fault: str
    setup: Callable[[MockGateway], object]
    stream: bool
    expected: str
    attempts: int
    no_credits: bool = False
    also: tuple[str, ...] = ()


@dataclass(frozen=True)
class Row:
    """One line of the scorecard."""

    fault: str
    expected: str
    observed: str
    attempts: int
    expected_attempts: int
    seconds: float
    passed: bool


KINDS = {
    "ok": "retried, then succeeds",
    "rate_limit": "typed rate-limit error",
    "server": "typed server error",
    "connection": "typed connection error",
    "timeout": "typed timeout error",
    "incomplete": "typed incomplete-stream error",
    "cut": "typed error: stream cut, connection lost",
    "bad_reply": "typed bad-reply error",
    "credits": "typed insufficient-credits error",
}
"""What a user expects, by kind."""

_HTML = b"<html><body><h1>502 Bad Gateway</h1></body></html>"

SCENARIOS: tuple[Scenario, ...] = (
    Scenario("503 twice", lambda g: g.faults.fail(503, times=2), False, "ok", 3),
    Scenario("500 once", lambda g: g.faults.fail(500), False, "ok", 2),
    Scenario("502 HTML page from a proxy", lambda g: _html(g, 502), False, "ok", 2),
    Scenario("504 three times (retries run out)", lambda g: _fail(g, 504, 3), False, "server", 3),
    Scenario(
        "429 with Retry-After: 0.1", lambda g: g.faults.fail(429, retry_after=0.1), False, "ok", 2
    ),
    Scenario(
        "429 three times (retries run out)",
        lambda g: g.faults.fail(429, retry_after=0.1, times=3),
        False,
        "rate_limit",
        3,
    ),
    Scenario("connection dropped before the reply", lambda g: g.faults.drop(), False, "ok", 2),
    Scenario(
        "connection dropped after processing",
        lambda g: g.faults.drop(after_processing=True),
        False,
        "ok",
        2,
    ),
    Scenario(
        "connection dropped three times", lambda g: g.faults.drop(times=3), False, "connection", 3
    ),
    Scenario(
        f"slow reply ({SLOW:g} s, timeout {TIMEOUT:g} s)",
        lambda g: g.faults.latency(SLOW, times=1),
        False,
        "ok",
        2,
    ),
    Scenario("truncated JSON (200)", lambda g: g.faults.truncate(), False, "bad_reply", 1),
    Scenario("HTML page with status 200", lambda g: _html(g, 200), False, "bad_reply", 1),
    Scenario("402 insufficient credits", lambda g: None, False, "credits", 1, no_credits=True),
    Scenario(
        "stream: 503 before it starts",
        lambda g: g.faults.fail(503, path="/chat/completions"),
        True,
        "ok",
        2,
    ),
    Scenario(
        "stream: connection dropped before the reply", lambda g: g.faults.drop(), True, "ok", 2
    ),
    Scenario(
        "stream: cut after 2 events",
        lambda g: g.faults.drop_mid_stream(after_events=2),
        True,
        "cut",
        1,
        also=("incomplete", "connection"),
    ),
    Scenario(
        "stream: ends half-way without [DONE]", lambda g: g.faults.truncate(), True, "incomplete", 1
    ),
    Scenario(
        "stream: malformed chunk",
        lambda g: g.faults.malformed_chunk(after_events=2),
        True,
        "bad_reply",
        1,
    ),
    Scenario(
        f"stream: first event late ({SLOW:g} s)",
        lambda g: g.faults.latency(SLOW, between_chunks=True, times=1),
        True,
        "ok",
        2,
    ),
)


def _fail(gateway: MockGateway, status: int, times: int) -> None:
    gateway.faults.fail(status, times=times)


def _html(gateway: MockGateway, status: int) -> None:
    gateway.faults.malformed(_HTML, status=status)


class _Caller:
    """Makes one call with one client library and names the kind of error it raised."""

    def call(self, url: str, key: str, stream: bool) -> None:
        raise NotImplementedError

    def kind_of(self, error: BaseException) -> str | None:
        raise NotImplementedError


class _AIGateway(_Caller):
    def call(self, url: str, key: str, stream: bool) -> None:
        with served_client(
            url,
            key,
            first_wait=0.01,
            max_wait=2.0,
            max_retries=2,
            timeout=TIMEOUT,
            stream_idle_timeout=TIMEOUT,
        ) as client:
            if not stream:
                client.chat.completions.create(model=MODEL, messages=MESSAGES)
                return
            with client.chat.completions.stream(model=MODEL, messages=MESSAGES) as events:
                for _ in events:
                    pass

    def kind_of(self, error: BaseException) -> str | None:
        kinds: list[tuple[type[BaseException], str]] = [
            (errors.IncompleteStreamError, "incomplete"),
            (errors.APITimeoutError, "timeout"),
            (errors.APIConnectionError, "connection"),
            (errors.RateLimitError, "rate_limit"),
            (errors.InsufficientCreditsError, "credits"),
            (errors.InternalServerError, "server"),
            (errors.APIResponseValidationError, "bad_reply"),
        ]
        return next((kind for cls, kind in kinds if isinstance(error, cls)), None)


class _OpenAI(_Caller):
    def __init__(self) -> None:
        try:
            import openai
        except ImportError as exc:  # not an extra of ours: it is the client being compared
            raise ImportError(
                "--client openai needs the openai package: pip install openai"
            ) from exc
        self.openai: Any = openai

    def call(self, url: str, key: str, stream: bool) -> None:
        client = self.openai.OpenAI(base_url=url, api_key=key, max_retries=2, timeout=TIMEOUT)
        with client:
            if not stream:
                client.chat.completions.create(model=MODEL, messages=MESSAGES)
                return
            for _ in client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True):
                pass

    def kind_of(self, error: BaseException) -> str | None:
        openai = self.openai
        if isinstance(error, openai.APITimeoutError):
            return "timeout"
        if isinstance(error, openai.APIConnectionError):
            return "connection"
        if isinstance(error, openai.RateLimitError):
            return "rate_limit"
        if isinstance(error, openai.InternalServerError):
            return "server"
        if isinstance(error, openai.APIStatusError) and error.status_code == 402:
            return "credits"
        if isinstance(error, openai.APIResponseValidationError):
            return "bad_reply"
        return None


CLIENTS: dict[str, Callable[[], _Caller]] = {"aigateway": _AIGateway, "openai": _OpenAI}


def run_scorecard(
    client: str = "aigateway", scenarios: Sequence[Scenario] = SCENARIOS
) -> list[Row]:
    """Serve a fresh `MockGateway` and run ``client`` through ``scenarios``; one `Row` each."""
    caller = CLIENTS[client]()
    gateway = MockGateway(rate_limits="unlimited", credits=1_000)
    broke = gateway.create_account(credits=0)
    rows = []
    with gateway.serve() as url:
        for scenario in scenarios:
            gateway.faults.clear()
            scenario.setup(gateway)
            key = broke.key if scenario.no_credits else gateway.api_key
            logged = len(gateway.requests)
            started = time.perf_counter()
            kind: str | None = "ok"
            try:
                caller.call(url, key, scenario.stream)
                observed = "succeeded"
            except Exception as error:
                observed, kind = _describe(error), caller.kind_of(error)
            seconds = time.perf_counter() - started
            attempts = len(gateway.requests) - logged
            kinds = (scenario.expected, *scenario.also)
            passed = kind in kinds and attempts == scenario.attempts
            rows.append(
                Row(
                    scenario.fault,
                    f"{KINDS[scenario.expected]} ({scenario.attempts} attempt"
                    f"{'s' if scenario.attempts > 1 else ''})",
                    observed,
                    attempts,
                    scenario.attempts,
                    seconds,
                    passed,
                )
            )
    return rows


def _describe(error: BaseException) -> str:
    name = f"{type(error).__module__.split('.')[0]}.{type(error).__name__}"
    return name.replace("aigateway.", "")


def render(rows: Sequence[Row], *, markdown: bool = False) -> str:
    """The rows as an aligned text table, or as a Markdown table."""
    header = ("fault", "expected", "observed", "attempts", "time", "")
    cells = [header] + [
        (
            row.fault,
            row.expected,
            row.observed,
            str(row.attempts),
            f"{row.seconds:.2f} s",
            "PASS" if row.passed else "FAIL",
        )
        for row in rows
    ]
    if markdown:
        lines = ["| " + " | ".join(cells[0]) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(line) + " |" for line in cells[1:]]
    else:
        widths = [max(len(line[i]) for line in cells) for i in range(len(header))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) for line in cells]
        lines.insert(1, "  ".join("-" * width for width in widths))
    passed = sum(row.passed for row in rows)
    return "\n".join(lines) + f"\n\n{passed} of {len(rows)} rows pass."


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m aigateway.testing.scorecard", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--client", choices=sorted(CLIENTS), default="aigateway")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    options = parser.parse_args(argv)
    rows = run_scorecard(options.client)
    print(render(rows, markdown=options.markdown))
    return 0 if all(row.passed for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
