"""The ``aigateway`` command: quick calls from a shell, and the mock gateway on a local port.

    aigateway chat "Hello" [--model M] [--stream] [--mock]
    aigateway models [--mock]
    aigateway mock serve [--host H] [--port N] [--rate-limits PRESET] [--credits C]
                         [--accounts N] [--seed S] [--time-to-first-token S] [--token-delay S]

``chat`` and ``models`` use ``AIGATEWAY_API_KEY`` and ``AIGATEWAY_BASE_URL``, or with
``--mock`` an in-process mock gateway (no key, no network). ``mock serve`` prints the base URL
and the mock's API keys (and the lines to export them), then serves on the wall clock until
interrupted (Ctrl-C); a bad option or a busy port is one line on stderr and exit status 2.
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
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default %(default)s)"
    )
    serve.add_argument(
        "--port", default="8000", help="port (default %(default)s; 0 picks a free one)"
    )
    serve.add_argument(
        "--rate-limits",
        default="free",
        metavar="PRESET",
        help="per-key rate limits, a name of aigateway.testing.RATE_LIMIT_PRESETS "
        "(default %(default)s; 'unlimited' for none)",
    )
    serve.add_argument("--credits", type=float, default=20.0, help="each account's balance")
    serve.add_argument("--accounts", type=int, default=0, metavar="N", help="extra accounts")
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


def _port(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"--port is a number from 0 to 65535, got {text!r}") from None


def _mock_serve(args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
    from .testing import MockGateway
    from .testing._server import is_loopback

    port = _port(args.port)
    if args.accounts < 0:
        raise ValueError(f"--accounts is a number of extra accounts, got {args.accounts}")
    gateway = MockGateway(
        seed=args.seed,
        credits=args.credits,
        rate_limits=args.rate_limits,
        time_to_first_token=args.time_to_first_token,
        token_delay=args.token_delay,
    )
    extra = [gateway.create_account(args.credits) for _ in range(args.accounts)]
    if not is_loopback(args.host):
        err.write(
            f"aigateway: warning: serving on {args.host}: anyone who can reach this machine "
            "on the network can use the mock gateway\n"
        )
        err.flush()
    try:
        with gateway.serve(host=args.host, port=port) as url:
            out.write(f"Mock gateway serving at {url} (rate limits: {args.rate_limits})\n")
            out.write(f"API key (mock account, {gateway.credits():g} credits): {gateway.api_key}\n")
            for account in extra:
                out.write(f"API key (extra account): {account.key}\n")
            root = url.removesuffix("/v1")
            out.write(
                f"Admin API: {root}/_mock/ with 'Authorization: Bearer {gateway.admin_token}'\n"
            )
            out.write(f"export AIGATEWAY_BASE_URL={url}\n")
            out.write(f"export AIGATEWAY_API_KEY={gateway.api_key}\n")
            out.write(f"export AIGATEWAY_MOCK_ADMIN_TOKEN={gateway.admin_token}\n")
            out.write("Press Ctrl-C to stop.\n")
            out.flush()
            wait_until_interrupted()
    except KeyboardInterrupt:
        out.write("stopped\n")
        out.flush()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 an API error, 2 bad usage or a
    port that cannot be served)."""
    args = _parser().parse_args(argv)
    out = sys.stdout
    try:
        if args.command == "chat":
            _chat(args, out)
        elif args.command == "models":
            _models(args, out)
        else:
            try:
                _mock_serve(args, out, sys.stderr)
            except (ValueError, OSError) as error:
                print(f"aigateway: error: {error}", file=sys.stderr)
                return 2
    except (AIGatewayError, ImportError) as error:
        print(f"aigateway: error: {error}", file=sys.stderr)
        return 1
    return 0
