"""Web and social data services: ``client.web`` (scraping, search) and ``client.social``."""

from __future__ import annotations

from typing_extensions import Unpack

from aigateway._call.call import APICall
from aigateway.resources._base import AsyncResource, SyncResource, endpoint, keyword_signature
from aigateway.resources._services import ServiceMethod, ServiceResource, build_service_call
from aigateway.types.service_params import (
    ScrapeInputs,
    ScrapeParams,
    SearchInputs,
    SearchParams,
    SocialInputs,
    SocialParams,
)
from aigateway.types.services import ScrapeResult, SearchResult, SocialResult

__all__ = ["AsyncSocial", "AsyncWeb", "Social", "Web"]

SCRAPE = ServiceMethod("web.scrape", ScrapeParams, ScrapeInputs, ScrapeResult)
SEARCH = ServiceMethod("web.search", SearchParams, SearchInputs, SearchResult)
SOCIAL_PROFILE = ServiceMethod("social.profile", SocialParams, SocialInputs, SocialResult)


class _WebMethods(ServiceResource):
    """The methods of `Web` and `AsyncWeb`."""

    @endpoint
    @keyword_signature(ScrapeParams)
    def scrape(self, **params: Unpack[ScrapeParams]) -> APICall[ScrapeResult]:
        """Scrape the page at ``url``: its title, text and links. Billed per request."""
        return build_service_call(SCRAPE, params, self._pipeline.fetch)

    @endpoint
    @keyword_signature(SearchParams)
    def search(self, **params: Unpack[SearchParams]) -> APICall[SearchResult]:
        """Search the web for ``query``; up to ``num_results`` hits. Billed per request."""
        return build_service_call(SEARCH, params, self._pipeline.fetch)


class Web(_WebMethods, SyncResource):
    """Web scraping and web search."""


class AsyncWeb(_WebMethods, AsyncResource):
    """Web scraping and web search."""


class _SocialMethods(ServiceResource):
    """The methods of `Social` and `AsyncSocial`."""

    @endpoint
    @keyword_signature(SocialParams)
    def profile(self, **params: Unpack[SocialParams]) -> APICall[SocialResult]:
        """The profile and recent posts of the account ``handle`` on ``platform``."""
        return build_service_call(SOCIAL_PROFILE, params, self._pipeline.fetch)


class Social(_SocialMethods, SyncResource):
    """Social data."""


class AsyncSocial(_SocialMethods, AsyncResource):
    """Social data."""
