"""Errors caught by class; a bad role in a plain-dict variable is refused before sending."""

from aigateway import APIStatusError, InvalidRequestError, NotFoundError
from aigateway.errors import Violation
from aigateway.testing import MockGateway

gateway = MockGateway(seed=1)
with gateway.client() as client:
    messages = [{"role": "usr", "content": "Hi"}]  # a typo no checker sees in a plain dict
    try:
        client.chat.completions.create(model="gpt-4o-mini", messages=messages)
    except InvalidRequestError as error:
        violations: tuple[Violation, ...] = error.violations
        assert violations[0].field == "messages.0"
        assert "unknown role" in violations[0].problem
        print(violations[0].problem)
    else:
        raise AssertionError("a bad role was sent")

    try:
        client.run("no/such-service", {"query": "x"})
    except NotFoundError as error:
        status: int = error.status_code
        print(status, error.message)
    except APIStatusError as error:
        raise AssertionError(f"unexpected {error!r}") from error
