"""with_raw_response, and structured outputs with parse."""

from pydantic import BaseModel

from aigateway import ChatCompletion
from aigateway.testing import MockGateway


class Weather(BaseModel):
    city: str
    celsius: float


gateway = MockGateway(seed=1)
question = [{"role": "user", "content": "Weather in Oslo?"}]
with gateway.client() as client:
    raw = client.chat.completions.with_raw_response.create(model="gpt-4o-mini", messages=question)
    status: int = raw.status_code
    attempts: int = raw.attempts
    completion: ChatCompletion = raw.parse()
    print(status, attempts, completion.text)

    parsed = client.chat.completions.parse(
        model="gpt-4o-mini", messages=question, response_format=Weather
    )
    weather: Weather | None = parsed.choices[0].message.parsed
    assert weather is not None
    celsius: float = weather.celsius
    print(weather.city, celsius)
