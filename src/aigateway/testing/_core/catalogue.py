"""The mock gateway's model catalogue: data the user can read, replace and extend.

`default_catalogue` returns the 11 chat models the API's machine-readable description
enumerates in kind: three provider families (an OpenAI-like, an Anthropic-like and a Google-like
one) plus two ``<provider>/<name>`` ids. Nothing else in the mock hard-codes an id: the
gateway serves whatever `Catalogue` it holds.

Id spelling: published examples write version digits with hyphens or dots
(``claude-3-5-sonnet`` / ``claude-3.5-sonnet``). A lookup accepts both, and any letter case;
replies always echo the catalogue's own spelling. An unknown id gets the closest known ids
(difflib), for the 404's message.

``GET /models`` entries carry the API's Model fields (``id``, ``object``, ``created``,
``owned_by``) and, since the API description says pricing and capability fields are returned without
naming them, these extra fields (our names)::

    "pricing": {"input_per_1k": 0.005, "output_per_1k": 0.015, "unit": "credits"},
    "capabilities": {"vision": true, "tools": true, "json_mode": true, "streaming": true},
    "context_window": 128000

Prices are credits per 1,000 tokens, input and output billed separately; they are small, so
the 20 free credits buy many short calls.
"""

from __future__ import annotations

import difflib
import math
import re
import threading
from collections.abc import Iterable, Iterator, MutableMapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypeVar

__all__ = [
    "Catalogue",
    "ModelSpec",
    "SpecCatalogue",
    "check_price",
    "default_catalogue",
    "model_object",
    "normalize_id",
]


def check_price(price: object, what: str) -> None:
    """Refuse (ValueError) a price that is not a finite, non-negative number of credits."""
    if isinstance(price, bool) or not isinstance(price, int | float) or not math.isfinite(price):
        raise ValueError(f"{what} is a finite number of credits, got {price!r}")
    if price < 0:
        raise ValueError(f"{what} cannot be negative, got {price!r}")


@dataclass(frozen=True)
class ModelSpec:
    """One chat model of the mock's catalogue, with its prices in credits per 1K tokens."""

    id: str
    owned_by: str
    created: int
    vision: bool = False
    """Accepts ``image_url`` content parts (a 400 otherwise)."""
    tools: bool = True
    """Accepts ``tools`` / ``functions`` (a 400 otherwise)."""
    context_window: int = 128_000
    """The most prompt tokens one request may carry (a 400 otherwise)."""
    input_price_per_1k: float = 0.001
    output_price_per_1k: float = 0.002

    def __post_init__(self) -> None:
        check_price(self.input_price_per_1k, "a model's input price")
        check_price(self.output_price_per_1k, "a model's output price")


def default_catalogue() -> list[ModelSpec]:
    """A fresh copy of the default 11 chat models (edit it freely)."""
    return [
        # An OpenAI-like family.
        ModelSpec("gpt-4o", "openai", 1715367049, True, True, 128_000, 0.005, 0.015),
        ModelSpec("gpt-4o-mini", "openai", 1721172741, True, True, 128_000, 0.0006, 0.0024),
        ModelSpec("gpt-4-turbo", "openai", 1712361441, True, True, 128_000, 0.01, 0.03),
        ModelSpec("gpt-3.5-turbo", "openai", 1677610602, False, True, 16_385, 0.0005, 0.0015),
        # An Anthropic-like family.
        ModelSpec("claude-3-5-sonnet", "anthropic", 1718841600, True, True, 200_000, 0.003, 0.015),
        ModelSpec("claude-3-opus", "anthropic", 1709164800, True, True, 200_000, 0.015, 0.075),
        ModelSpec("claude-3-haiku", "anthropic", 1710374400, True, True, 200_000, 0.0005, 0.0025),
        # A Google-like family.
        ModelSpec("gemini-1.5-pro", "google", 1715644800, True, True, 2_000_000, 0.0035, 0.0105),
        ModelSpec("gemini-1.5-flash", "google", 1715644800, True, True, 1_000_000, 0.00075, 0.003),
        # Provider-prefixed ids.
        ModelSpec(
            "meta-llama/llama-3.1-70b-instruct", "meta-llama", 1721692800,
            False, True, 128_000, 0.0009, 0.0009,
        ),
        ModelSpec(
            "mistralai/mixtral-8x7b-instruct", "mistralai", 1702252800,
            False, True, 32_768, 0.0006, 0.0006,
        ),
    ]  # fmt: skip


