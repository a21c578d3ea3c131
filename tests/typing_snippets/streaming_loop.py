"""A streaming loop: print each piece of the reply as it arrives."""

from aigateway.testing import MockGateway

gateway = MockGateway(seed=1)
with gateway.client() as client:
    messages = [{"role": "user", "content": "Tell me a story."}]
    stream = client.chat.completions.create(model="gpt-4o-mini", messages=messages, stream=True)
    story = ""
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content is not None:
            story += chunk.choices[0].delta.content
            print(chunk.choices[0].delta.content, end="", flush=True)
    print()
    print(len(story), "characters")
