"""The ``aigateway`` command: quick calls from a shell, and the mock gateway on a local port.

    aigateway chat [PROMPT] [--system S] [--temperature T] [--max-tokens N] [--model M]
                   [--stream | --no-stream] [--json] [-i] [-c | --conversation ID]
                   [--usage] [--no-save]
    aigateway conversations
    aigateway models [--json]
    aigateway run MODEL [--input KEY=VALUE ...] [--input-file FILE]
    aigateway image PROMPT [--model M] [--size WxH] [--output FILE]
    aigateway mock serve [--host H] [--port N] [--rate-limits PRESET] [--credits C]
                         [--accounts N] [--seed S] [--time-to-first-token S] [--token-delay S]
                         [--clock-speed X] [--strict-fields]

Every command takes the global options ``--api-key``, ``--base-url``, ``--mock`` (an
in-process mock gateway: no key, no network), ``--debug`` and ``--version``, before or after
the command's name. Without ``--api-key`` / ``--base-url`` the client reads
``AIGATEWAY_API_KEY`` and ``AIGATEWAY_BASE_URL``.

Every error is one line on stderr (``aigateway: error: ...``) and exit status 1; bad usage
(and a port ``mock serve`` cannot serve) is status 2; Ctrl-C is 130; a closed stdout (``|
head``) is 141, as for the shell's own tools. This module imports the SDK only inside the
commands, so ``--help`` loads neither httpx nor pydantic.
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from aigateway._version import __version__

if TYPE_CHECKING:
    from aigateway._client.clients import Client

__all__ = ["main"]

DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_IMAGE_MODEL = "flux-schnell"
EXIT_ERROR, EXIT_USAGE, EXIT_PIPE, EXIT_INTERRUPTED = 1, 2, 141, 130


class UsageError(Exception):
    """Bad usage found after parsing (a missing prompt, a malformed ``--input``): status 2."""


def _global_options(suppress: bool) -> argparse.ArgumentParser:
    """The options every command takes. Under a command their defaults are suppressed, so a
    value given before the command's name is not reset by the command's parser."""
    default: Any = argparse.SUPPRESS if suppress else None
    flag: Any = argparse.SUPPRESS if suppress else False
    options = argparse.ArgumentParser(add_help=False)
    group = options.add_argument_group("global options")
    group.add_argument(
        "--version", action="version", version=f"aigateway {__version__}", help="print the version"
    )
    group.add_argument("--api-key", default=default, help="API key (default $AIGATEWAY_API_KEY)")
    group.add_argument(
        "--base-url", default=default, help="gateway URL (default $AIGATEWAY_BASE_URL)"
    )
    group.add_argument(
        "--mock", action="store_true", default=flag, help="use an in-process mock gateway"
    )
    group.add_argument(
        "--debug",
        action="store_true",
        default=flag,
        help="log each request, its status and attempts, timings and tracebacks on stderr",
    )
    return options


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="aigateway",
        description="Call the Unified AI Gateway, or serve a mock of it.",
        parents=[_global_options(suppress=False)],
    )
    common = [_global_options(suppress=True)]
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    chat = commands.add_parser(
        "chat", parents=common, help="send a chat message and print the reply, or converse"
    )
    chat.add_argument(
        "prompt",
        nargs="?",
        help="the user message; '-', or absent with stdin not a terminal: read it from stdin; "
        "absent on a terminal: a conversation",
    )
    chat.add_argument("--system", help="a system message sent before the prompt")
    chat.add_argument("--temperature", type=float, help="sampling temperature (0 to 2)")
    chat.add_argument("--max-tokens", type=int, metavar="N", help="the longest reply, in tokens")
    chat.add_argument(
        "--model",
        help=f"model id (default: the conversation's when continuing, else {DEFAULT_MODEL})",
    )
    chat.add_argument(
        "--stream",
        action=argparse.BooleanOptionalAction,
        help="print the reply as it streams (default: in a conversation, or when stdout is "
        "a terminal)",
    )
    chat.add_argument("--json", action="store_true", help="print the whole reply as JSON")
    chat.add_argument(
        "-i",
        "--interactive",
        action="store_true",
        help="a conversation: read prompts a line at a time (after PROMPT, if given) until "
        "exit, quit or Ctrl-D; Ctrl-C stops a reply",
    )
    earlier = chat.add_mutually_exclusive_group()
    earlier.add_argument(
        "-c",
        "--continue",
        dest="continue_last",
        action="store_true",
        help="continue the last conversation",
    )
    earlier.add_argument(
        "--conversation", metavar="ID", help="continue conversation ID (aigateway conversations)"
    )
    chat.add_argument(
        "--usage",
        action="store_true",
        help="after each reply, its tokens and credits (cost, remaining) on stderr",
    )
    chat.add_argument(
        "--no-save",
        dest="save",
        action="store_false",
        help="do not store the conversation (it cannot be continued)",
    )

    commands.add_parser(
        "conversations", parents=common, help="list the stored chat conversations, latest first"
    )

    models = commands.add_parser("models", parents=common, help="list the chat models")
    models.add_argument("--json", action="store_true", help="print the list as JSON")

    run = commands.add_parser("run", parents=common, help="run any service on POST /run")
    run.add_argument("model", help="the service id, e.g. flux-schnell")
    run.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="one input; VALUE is parsed as JSON when it is valid JSON, else taken as a string",
    )
    run.add_argument("--input-file", metavar="FILE", help="a JSON object of inputs ('-' for stdin)")

    image = commands.add_parser("image", parents=common, help="generate an image and save it")
    image.add_argument("prompt", help="what the image shows")
    image.add_argument(
        "--model", default=DEFAULT_IMAGE_MODEL, help=f"image model (default {DEFAULT_IMAGE_MODEL})"
    )
    image.add_argument("--size", metavar="WxH", help="e.g. 1024x1024")
    image.add_argument("--output", metavar="FILE", help="where to save it (default: <id>.<ext>)")

    mock = commands.add_parser("mock", parents=common, help="the bundled mock gateway")
    mock_commands = mock.add_subparsers(dest="mock_command", required=True, metavar="COMMAND")
    serve = mock_commands.add_parser("serve", parents=common, help="serve the mock over HTTP")
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
    serve.add_argument(
        "--clock-speed",
        type=float,
        default=1.0,
        metavar="X",
        help="run the mock's clock X times as fast as the wall clock (rate-limit windows, "
        "Retry-After); default %(default)s",
    )
    serve.add_argument(
        "--strict-fields",
        action="store_true",
        help="answer an unknown chat body field with a 400 naming it (default: accept it and "
        "name it in the X-Mock-Unknown-Fields header)",
    )
    return parser


def _client(args: argparse.Namespace) -> Client:
    if args.mock:
        from aigateway.testing import MockGateway

        return MockGateway().client()
    from aigateway._client.clients import Client

    return Client(api_key=args.api_key, base_url=args.base_url)


def _read_stdin() -> str:
    return sys.stdin.read()


def _chat(args: argparse.Namespace, out: TextIO) -> int:
    from aigateway.cli.chat import chat

    return chat(args, _client, out)


def _conversations(args: argparse.Namespace, out: TextIO) -> None:
    from aigateway.cli.conversations import ConversationStore
    from aigateway.cli.format import conversations_table

    store = ConversationStore()
    listing = list(store.listing())
    if not listing:
        sys.stderr.write(f"aigateway: no conversations stored in {store.directory}\n")
        return
    out.write(conversations_table(listing))


def _models(args: argparse.Namespace, out: TextIO) -> None:
    with _client(args) as client:
        models = client.models.list()
    if args.json:
        out.write(models.model_dump_json(indent=2) + "\n")
        return
    from aigateway.cli.format import models_table

    out.write(models_table([model.model_dump() for model in models]))


def _inputs(args: argparse.Namespace) -> dict[str, Any]:
    import json

    inputs: dict[str, Any] = {}
    if args.input_file is not None:
        if args.input_file == "-":
            text = _read_stdin()
        else:
            with open(args.input_file, encoding="utf-8") as file:
                text = file.read()
        try:
            loaded = json.loads(text)
        except ValueError as error:
            raise UsageError(f"--input-file is not valid JSON: {error}") from None
        if not isinstance(loaded, dict):
            raise UsageError(f"--input-file holds a JSON object, got {type(loaded).__name__}")
        inputs.update(loaded)
    for item in args.input:
        key, equals, raw = item.partition("=")
        if not equals or not key:
            raise UsageError(f"--input takes KEY=VALUE, got {item!r}")
        try:
            inputs[key] = json.loads(raw)
        except ValueError:
            inputs[key] = raw
    return inputs


def _run(args: argparse.Namespace, out: TextIO) -> None:
    from aigateway.cli.format import run_json

    inputs = _inputs(args)
    with _client(args) as client:
        result = client.run(args.model, inputs)
    out.write(run_json(result) + "\n")


def _image(args: argparse.Namespace, out: TextIO) -> None:
    from aigateway.cli.format import image_path

    options: dict[str, Any] = {} if args.size is None else {"size": args.size}
    with _client(args) as client:
        result = client.images.generate(model=args.model, prompt=args.prompt, **options)
        content = result.read()
    path = image_path(args.output, result.id, content)
    path.write_bytes(content)
    out.write(f"{path}\n")


def wait_until_interrupted() -> None:
    """Block until Ctrl-C."""
    threading.Event().wait()


def _port(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"--port is a number from 0 to 65535, got {text!r}") from None


def _mock_serve(args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
    from aigateway.testing import MockGateway
    from aigateway.testing._serving.server import is_loopback

    port = _port(args.port)
    if args.accounts < 0:
        raise ValueError(f"--accounts is a number of extra accounts, got {args.accounts}")
    gateway = MockGateway(
        seed=args.seed,
        credits=args.credits,
        rate_limits=args.rate_limits,
        time_to_first_token=args.time_to_first_token,
        token_delay=args.token_delay,
        strict_fields=args.strict_fields,
    )
    extra = [gateway.create_account(args.credits) for _ in range(args.accounts)]
    if not is_loopback(args.host):
        err.write(
            f"aigateway: warning: serving on {args.host}: anyone who can reach this machine "
            "on the network can use the mock gateway\n"
        )
        err.flush()
    try:
        with gateway.serve(host=args.host, port=port, clock_speed=args.clock_speed) as url:
            pace = f", clock x{args.clock_speed:g}" if args.clock_speed != 1.0 else ""
            out.write(f"Mock gateway serving at {url} (rate limits: {args.rate_limits}{pace})\n")
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


def _serve(args: argparse.Namespace, out: TextIO) -> int:
    from aigateway.cli.format import write_error

    try:
        _mock_serve(args, out, sys.stderr)
    except (ValueError, OSError) as error:
        write_error(str(error), sys.stderr)
        return EXIT_USAGE
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace, TextIO], int | None]] = {
    "chat": _chat,
    "conversations": _conversations,
    "models": _models,
    "run": _run,
    "image": _image,
}
"""Each command's function: it prints to the stream it is given; its exit status is what it
returns (None: 0), or what the error it raises means."""


def _dispatch(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from aigateway.cli.format import report_failure, write_error

    out = sys.stdout
    try:
        if args.command == "mock":
            return _serve(args, out)
        status = COMMANDS[args.command](args, out)
        out.flush()
    except UsageError as error:
        parser.print_usage(sys.stderr)
        write_error(str(error), sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        raise
    except Exception as error:
        report_failure(error, args.debug, sys.stderr)
        return EXIT_ERROR
    return status or 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 an error, 2 bad usage or a port
    that cannot be served, 130 interrupted, 141 stdout closed early)."""
    try:
        parser = _parser()
        args = parser.parse_args(argv)
        from aigateway.cli.format import reporting

        with reporting(debug=args.debug, err=sys.stderr):
            return _dispatch(parser, args)
    except KeyboardInterrupt:
        sys.stderr.write("\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_PIPE


def _silence_stdout() -> None:
    """After a closed pipe: point stdout at /dev/null, so the interpreter's final flush of the
    unwritable buffer cannot print a second BrokenPipeError at exit."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # pragma: no cover - stdout without a descriptor (captured)
        pass
