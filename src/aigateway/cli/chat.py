"""The ``aigateway chat`` command: one reply, or a conversation typed line by line.

Every turn sends the whole conversation, prints the reply (streamed, or whole) and keeps
both; the conversation is saved after each turn (`ConversationStore`), so ``--continue``
picks it up in a later command. In a conversation Ctrl-C stops the reply being printed, and
keeps what had arrived of it; at the prompt it leaves. Imported only when ``chat`` runs.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from aigateway.cli import DEFAULT_MODEL, UsageError
from aigateway.cli.conversations import Conversation, ConversationError, ConversationStore, new_id
from aigateway.cli.format import report_failure, usage_line
from aigateway.errors import AIGatewayError

if TYPE_CHECKING:
    from aigateway._client.clients import Client
    from aigateway.types.chat import ChatCompletion

__all__ = ["chat"]

LEAVE_WORDS = ("exit", "quit")
"""What, typed alone at the prompt, ends a conversation (as does Ctrl-D)."""


def chat(
    args: argparse.Namespace, make_client: Callable[[argparse.Namespace], Client], out: TextIO
) -> int:
    """Run ``aigateway chat`` as ``args`` say; the exit status (0, or 1 when a turn of a
    conversation failed: a one-reply chat's failure raises)."""
    interactive = _is_interactive(args)
    if interactive and args.json:
        raise UsageError("--json prints one reply; it cannot be used with --interactive")
    continuing = args.continue_last or args.conversation is not None
    if continuing and args.system is not None:
        raise UsageError(
            "--system starts a new conversation; it cannot be used with --continue or "
            "--conversation"
        )
    if interactive:
        first, only = _first_prompt(args), None
    else:
        first, only = None, _only_prompt(args)
    store = ConversationStore()
    conversation = _conversation(args, store, continuing)
    err = sys.stderr
    stream = args.stream if args.stream is not None else (interactive or out.isatty())
    with make_client(args) as client:
        session = ChatSession(
            client,
            conversation,
            store=store if args.save else None,
            settings=_settings(args, stream),
            stream=stream and not args.json,
            as_json=args.json,
            show_usage=args.usage,
            out=out,
            err=err,
        )
        if only is not None:
            session.ask(only)
            return 0
        if sys.stdin.isatty():
            err.write(_greeting(conversation, continuing, saved=args.save))
        return session.converse(first, _line_reader(sys.stdin, out, err), debug=args.debug)


def _is_interactive(args: argparse.Namespace) -> bool:
    """``--interactive``, or no prompt at all on a terminal (what else could one mean?)."""
    return bool(args.interactive) or (args.prompt is None and sys.stdin.isatty())


def _first_prompt(args: argparse.Namespace) -> str | None:
    """A conversation's first prompt: the argument, if one was given."""
    if args.prompt == "-":
        raise UsageError("'-' reads the prompt from stdin, where --interactive reads its lines")
    return None if args.prompt is None else str(args.prompt)


def _only_prompt(args: argparse.Namespace) -> str:
    """A one-reply chat's prompt: the argument, or stdin when it is '-' or absent (without
    an argument, stdin is no terminal, or this would be a conversation)."""
    if args.prompt is not None and args.prompt != "-":
        return str(args.prompt)
    text = sys.stdin.read().strip()
    if not text:
        raise UsageError("the prompt read from stdin is empty")
    return text


def _conversation(
    args: argparse.Namespace, store: ConversationStore, continuing: bool
) -> Conversation:
    """The conversation to add to: the one asked to continue, else a new one."""
    if not continuing:
        system = [] if args.system is None else [{"role": "system", "content": args.system}]
        return Conversation(new_id(), args.model or DEFAULT_MODEL, system)
    conversation = store.last() if args.continue_last else store.load(args.conversation)
    if args.model is not None:
        conversation.model = args.model
    return conversation


def _settings(args: argparse.Namespace, stream: bool) -> dict[str, Any]:
    """The request's options besides the model and messages, only those given."""
    settings: dict[str, Any] = {}
    if args.temperature is not None:
        settings["temperature"] = args.temperature
    if args.max_tokens is not None:
        settings["max_tokens"] = args.max_tokens
    if args.usage and stream and not args.json:
        settings["stream_options"] = {"include_usage": True}  # the tokens come in a last chunk
    return settings


def _greeting(conversation: Conversation, continuing: bool, saved: bool) -> str:
    start = (
        f"Continuing conversation {conversation.id} ({len(conversation.messages)} messages)"
        if continuing
        else ("Conversation " + conversation.id if saved else "A conversation (not saved)")
    )
    return (
        f"{start} with {conversation.model}. Type {' or '.join(LEAVE_WORDS)} (or press "
        "Ctrl-D) to leave; Ctrl-C stops a reply.\n"
    )


def _line_reader(stdin: TextIO, out: TextIO, err: TextIO) -> Callable[[], str]:
    """How the next prompt is read: after a ``> `` prompt, with line editing, on a terminal
    (the prompt on stderr when stdout is not a terminal, so stdout holds replies only); a line
    at a time from a pipe. At the end of input it raises `EOFError` (on a terminal, after
    ending the prompt's line, so the shell's prompt starts on a line of its own)."""
    if not stdin.isatty():

        def from_a_pipe() -> str:
            line = stdin.readline()
            if not line:
                raise EOFError
            return line

        return from_a_pipe
    if out.isatty():
        with contextlib.suppress(ImportError):  # Python built without it (Windows)
            import readline  # noqa: F401  (line editing and history for input())

    def from_a_terminal() -> str:
        try:
            if out.isatty():
                return input("> ")  # input() writes the prompt, so line editing knows of it
            err.write("> ")
            err.flush()
            return input()
        except EOFError:  # Ctrl-D
            err.write("\n")
            raise

    return from_a_terminal


@dataclass(eq=False)
class ChatSession:
    """A conversation with the gateway: each turn (`ask`) sends the whole conversation,
    prints the reply and keeps both, then saves the conversation (unless ``store`` is None).
    With ``show_usage``, each reply's tokens and credits follow on ``err``."""

    client: Client
    conversation: Conversation
    _: KW_ONLY
    store: ConversationStore | None
    settings: dict[str, Any]
    stream: bool
    as_json: bool
    show_usage: bool
    out: TextIO
    err: TextIO
    _printed: list[str] = field(default_factory=list, init=False, repr=False)
    """The reply's text printed so far."""
    _pricing: dict[str, object] = field(default_factory=dict, init=False, repr=False)
    """Model id -> its listed prices (or None)."""

    def ask(self, prompt: str) -> None:
        """One turn. Interrupted (Ctrl-C) while the reply streams, the text printed so far is
        kept as the reply (the turn is dropped when nothing arrived) and the interrupt goes on;
        failed, the turn is dropped and the error goes on."""
        messages = self.conversation.messages
        start = len(messages)
        messages.append({"role": "user", "content": prompt})
        self._printed = []
        try:
            reply = self._reply()
        except KeyboardInterrupt:
            if self._printed:
                self.out.write("\n")
                self.out.flush()
                messages.append({"role": "assistant", "content": "".join(self._printed)})
                self._save()
            else:
                del messages[start:]
            raise
        except BaseException:
            del messages[start:]
            raise
        messages.append({"role": "assistant", "content": reply.text})
        self._save()
        if self.show_usage:
            self.err.write(self._usage(reply))
            self.err.flush()

    def converse(self, first: str | None, read_line: Callable[[], str], debug: bool) -> int:
        """Turns until ``exit``, ``quit`` or the end of input (Ctrl-D); Ctrl-C at the prompt
        goes on (the command ends, status 130). A failed turn is reported and the conversation
        goes on; the status is then 1, else 0."""
        status = 0
        prompt = first
        while True:
            if prompt is not None:
                status = max(status, self._turn(prompt, debug))
            try:
                line = read_line().strip()
            except EOFError:
                return status
            if line.lower() in LEAVE_WORDS:
                return status
            prompt = line or None

    def _turn(self, prompt: str, debug: bool) -> int:
        try:
            self.ask(prompt)
        except KeyboardInterrupt:
            self.err.write("aigateway: reply stopped\n")
        except (AIGatewayError, ConversationError, OSError) as error:
            report_failure(error, debug, self.err)
            return 1
        return 0

    def _reply(self) -> ChatCompletion:
        """Send the conversation; print the reply as it comes (or whole) and return it."""
        completions = self.client.chat.completions
        model, messages = self.conversation.model, self.conversation.messages
        reply: ChatCompletion
        if self.stream:
            with completions.stream(model=model, messages=messages, **self.settings) as chunks:
                for text in chunks.text_stream:
                    self._printed.append(text)
                    self.out.write(text)
                    self.out.flush()
                reply = chunks.get_final_completion()
            self.out.write("\n")
        else:
            reply = completions.create(model=model, messages=messages, **self.settings)
            self.out.write((reply.model_dump_json(indent=2) if self.as_json else reply.text) + "\n")
        self.out.flush()
        return reply

    def _save(self) -> None:
        if self.store is not None:
            self.store.save(self.conversation)

    def _usage(self, reply: ChatCompletion) -> str:
        """The ``--usage`` line of ``reply``: its tokens, what they cost at the model's listed
        prices (asked of the gateway once per model) and the credits left."""
        model = self.conversation.model
        if model not in self._pricing:
            try:
                listed = self.client.models.retrieve(model)
            except AIGatewayError:
                self._pricing[model] = None  # the cost is then shown as unknown
            else:
                self._pricing[model] = (listed.model_extra or {}).get("pricing")
        return usage_line(reply.usage, self._pricing[model], reply.remaining_credits)
