"""The discovery files a gateway serves at its site root, as lenient models.

``/llms.txt`` and ``/llms-full.txt`` (the llmstxt.org format: a title, a summary, sections of
links) are read as `LlmsTxt`: the text as it arrived, plus its structure where the text follows
the format. ``/agent.json`` is an A2A agent card (`AgentCard`), ``/.well-known/mcp.json`` an MCP
server card (`McpServerCard`), ``/.well-known/ai-plugin.json`` an OpenAI plugin manifest
(`AIPluginManifest`). Every field is optional and unknown fields are kept (``model_extra``), so
any server's variant of these public shapes parses.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import ConfigDict, Field

from aigateway.types._base import GatewayModel

__all__ = [
    "AIPluginApi",
    "AIPluginAuth",
    "AIPluginManifest",
    "AgentCapabilities",
    "AgentCard",
    "AgentProvider",
    "AgentSkill",
    "LlmsTxt",
    "LlmsTxtLink",
    "LlmsTxtSection",
    "McpAuthentication",
    "McpRemote",
    "McpServerCard",
    "McpTool",
    "parse_llms_txt",
]


class _Document(GatewayModel):
    """A discovery document: numbers where text is expected are read as text."""

    model_config = ConfigDict(coerce_numbers_to_str=True)


# -- llms.txt ------------------------------------------------------------------------------


class LlmsTxtLink(_Document):
    """One ``- [title](url): description`` line of a section."""

    title: str
    url: str
    description: str | None = None


class LlmsTxtSection(_Document):
    """A ``## name`` section: its links, and its whole markdown (``content``) for prose."""

    name: str
    links: list[LlmsTxtLink] = Field(default_factory=list)
    content: str = ""


class LlmsTxt(_Document):
    """An llms.txt file: ``text`` as it arrived; ``title`` (the ``# `` heading), ``summary``
    (the ``> `` quote), ``details`` (the prose before the first section) and ``sections``
    where the text follows the format, else None or empty. ``str()`` gives the text."""

    text: str
    title: str | None = None
    summary: str | None = None
    details: str | None = None
    sections: list[LlmsTxtSection] = Field(default_factory=list)

    def section(self, name: str) -> LlmsTxtSection | None:
        """The section called ``name`` (ignoring case), or None."""
        wanted = name.strip().lower()
        return next((s for s in self.sections if s.name.lower() == wanted), None)

    @property
    def links(self) -> list[LlmsTxtLink]:
        """Every link of every section, in order."""
        return [link for section in self.sections for link in section.links]

    def __str__(self) -> str:
        return self.text


_LINK = re.compile(
    r"^\s*[-*+]\s+\[(?P<title>[^\]]*)\]\((?P<url>[^)\s]*)(?:\s+\"[^\"]*\")?\)"
    r"\s*(?::\s*(?P<description>.*))?$"
)
_HTML_START = re.compile(rb"^\s*<(?:!doctype\s+html|html[\s>]|head[\s>]|body[\s>])", re.IGNORECASE)


def parse_llms_txt(raw: bytes | str) -> LlmsTxt:
    """Read an llms.txt file leniently: text that does not follow the format keeps its
    ``text`` with no structure. An HTML page (a site's catch-all answering an unknown path)
    is a `ValueError`: it is not the file."""
    data = raw.encode("utf-8") if isinstance(raw, str) else raw
    if _HTML_START.match(data[:256].lstrip(b"\xef\xbb\xbf")):
        raise ValueError("an HTML page, not an llms.txt file")
    text = data.decode("utf-8-sig", errors="replace")
    title = summary = None
    preamble: list[str] = []
    sections: list[LlmsTxtSection] = []
    body: list[str] = []
    in_code = False

    def close_section() -> None:
        if sections:
            sections[-1].content = "\n".join(body).strip()

    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            in_code = not in_code
        heading = not in_code and not line.startswith((" ", "\t"))
        if heading and title is None and not sections and stripped.startswith("# "):
            title = stripped[2:].strip()
        elif heading and stripped.startswith("## "):
            close_section()
            body = []
            sections.append(LlmsTxtSection(name=stripped[3:].strip()))
        elif sections:
            body.append(line)
            match = None if in_code else _LINK.match(line)
            if match:
                description = (match["description"] or "").strip() or None
                link = LlmsTxtLink(title=match["title"], url=match["url"], description=description)
                sections[-1].links.append(link)
        elif not in_code and summary is None and not preamble and stripped.startswith(">"):
            summary = stripped[1:].strip()
        elif summary is not None and not preamble and stripped.startswith(">"):
            summary = f"{summary} {stripped[1:].strip()}".strip()
        elif stripped or preamble:
            preamble.append(line)
    close_section()
    details = "\n".join(preamble).strip() or None
    return LlmsTxt(text=text, title=title, summary=summary, details=details, sections=sections)


