"""What a gateway says about itself: llms.txt and the agent, MCP and plugin cards.

Runs against the bundled mock gateway (no key, no network), or against your gateway when
AIGATEWAY_BASE_URL and AIGATEWAY_API_KEY are set.
"""

import os

from aigateway import Client
from aigateway.testing import MockGateway


def show(client: Client) -> None:
    guide = client.discovery.llms_txt()
    print(f"{guide.title}: {guide.summary}")
    for section in guide.sections:
        print(f"  {section.name}: {', '.join(link.title for link in section.links[:4])}")

    card = client.discovery.agent_card()
    print(f"agent card: {card.name} at {card.url}, {len(card.skills)} skills")

    mcp = client.discovery.mcp_server_card()
    print(
        f"MCP card: {len(mcp.tools)} tools, e.g. {', '.join(t.name or '?' for t in mcp.tools[:3])}"
    )

    plugin = client.discovery.ai_plugin_manifest()
    print(f"plugin: {plugin.name_for_model}, API at {plugin.api.url if plugin.api else '?'}")

    full = client.discovery.llms_full_txt()
    print(f"llms-full.txt: {len(full.text):,} characters in {len(full.sections)} sections")


def main() -> None:
    if os.environ.get("AIGATEWAY_BASE_URL"):
        with Client() as client:
            show(client)
    else:
        with MockGateway(seed=42).client() as client:
            show(client)


if __name__ == "__main__":
    main()
