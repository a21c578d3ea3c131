"""Catching RateLimitError and waiting as long as the gateway asks before trying again."""

import time

from aigateway import RateLimitError
from aigateway.testing import MockGateway

gateway = MockGateway(seed=1)
gateway.faults.fail(429, retry_after=0)  # the next request gets a 429 saying "Retry-After: 0"
with gateway.client(max_retries=0) as client:
    messages = [{"role": "user", "content": "Hi"}]
    for attempt in range(3):
        try:
            reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages)
        except RateLimitError as error:
            wait = error.seconds_to_wait
            print(f"attempt {attempt}: rate limited, waiting {wait:.1f} s")
            time.sleep(wait)
        else:
            print(reply.text)
            break
