"""Services that act on the world by sending or paying: ``client.email``, ``client.sms``,
``client.payments``.

These calls are marked as side effects: they are retried only when given an
``idempotency_key``, so a retry can never send twice or charge twice.
"""

from __future__ import annotations

from typing_extensions import Unpack

from aigateway._call.call import APICall
from aigateway.resources._base import AsyncResource, SyncResource, endpoint, keyword_signature
from aigateway.resources._services import ServiceMethod, ServiceResource, build_service_call
from aigateway.types.service_params import (
    EmailInputs,
    EmailParams,
    PaymentInputs,
    PaymentParams,
    SmsInputs,
    SmsParams,
)
from aigateway.types.services import EmailResult, PaymentResult, SmsResult

__all__ = ["AsyncEmail", "AsyncPayments", "AsyncSms", "Email", "Payments", "Sms"]

EMAIL_SEND = ServiceMethod("email.send", EmailParams, EmailInputs, EmailResult, side_effect=True)
SMS_SEND = ServiceMethod("sms.send", SmsParams, SmsInputs, SmsResult, side_effect=True)
PAYMENT_CREATE = ServiceMethod(
    "payments.create", PaymentParams, PaymentInputs, PaymentResult, side_effect=True
)


class _EmailMethods(ServiceResource):
    """The methods of `Email` and `AsyncEmail`."""

    @endpoint
    @keyword_signature(EmailParams)
    def send(self, **params: Unpack[EmailParams]) -> APICall[EmailResult]:
        """Send an email ``to`` one address or a list; ``subject`` and a ``text`` and/or ``html``
        body. Billed per message. Retried only with an ``idempotency_key``."""
        return build_service_call(EMAIL_SEND, params, self._pipeline.fetch)


class Email(_EmailMethods, SyncResource):
    """Sending email."""


class AsyncEmail(_EmailMethods, AsyncResource):
    """Sending email."""


class _SmsMethods(ServiceResource):
    """The methods of `Sms` and `AsyncSms`."""

    @endpoint
    @keyword_signature(SmsParams)
    def send(self, **params: Unpack[SmsParams]) -> APICall[SmsResult]:
        """Send ``text`` by SMS ``to`` a number in international form (``+14155550123``).
        Retried only with an ``idempotency_key``."""
        return build_service_call(SMS_SEND, params, self._pipeline.fetch)


class Sms(_SmsMethods, SyncResource):
    """Sending SMS."""


class AsyncSms(_SmsMethods, AsyncResource):
    """Sending SMS."""


class _PaymentsMethods(ServiceResource):
    """The methods of `Payments` and `AsyncPayments`."""

    @endpoint
    @keyword_signature(PaymentParams)
    def create(self, **params: Unpack[PaymentParams]) -> APICall[PaymentResult]:
        """Take a payment of ``amount`` (minor units, e.g. cents) in ``currency``.
        Retried only with an ``idempotency_key``."""
        return build_service_call(PAYMENT_CREATE, params, self._pipeline.fetch)


class Payments(_PaymentsMethods, SyncResource):
    """Payments."""


class AsyncPayments(_PaymentsMethods, AsyncResource):
    """Payments."""
