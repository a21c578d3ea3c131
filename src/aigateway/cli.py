"""The ``aigateway`` command: quick calls from a shell, and the mock gateway on a local port.

    aigateway chat "Hello" [--model M] [--stream] [--mock]
    aigateway models [--mock]
    aigateway mock serve [--port N] [--seed S] [--time-to-first-token S] [--token-delay S]

``chat`` and ``models`` use ``AIGATEWAY_API_KEY`` and ``AIGATEWAY_BASE_URL``, or with
``--mock`` an in-process mock gateway (no key, no network). ``mock serve`` prints the base URL
and the mock's API key, then serves until interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

from .errors import AIGatewayError

if TYPE_CHECKING:
    from ._client import Client
    from .types.chat_params import UserMessageParam

__all__ = ["main"]

DEFAULT_MODEL = "gpt-4o-mini"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="aigateway", description="Call the Unified AI Gateway, or serve a mock of it."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    chat = commands.add_parser("chat", help="send one chat message and print the reply")
    chat.add_argument("prompt", help="the user message")
    chat.add_argument("--model", default=DEFAULT_MODEL, help=f"model id (default {DEFAULT_MODEL})")
    chat.add_argument("--stream", action="store_true", help="print the reply as it streams")
    chat.add_argument("--mock", action="store_true", help="use an in-process mock gateway")

    models = commands.add_parser("models", help="list the chat models")
    models.add_argument("--mock", action="store_true", help="use an in-process mock gateway")

    mock = commands.add_parser("mock", help="the bundled mock gateway")
    mock_commands = mock.add_subparsers(dest="mock_command", required=True)
    serve = mock_commands.add_parser("serve", help="serve the mock gateway over HTTP")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    serve.add_argument("--seed", type=int, default=0)
    serve.add_argument("--time-to-first-token", type=float, default=0.0, metavar="SECONDS")
    serve.add_argument("--token-delay", type=float, default=0.0, metavar="SECONDS")
    return parser


def _client(mock: bool) -> Client:
    if mock:
        from .testing import MockGateway

        return MockGateway().client()
    from ._client import Client

    return Client()


def _chat(args: argparse.Namespace, out: TextIO) -> None:
    messages: list[UserMessageParam] = [{"role": "user", "content": args.prompt}]
    with _client(args.mock) as client:
        if args.stream:
            with client.chat.completions.stream(model=args.model, messages=messages) as stream:
                for text in stream.text_stream:
                    out.write(text)
                    out.flush()
            out.write("\n")
        else:
            out.write(client.chat.completions.create(model=args.model, messages=messages).text)
            out.write("\n")


def _models(args: argparse.Namespace, out: TextIO) -> None:
    with _client(args.mock) as client:
        for model in client.models.list():
            out.write(f"{model.id}\n")


def wait_until_interrupted() -> None:
    """Block until Ctrl-C."""
    threading.Event().wait()


def _mock_serve(args: argparse.Namespace, out: TextIO) -> None:
    from .testing import MockGateway

    gateway = MockGateway(
        seed=args.seed,
        time_to_first_token=args.time_to_first_token,
        token_delay=args.token_delay,
    )
    with gateway.serve(host=args.host, port=args.port) as url:
        out.write(f"Mock gateway serving at {url}\n")
        out.write(f"API key (mock account, {gateway.credits():g} credits): {gateway.api_key}\n")
        out.write(f"  export AIGATEWAY_BASE_URL={url} AIGATEWAY_API_KEY={gateway.api_key}\n")
        out.write("Press Ctrl-C to stop.\n")
        out.flush()
        try:
            wait_until_interrupted()
        except KeyboardInterrupt:
            out.write("stopped\n")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 an API error, 2 bad usage)."""
    args = _parser().parse_args(argv)
    out = sys.stdout
    try:
        if args.command == "chat":
            _chat(args, out)
        elif args.command == "models":
            _models(args, out)
        else:
            _mock_serve(args, out)
    except (AIGatewayError, ImportError) as error:
        print(f"aigateway: error: {error}", file=sys.stderr)
        return 1
    return 0
