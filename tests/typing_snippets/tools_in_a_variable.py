"""Tools written as dicts in a variable, and the model's tool calls read from the reply."""

import json

from aigateway.testing import MockGateway

tools = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get today's weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]

gateway = MockGateway(seed=1)
with gateway.client() as client:
    messages = [{"role": "user", "content": "What's the weather in Paris?"}]
    reply = client.chat.completions.create(model="gpt-4o", messages=messages, tools=tools)
    message = reply.choices[0].message
    for call in message.tool_calls or []:
        arguments = json.loads(call.function.arguments)
        print(call.id, call.function.name, arguments)
    print(reply.choices[0].finish_reason, message.content)