# -- /agent.json: an A2A agent card --------------------------------------------------------


class AgentProvider(_Document):
    organization: str | None = None
    url: str | None = None


class AgentCapabilities(_Document):
    streaming: bool | None = None
    push_notifications: bool | None = Field(default=None, alias="pushNotifications")
    state_transition_history: bool | None = Field(default=None, alias="stateTransitionHistory")


class AgentSkill(_Document):
    """Something the agent can do; the gateway lists its models and service categories."""

    id: str | None = None
    name: str | None = None
    description: str | None = None
    tags: list[str] = Field(default_factory=list)
    examples: list[str] = Field(default_factory=list)
    input_modes: list[str] | None = Field(default=None, alias="inputModes")
    output_modes: list[str] | None = Field(default=None, alias="outputModes")


class AgentCard(_Document):
    """An A2A agent card: who the agent is, where it answers (``url``), how to authenticate
    and its ``skills``. The wire's camelCase names are snake_case attributes."""

    name: str | None = None
    description: str | None = None
    url: str | None = None
    version: str | None = None
    protocol_version: str | None = Field(default=None, alias="protocolVersion")
    preferred_transport: str | None = Field(default=None, alias="preferredTransport")
    provider: AgentProvider | None = None
    documentation_url: str | None = Field(default=None, alias="documentationUrl")
    icon_url: str | None = Field(default=None, alias="iconUrl")
    capabilities: AgentCapabilities = Field(default_factory=AgentCapabilities)
    security_schemes: dict[str, Any] = Field(default_factory=dict, alias="securitySchemes")
    security: list[dict[str, Any]] = Field(default_factory=list)
    default_input_modes: list[str] = Field(default_factory=list, alias="defaultInputModes")
    default_output_modes: list[str] = Field(default_factory=list, alias="defaultOutputModes")
    skills: list[AgentSkill] = Field(default_factory=list)


# -- /.well-known/mcp.json: an MCP server card ---------------------------------------------


class McpTool(_Document):
    """A tool: its name, what it does, and the JSON Schema of its arguments."""

    name: str | None = None
    title: str | None = None
    description: str | None = None
    input_schema: dict[str, Any] = Field(default_factory=dict, alias="inputSchema")
    output_schema: dict[str, Any] | None = Field(default=None, alias="outputSchema")
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")
    """Extra data about the tool; the mock names the HTTP call in ``meta["http"]``."""


class McpAuthentication(_Document):
    required: bool | None = None
    schemes: list[str] = Field(default_factory=list)


class McpRemote(_Document):
    """Where a remote server answers (``type`` such as ``streamable-http`` or ``sse``)."""

    type: str | None = None
    url: str | None = None


class McpServerCard(_Document):
    """An MCP server card: the server's name and version, how to reach and authenticate to it,
    and what it offers (``tools``, ``resources``, ``prompts``). Cards that put the name under
    ``serverInfo`` keep it there, in ``server_info``."""

    name: str | None = None
    title: str | None = None
    version: str | None = None
    description: str | None = None
    website_url: str | None = Field(default=None, alias="websiteUrl")
    protocol_version: str | None = Field(default=None, alias="protocolVersion")
    server_info: dict[str, Any] | None = Field(default=None, alias="serverInfo")
    capabilities: dict[str, Any] = Field(default_factory=dict)
    authentication: McpAuthentication | None = None
    remotes: list[McpRemote] = Field(default_factory=list)
    tools: list[McpTool] = Field(default_factory=list)
    resources: list[dict[str, Any]] = Field(default_factory=list)
    prompts: list[dict[str, Any]] = Field(default_factory=list)

    def tool(self, name: str) -> McpTool | None:
        """The tool called ``name``, or None."""
        return next((tool for tool in self.tools if tool.name == name), None)


# -- /.well-known/ai-plugin.json: an OpenAI plugin manifest --------------------------------


class AIPluginAuth(_Document):
    type: str | None = None
    authorization_type: str | None = None


class AIPluginApi(_Document):
    type: str | None = None
    url: str | None = None
    documentation_url: str | None = None
    is_user_authenticated: bool | None = None


class AIPluginManifest(_Document):
    """The ChatGPT-plugin manifest: names and descriptions for people and for the model, how
    to authenticate (``auth``) and where the API is (``api``)."""

    schema_version: str | None = None
    name_for_human: str | None = None
    name_for_model: str | None = None
    description_for_human: str | None = None
    description_for_model: str | None = None
    auth: AIPluginAuth | None = None
    api: AIPluginApi | None = None
    logo_url: str | None = None
    contact_email: str | None = None
    legal_info_url: str | None = None
