"""``client.discovery``: the files a gateway publishes at its site root for people and agents.

They live beside the API, not under it: with ``base_url`` ``https://host/prefix/v1`` the
llms.txt file is ``https://host/prefix/llms.txt``. Each is a GET through the one request path
(retries, timeouts, errors), to the gateway's own host; the files are public, so the key it
carries there tells the gateway nothing new.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from typing_extensions import Unpack

from aigateway._call.call import APICall
from aigateway._call.settings import site_root
from aigateway.errors import NotFoundError
from aigateway.resources._base import OPTION_KEYS, AsyncResource, SyncResource, check_keywords
from aigateway.types.chat_params import RequestOptions
from aigateway.types.discovery import (
    AgentCard,
    AIPluginManifest,
    LlmsTxt,
    McpServerCard,
    parse_llms_txt,
)

if TYPE_CHECKING:
    from aigateway._stacks import URL

__all__ = ["AsyncDiscovery", "Discovery", "DiscoveryFile", "discovery_call"]

T = TypeVar("T")

_TEXT = "text/plain, text/markdown;q=0.9, */*;q=0.1"
_JSON = "application/json, */*;q=0.1"


@dataclass(frozen=True)
class DiscoveryFile(Generic[T]):
    """A file at the site root: its path there, how its bytes become a result, what to accept."""

    path: str
    parse: Callable[[bytes], T]
    accept: str


LLMS_TXT = DiscoveryFile("llms.txt", parse_llms_txt, _TEXT)
LLMS_FULL_TXT = DiscoveryFile("llms-full.txt", parse_llms_txt, _TEXT)
AGENT_CARD = DiscoveryFile("agent.json", AgentCard.model_validate_json, _JSON)
MCP_SERVER_CARD = DiscoveryFile(".well-known/mcp.json", McpServerCard.model_validate_json, _JSON)
AI_PLUGIN_MANIFEST = DiscoveryFile(
    ".well-known/ai-plugin.json", AIPluginManifest.model_validate_json, _JSON
)


def discovery_call(
    base_url: URL, file: DiscoveryFile[T], options: RequestOptions, method: str
) -> APICall[T]:
    """The GET of ``file`` at the site root of ``base_url`` (an absolute URL, so the path is
    not joined under ``/v1/``); the caller's ``extra_headers`` win over the ``Accept`` sent."""
    check_keywords(options, OPTION_KEYS, f"discovery.{method}")
    headers = {"Accept": file.accept, **(options.get("extra_headers") or {})}
    url = str(site_root(base_url).join(file.path))
    return APICall("GET", url, parse=file.parse, options={**options, "extra_headers": headers})


def _name_the_file(error: NotFoundError, url: str) -> None:
    """Make the 404 of a discovery file name the file (the gateway's own message is often a
    generic page)."""
    error.message = f"the gateway does not publish {url}: {error.message}"
    error.args = (error.message,)


class Discovery(SyncResource):
    """The gateway's discovery files: llms.txt, the A2A agent card, the MCP server card and
    the plugin manifest. A file the gateway does not publish is a `NotFoundError`."""

    def llms_txt(self, **options: Unpack[RequestOptions]) -> LlmsTxt:
        """``/llms.txt``: the short guide for language models (title, summary, link sections)."""
        return self._read(LLMS_TXT, options, "llms_txt")

    def llms_full_txt(self, **options: Unpack[RequestOptions]) -> LlmsTxt:
        """``/llms-full.txt``: the whole reference in one text (``str(result)``)."""
        return self._read(LLMS_FULL_TXT, options, "llms_full_txt")

    def agent_card(self, **options: Unpack[RequestOptions]) -> AgentCard:
        """``/agent.json``: the A2A agent card (skills, capabilities, security)."""
        return self._read(AGENT_CARD, options, "agent_card")

    def mcp_server_card(self, **options: Unpack[RequestOptions]) -> McpServerCard:
        """``/.well-known/mcp.json``: the MCP server card (the operations as tools)."""
        return self._read(MCP_SERVER_CARD, options, "mcp_server_card")

    def ai_plugin_manifest(self, **options: Unpack[RequestOptions]) -> AIPluginManifest:
        """``/.well-known/ai-plugin.json``: the OpenAI plugin manifest."""
        return self._read(AI_PLUGIN_MANIFEST, options, "ai_plugin_manifest")

    def _read(self, file: DiscoveryFile[T], options: RequestOptions, method: str) -> T:
        call = discovery_call(self._pipeline.config.base_url, file, options, method)
        try:
            result: T = self._request(call)
        except NotFoundError as error:
            _name_the_file(error, call.path)
            raise
        return result


class AsyncDiscovery(AsyncResource):
    """The gateway's discovery files: llms.txt, the A2A agent card, the MCP server card and
    the plugin manifest. A file the gateway does not publish is a `NotFoundError`."""

    async def llms_txt(self, **options: Unpack[RequestOptions]) -> LlmsTxt:
        """``/llms.txt``: the short guide for language models (title, summary, link sections)."""
        return await self._read(LLMS_TXT, options, "llms_txt")

    async def llms_full_txt(self, **options: Unpack[RequestOptions]) -> LlmsTxt:
        """``/llms-full.txt``: the whole reference in one text (``str(result)``)."""
        return await self._read(LLMS_FULL_TXT, options, "llms_full_txt")

    async def agent_card(self, **options: Unpack[RequestOptions]) -> AgentCard:
        """``/agent.json``: the A2A agent card (skills, capabilities, security)."""
        return await self._read(AGENT_CARD, options, "agent_card")

    async def mcp_server_card(self, **options: Unpack[RequestOptions]) -> McpServerCard:
        """``/.well-known/mcp.json``: the MCP server card (the operations as tools)."""
        return await self._read(MCP_SERVER_CARD, options, "mcp_server_card")

    async def ai_plugin_manifest(self, **options: Unpack[RequestOptions]) -> AIPluginManifest:
        """``/.well-known/ai-plugin.json``: the OpenAI plugin manifest."""
        return await self._read(AI_PLUGIN_MANIFEST, options, "ai_plugin_manifest")

    async def _read(self, file: DiscoveryFile[T], options: RequestOptions, method: str) -> T:
        call = discovery_call(self._pipeline.config.base_url, file, options, method)
        try:
            result: T = await self._request(call)
        except NotFoundError as error:
            _name_the_file(error, call.path)
            raise
        return result
