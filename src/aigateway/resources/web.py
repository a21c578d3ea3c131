"""Web and social data services: ``client.web`` (scraping, search) and ``client.social``."""

from __future__ import annotations

from typing_extensions import Unpack

from aigateway.resources._base import keyword_signature
from aigateway.resources._services import AsyncServiceResource, ServiceMethod, ServiceResource
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


class Web(ServiceResource):
    """Web scraping and web search."""

    @keyword_signature(ScrapeParams)
    def scrape(self, **params: Unpack[ScrapeParams]) -> ScrapeResult:
        """Scrape the page at ``url``: its title, text and links. Billed per request."""
        return self._run(SCRAPE, params)

    @keyword_signature(SearchParams)
    def search(self, **params: Unpack[SearchParams]) -> SearchResult:
        """Search the web for ``query``; up to ``num_results`` hits. Billed per request."""
        return self._run(SEARCH, params)


class AsyncWeb(AsyncServiceResource):
    """Web scraping and web search."""

    @keyword_signature(ScrapeParams)
    async def scrape(self, **params: Unpack[ScrapeParams]) -> ScrapeResult:
        """Scrape the page at ``url``: its title, text and links. Billed per request."""
        return await self._run(SCRAPE, params)

    @keyword_signature(SearchParams)
    async def search(self, **params: Unpack[SearchParams]) -> SearchResult:
        """Search the web for ``query``; up to ``num_results`` hits. Billed per request."""
        return await self._run(SEARCH, params)


class Social(ServiceResource):
    """Social data."""

    @keyword_signature(SocialParams)
    def profile(self, **params: Unpack[SocialParams]) -> SocialResult:
        """The profile and recent posts of the account ``handle`` on ``platform``."""
        return self._run(SOCIAL_PROFILE, params)


class AsyncSocial(AsyncServiceResource):
    """Social data."""

    @keyword_signature(SocialParams)
    async def profile(self, **params: Unpack[SocialParams]) -> SocialResult:
        """The profile and recent posts of the account ``handle`` on ``platform``."""
        return await self._run(SOCIAL_PROFILE, params)
