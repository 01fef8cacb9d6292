"""What a hosted agent declares to AG-UI front ends (`GET /v1/agui/capabilities`): only what it
actually does, since a front end shapes its interface on it.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from ag_ui.core import (
    AgentCapabilities,
    HumanInTheLoopCapabilities,
    IdentityCapabilities,
    Tool,
    ToolsCapabilities,
    TransportCapabilities,
)

from symfonic.agent.agent import SymfonicAgent


def _symfonic_version() -> str | None:
    try:
        return version("symfonic")
    except PackageNotFoundError:
        return None


def capabilities_of(agent: SymfonicAgent) -> AgentCapabilities:
    tools = [
        Tool(
            name=tool.name,
            description=tool.binding.description or tool.name,
            parameters=tool.parameters,
        )
        for tool in agent.toolbox.tools.values()
    ]
    return AgentCapabilities(
        identity=IdentityCapabilities(
            name=agent.name, type="symfonic", version=_symfonic_version()
        ),
        transport=TransportCapabilities(streaming=True),
        tools=ToolsCapabilities(supported=True, items=tools, client_provided=False),
        human_in_the_loop=HumanInTheLoopCapabilities(
            supported=True,
            approvals=bool(agent.toolbox.gates),
            interrupts=True,
            approve_with_edits=bool(agent.toolbox.gates),
        ),
    )
