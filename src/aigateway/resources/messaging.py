"""Services that act on the world by sending or paying: ``client.email``, ``client.sms``,
``client.payments``.

These calls are marked as side effects: they are retried only when given an
``idempotency_key``, so a retry can never send twice or charge twice.
"""

from __future__ import annotations

from typing_extensions import Unpack

from aigateway.resources._base import keyword_signature
from aigateway.resources._services import AsyncServiceResource, ServiceMethod, ServiceResource
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


class Email(ServiceResource):
    """Sending email."""

    @keyword_signature(EmailParams)
    def send(self, **params: Unpack[EmailParams]) -> EmailResult:
        """Send an email ``to`` one address or a list; ``subject`` and a ``text`` and/or ``html``
        body. Billed per message. Retried only with an ``idempotency_key``."""
        return self._run(EMAIL_SEND, params)


class AsyncEmail(AsyncServiceResource):
    """Sending email."""

    @keyword_signature(EmailParams)
    async def send(self, **params: Unpack[EmailParams]) -> EmailResult:
        """Send an email ``to`` one address or a list; ``subject`` and a ``text`` and/or ``html``
        body. Billed per message. Retried only with an ``idempotency_key``."""
        return await self._run(EMAIL_SEND, params)


class Sms(ServiceResource):
    """Sending SMS."""

    @keyword_signature(SmsParams)
    def send(self, **params: Unpack[SmsParams]) -> SmsResult:
        """Send ``text`` by SMS ``to`` a number in international form (``+14155550123``).
        Retried only with an ``idempotency_key``."""
        return self._run(SMS_SEND, params)


class AsyncSms(AsyncServiceResource):
    """Sending SMS."""

    @keyword_signature(SmsParams)
    async def send(self, **params: Unpack[SmsParams]) -> SmsResult:
        """Send ``text`` by SMS ``to`` a number in international form (``+14155550123``).
        Retried only with an ``idempotency_key``."""
        return await self._run(SMS_SEND, params)


class Payments(ServiceResource):
    """Payments."""

    @keyword_signature(PaymentParams)
    def create(self, **params: Unpack[PaymentParams]) -> PaymentResult:
        """Take a payment of ``amount`` (minor units, e.g. cents) in ``currency``.
        Retried only with an ``idempotency_key``."""
        return self._run(PAYMENT_CREATE, params)


class AsyncPayments(AsyncServiceResource):
    """Payments."""

    @keyword_signature(PaymentParams)
    async def create(self, **params: Unpack[PaymentParams]) -> PaymentResult:
        """Take a payment of ``amount`` (minor units, e.g. cents) in ``currency``.
        Retried only with an ``idempotency_key``."""
        return await self._run(PAYMENT_CREATE, params)
