"""What the HTTP API answers, as typed models: the server's own, from the contracts
(`symfonic.core.contracts.wire` and `pause_views`), under the names the client gives them."""

from symfonic.core.contracts.pause_views import (
    MessageView,
    PauseList,
    PauseView,
    ReaddressedView,
    ToolCallView,
)
from symfonic.core.contracts.run_events import RunState
from symfonic.core.contracts.wire import (
    DeliveryList,
    DeliveryView,
    DestinationList,
    DestinationView,
    ErrorDetail,
    Health,
    RunOutcome,
    RunStarted,
    RunView,
    SessionCreated,
    SessionView,
)

ToolCall = ToolCallView
Message = MessageView
Readdressed = ReaddressedView
Pause = PauseView
PausePage = PauseList
Session = SessionView
Delivery = DeliveryView
Destination = DestinationView


class Run(RunView):
    """A background run as its viewers see it; its state as the Python API's `RunState`."""

    state: RunState  # type: ignore[assignment]


__all__ = [
    "Delivery",
    "DeliveryList",
    "Destination",
    "DestinationList",
    "ErrorDetail",
    "Health",
    "Message",
    "Pause",
    "PausePage",
    "Readdressed",
    "Run",
    "RunOutcome",
    "RunStarted",
    "Session",
    "SessionCreated",
    "ToolCall",
]
