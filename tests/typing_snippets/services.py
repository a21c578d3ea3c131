"""Services: client.run with any inputs, images.generate, and a typed service."""

from typing import Any

from aigateway import RunResult
from aigateway.testing import MockGateway
from aigateway.types.services import ImageResult, SpeechResult

gateway = MockGateway(seed=1)
with gateway.client() as client:
    inputs = {"query": "unified ai gateway", "num_results": 3}
    result: RunResult = client.run("tavily/search", inputs)
    output: Any = result.output
    credits_left: float | None = result.remaining_credits
    print(result.model, len(output["results"]), credits_left)

    image: ImageResult = client.images.generate(
        model="flux-schnell", prompt="a lighthouse", size="96x64"
    )
    print(image.model)

    speech: SpeechResult = client.audio.speech(model="elevenlabs/multilingual-v2", text="Hello")
    audio: bytes = speech.read()
    print(len(audio))
