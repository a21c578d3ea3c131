"""The mock gateway's fake model: deterministic replies under a seed, no I/O, nothing of the
gateway imported.

``engine.py`` writes a completion (text, stop, ``max_tokens``, JSON, tool calls, stream
chunks); ``policy.py`` reads what a request asks of the reply (the ``tool_choice`` policy, the
JSON an answer must be); ``reply.py`` shapes replies, ``logprobs.py`` fakes log probabilities;
``schema.py`` draws values of a JSON schema (and checks them); ``replies.py`` is where a
gateway's replies come from (queued, the user's function, the engine).
"""
