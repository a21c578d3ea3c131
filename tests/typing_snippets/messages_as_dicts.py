"""Messages built in a variable as plain dicts, and a reply's message passed back."""

from aigateway import ChatCompletion, Stream
from aigateway.testing import MockGateway
from aigateway.types import ChatCompletionChunk, ChatMessageInput, ChatMessageParam

gateway = MockGateway(seed=1)
with gateway.client() as client:
    # inferred as list[dict[str, str]]: accepted as it is
    history = [
        {"role": "system", "content": "You answer briefly."},
        {"role": "user", "content": "Pick a number."},
    ]
    first = client.chat.completions.create(model="gpt-4o-mini", messages=history)
    completion: ChatCompletion = first
    message = first.choices[0].message
    second = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[*history, message, {"role": "user", "content": "Double it."}],
    )
    text: str | None = second.choices[0].message.content
    print(text)

    # stream=True still picks the streaming overload with a plain-dict history
    with client.chat.completions.create(
        model="gpt-4o-mini", messages=history, stream=True
    ) as stream:
        chunks: Stream[ChatCompletionChunk] = stream
        for chunk in chunks:
            if chunk.choices:
                content: str | None = chunk.choices[0].delta.content
                print(content or "", end="")
    print()

    # annotated: editors complete keys and roles, checkers refuse a wrong role
    typed: list[ChatMessageParam] = [{"role": "user", "content": "Hi"}]
    client.chat.completions.create(model="gpt-4o-mini", messages=typed)

    # a conversation that keeps replies too
    conversation: list[ChatMessageInput] = [{"role": "user", "content": "Hi"}]
    reply = client.chat.completions.create(model="gpt-4o-mini", messages=conversation)
    conversation.append(reply.choices[0].message)
    conversation.append({"role": "user", "content": "And again?"})
    conversation.append(client.chat.completions.create(model="gpt-4o-mini", messages=conversation))
    print(len(conversation))

    # a tuple, a dict built by a function, and a reply object as a whole
    def ask(question: str) -> dict[str, str]:
        return {"role": "user", "content": question}

    client.chat.completions.create(model="gpt-4o-mini", messages=(ask("Hi"), first, ask("Ok?")))
