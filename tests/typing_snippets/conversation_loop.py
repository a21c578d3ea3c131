"""A conversation loop: each reply is appended to the messages before the next question."""

from aigateway.testing import MockGateway

gateway = MockGateway(seed=1)
with gateway.client() as client:
    messages = [{"role": "system", "content": "You answer briefly."}]
    for question in ["Pick a number.", "Double it.", "Now halve it."]:
        messages.append({"role": "user", "content": question})
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages)
        messages.append({"role": "assistant", "content": reply.text})
        print(f"> {question}\n{reply.text}")
    print(len(messages), "messages")
