"""The pytest plugin's ``aigateway`` marker: its options checked, and the gateway they describe.

The plugin (`_aigateway_pytest`) lives outside the package, so that pytest loads it without
loading aigateway; it hands a test's marker here when the test first uses the mock. The marker
takes every keyword of `MockGateway`, plus ``faults`` (``(method, *args, {kwargs})`` tuples
calling ``gateway.faults.<method>``, or a callable given the gateway) and ``allow_hosts`` (the
hosts the plugin's network guard lets through). A marker that breaks these rules is a
`MarkerError` saying what is allowed.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from aigateway.testing import FaultPlan, MockGateway

__all__ = ["MarkerError", "MarkerOptions"]

_T = TypeVar("_T")

PLUGIN_OPTIONS = ("faults", "allow_hosts")
"""The marker's options that are not `MockGateway`'s keywords."""
_NOT_FAULTS = frozenset({"clear", "run"})
"""Public methods of `FaultPlan` that do not queue a fault."""


class MarkerError(ValueError):
    """A marker the gateway cannot be built from; the message says what is allowed."""


@dataclass(frozen=True)
class MarkerOptions:
    """A test's ``aigateway`` marker, checked (`read`)."""

    gateway: dict[str, Any] = field(default_factory=dict)
    faults: Callable[[MockGateway], object] | Sequence[Sequence[Any]] = ()
    allow_hosts: frozenset[str] = frozenset()

    @classmethod
    def read(cls, args: Sequence[object], kwargs: Mapping[str, Any]) -> MarkerOptions:
        """The options of a marker given ``args`` and ``kwargs``; `MarkerError` when they break
        the rules."""
        if args:
            raise MarkerError(f"takes keyword options only, got positional {tuple(args)!r}")
        options = dict(kwargs)
        faults = options.pop("faults", ())
        allow_hosts = options.pop("allow_hosts", ())
        known = [name for name in inspect.signature(MockGateway).parameters if name != "self"]
        unknown = sorted(set(options) - set(known))
        if unknown:
            raise MarkerError(
                f"unknown option {', '.join(map(repr, unknown))}; "
                f"allowed: {', '.join(sorted([*known, *PLUGIN_OPTIONS]))}"
            )
        if isinstance(allow_hosts, str) or not all(isinstance(host, str) for host in allow_hosts):
            raise MarkerError(f"allow_hosts must be a list of host names, got {allow_hosts!r}")
        if not callable(faults):
            _check_faults(faults)
        return cls(options, faults, frozenset(host.lower() for host in allow_hosts))

    def build(self) -> MockGateway:
        """A fresh gateway with these options and faults; `MarkerError` when the gateway
        refuses them."""
        gateway = _or_marker_error(lambda: MockGateway(**self.gateway))
        if callable(self.faults):
            self.faults(gateway)
            return gateway
        for name, *args in self.faults:
            kwargs = args.pop() if args and isinstance(args[-1], dict) else {}
            fault = functools.partial(getattr(gateway.faults, name), *args, **kwargs)
            _or_marker_error(fault, f"faults entry {(name, *args, kwargs)!r}: ")
        return gateway


def _or_marker_error(call: Callable[[], _T], context: str = "") -> _T:
    """``call()``, or a `MarkerError` saying why the gateway refused the options."""
    try:
        return call()
    except (TypeError, ValueError) as exc:
        problem = f"{context}{exc}"
    raise MarkerError(problem)  # outside the except block: no chained traceback to read


def _check_faults(faults: object) -> None:
    kinds = sorted(
        name
        for name, member in vars(FaultPlan).items()
        if callable(member) and not name.startswith("_") and name not in _NOT_FAULTS
    )
    shape = "a list of (method, *args, {kwargs}) tuples or a callable taking the gateway"
    if isinstance(faults, str | bytes) or not isinstance(faults, Sequence):
        raise MarkerError(f"faults must be {shape}, got {faults!r}")
    for entry in faults:
        if isinstance(entry, str) or not isinstance(entry, Sequence) or not entry:
            raise MarkerError(f"faults must be {shape}, got the entry {entry!r}")
        if entry[0] not in kinds:
            raise MarkerError(f"unknown fault {entry[0]!r}; faults: {', '.join(kinds)}")
