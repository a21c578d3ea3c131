"""Fake log probabilities for the mock's replies (``logprobs``, ``top_logprobs``).

The tokens are the engine's (a run of word characters or one other character), each carrying
the spaces before it, so they join back to the content exactly and there are as many as the
content's completion tokens. Each token gets a probability between 0.5 and 1 (so a log
probability between about -0.69 and 0) drawn from the generator it is given; its
``top_logprobs`` list the token itself first, then other tokens sharing the remaining
probability, each less likely than the one before. Nothing here means anything; it has the
shape and the arithmetic of the real thing, reproducibly.
"""

from __future__ import annotations

import math
import random
import re
from typing import Any

__all__ = ["logprob_tokens", "token_logprobs"]

_TOKEN = re.compile(r"\s*(?:\w+|[^\w\s])")
_ALTERNATIVES = (
    "the", "a", "and", "of", "to", "in", "is", "it", "that", "for", "on", "with", "as", "this",
    "model", "reply", "value", "result", "answer", "token", ",", ".", ":", "!", "?", "-",
)  # fmt: skip


def logprob_tokens(text: str) -> list[str]:
    """``text`` as tokens, each with the spaces before it; trailing spaces join the last."""
    tokens: list[str] = _TOKEN.findall(text)
    joined = sum(map(len, tokens))
    if tokens and joined < len(text):
        tokens[-1] += text[joined:]
    return tokens


def token_logprobs(text: str, rng: random.Random, top: int) -> list[dict[str, Any]]:
    """The ``logprobs.content`` entries of ``text``, with ``top`` alternatives at each token."""
    return [_entry(token, rng, top) for token in logprob_tokens(text)]


def _entry(token: str, rng: random.Random, top: int) -> dict[str, Any]:
    chosen = rng.uniform(0.5, 1.0)
    lead = token[: len(token) - len(token.lstrip())]
    candidates = [lead + word for word in _ALTERNATIVES if lead + word != token]
    alternatives = rng.sample(candidates, max(top - 1, 0))
    rest = 1.0 - chosen
    shares = sorted((rng.uniform(0.5, 1.0) * 0.5**rank for rank in range(1, top)), reverse=True)
    listed = [_logprob(token, chosen)] if top > 0 else []
    listed += [_logprob(alt, rest * share) for alt, share in zip(alternatives, shares, strict=True)]
    return {**_logprob(token, chosen), "top_logprobs": listed}


def _logprob(token: str, probability: float) -> dict[str, Any]:
    value = round(math.log(probability), 6) if probability > 0 else -9999.0
    return {"token": token, "logprob": min(value, 0.0), "bytes": list(token.encode("utf-8"))}
