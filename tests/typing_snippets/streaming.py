"""Streams: create(stream=True) narrows to a Stream of ChatCompletionChunk; the stream helper."""

from aigateway import ChatCompletion
from aigateway.testing import MockGateway

gateway = MockGateway(seed=1)
messages = [{"role": "user", "content": "Tell me a story"}]
with gateway.client() as client:
    with client.chat.completions.create(model="gpt-4o-mini", messages=messages, stream=True) as s:
        for chunk in s:
            model: str | None = chunk.model
            for choice in chunk.choices:
                content: str | None = choice.delta.content
                print(model, content)

    with client.chat.completions.stream(model="gpt-4o-mini", messages=messages) as helper:
        for text in helper.text_stream:
            piece: str = text
            print(piece, end="")
        final: ChatCompletion = helper.get_final_completion()
    print(final.text)
