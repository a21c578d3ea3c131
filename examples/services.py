"""The non-chat services against the bundled mock gateway: no key, no network."""

import tempfile
from pathlib import Path

from aigateway.testing import MockGateway


def main() -> None:
    gateway = MockGateway(seed=42)
    with gateway.client() as client, tempfile.TemporaryDirectory() as folder:
        image = client.images.generate(model="flux-schnell", prompt="a lighthouse", size="96x64")
        print(f"image: {image.width}x{image.height}, saved to {image.save(Path(folder) / 'a.png')}")

        speech = client.audio.speech(model="tts-1", text="Welcome to the gateway.")
        transcript = client.audio.transcribe(model="whisper-1", audio=speech.read())
        print(f"speech: {speech.duration_seconds} s; heard: {transcript.text}")

        for hit in client.web.search(model="tavily/search", query="lighthouses").results[:2]:
            print(f"search: {hit.title} <{hit.url}>")

        document = client.documents.parse(model="llamaparse/parse", file=b"first\fsecond")
        print(f"document: {document.page_count} pages, billed {document.usage}")

        sent = client.email.send(
            model="resend/email",
            to="ada@example.com",
            subject="Hi",
            text="Hello",
            idempotency_key="example-1",
        )
        print(f"email: {sent.message_id} ({sent.status}); {client.remaining_credits} credits left")


if __name__ == "__main__":
    main()