_VERSION_DOT = re.compile(r"(?<=\d)\.(?=\d)")


def normalize_id(model_id: str) -> str:
    """The lookup form of an id: lower-case, dots between digits written as hyphens."""
    return _VERSION_DOT.sub("-", model_id.strip().lower())


def model_object(spec: ModelSpec) -> dict[str, Any]:
    """The ``GET /models`` entry of a model (see the module docstring for the extra fields)."""
    return {
        "id": spec.id,
        "object": "model",
        "created": spec.created,
        "owned_by": spec.owned_by,
        "pricing": {
            "input_per_1k": spec.input_price_per_1k,
            "output_per_1k": spec.output_price_per_1k,
            "unit": "credits",
        },
        "capabilities": {
            "vision": spec.vision,
            "tools": spec.tools,
            "json_mode": True,
            "streaming": True,
        },
        "context_window": spec.context_window,
    }


class _HasId(Protocol):
    @property
    def id(self) -> str: ...


SpecT = TypeVar("SpecT", bound=_HasId)


MAX_COMPARED_ID_CHARS = 200
"""The longest id compared with the known ones for a 404's "closest known ids"."""


class SpecCatalogue(MutableMapping[str, SpecT]):
    """Specs keyed by id, in insertion order, looked up in either spelling of an id.

    A mutable mapping: ``catalogue[spec.id] = spec`` adds one (the key must be the spec's id),
    ``del catalogue[id]`` removes one. `find` looks an id up in either spelling; `closest`
    names the nearest known ids. Subclasses name the spec type they hold.
    """

    spec_type: ClassVar[type]

    def __init__(self, specs: Iterable[SpecT] = ()) -> None:
        self._specs: dict[str, SpecT] = {}
        self._lock = threading.Lock()
        for spec in specs:
            self.add(spec)

    def add(self, spec: SpecT) -> None:
        """Add ``spec``, or replace the one with the same id."""
        self[spec.id] = spec

    def __setitem__(self, key: str, spec: SpecT) -> None:
        kind = self.spec_type.__name__
        if not isinstance(spec, self.spec_type):
            raise TypeError(f"a catalogue holds {kind} objects, not {type(spec).__name__}")
        if key != spec.id:
            raise ValueError(f"key {key!r} differs from the {kind}'s id {spec.id!r}")
        with self._lock:
            self._specs[key] = spec

    def __getitem__(self, key: str) -> SpecT:
        return self._specs[key]

    def __delitem__(self, key: str) -> None:
        with self._lock:
            del self._specs[key]

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._specs))

    def __len__(self) -> int:
        return len(self._specs)

    def specs(self) -> list[SpecT]:
        """The specs, in catalogue order."""
        return list(self._specs.values())

    def find(self, spec_id: str) -> SpecT | None:
        """The spec named ``spec_id`` in either spelling (any case), or None."""
        exact = self._specs.get(spec_id)
        if exact is not None:
            return exact
        wanted = normalize_id(spec_id)
        return next((s for s in self.specs() if normalize_id(s.id) == wanted), None)

    def closest(self, spec_id: str, n: int = 3) -> list[str]:
        """Up to ``n`` known ids that look most like ``spec_id`` (may be empty; always for an
        id longer than `MAX_COMPARED_ID_CHARS`, whose comparison would cost too much)."""
        if len(spec_id) > MAX_COMPARED_ID_CHARS:
            return []
        by_normal = {normalize_id(spec.id): spec.id for spec in self.specs()}
        matches = difflib.get_close_matches(normalize_id(spec_id), by_normal, n=n, cutoff=0.4)
        return [by_normal[match] for match in matches]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self._specs)!r})"


class Catalogue(SpecCatalogue[ModelSpec]):
    """The chat models a gateway serves, keyed by id, in insertion order.

    A mutable mapping: ``catalogue["my-model"] = ModelSpec("my-model", ...)`` adds one (the key
    must be the spec's id), ``del catalogue["gpt-4o"]`` removes one. `find` looks an id up in
    either spelling; `closest` names the nearest known ids.
    """

    spec_type = ModelSpec
