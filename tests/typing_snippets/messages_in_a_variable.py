"""Messages built in a variable, then passed to create."""

from aigateway.testing import MockGateway

gateway = MockGateway(seed=1)
with gateway.client() as client:
    messages = [
        {"role": "system", "content": "You answer briefly."},
        {"role": "user", "content": "Name a colour."},
    ]
    reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages)
    answer = reply.choices[0].message.content
    if answer is not None:
        print(answer.strip())
    print(reply.model, reply.usage.total_tokens if reply.usage else 0)
