"""`/v1/webhooks/deliveries` and `/v1/webhooks/destinations`: the outbox and each destination's
circuit, for a principal with the `operator` scope.
"""

from typing import Annotated

from fastapi import APIRouter, Path, Query
from pydantic import BaseModel, ConfigDict, Field

from symfonic.core.contracts.errors import DeliveryNotFound, ScopeRequired
from symfonic.core.contracts.principal import WILDCARD, Principal
from symfonic.core.contracts.webhooks import (
    DeliveryQuery,
    DeliveryState,
    WebhookEventType,
)
from symfonic.core.contracts.wire import (
    DeliveryList,
    DeliveryView,
    DestinationList,
    DestinationView,
)
from symfonic.server.http.service import AuthenticatingRoute, Caller, Host
from symfonic.server.service.webhook_circuit import describe
from symfonic.server.transport.errors import documented

OPERATOR = "operator"
# What an operator is shown when no state is asked for: what still needs attention.
UNSETTLED = frozenset({DeliveryState.FAILED, DeliveryState.PENDING})
MAX_DELIVERY_ID = 2**63 - 1


class DeliveryFilter(BaseModel):
    model_config = ConfigDict(extra="forbid")

    state: list[DeliveryState] = Field(
        default_factory=list,
        description="Which states to list (repeatable; default: failed and pending).",
    )
    type: WebhookEventType | None = Field(default=None, description="Only this event type.")
    url: str | None = Field(default=None, max_length=2000, description="Only this URL.")
    limit: int = Field(default=100, ge=1, le=1000)


def _operator(principal: Principal) -> Principal:
    if OPERATOR not in principal.scopes and WILDCARD not in principal.scopes:
        raise ScopeRequired(
            f"{principal.name} may not see webhook deliveries: that needs the operator scope"
        )
    return principal


router = APIRouter(prefix="/v1/webhooks", route_class=AuthenticatingRoute, tags=["webhooks"])

OPERATOR_RESPONSES = documented(401, 403, 422, 503)
OPERATOR_RESPONSES[403]["description"] = "This principal does not have the `operator` scope."


@router.get(
    "/deliveries",
    response_model=DeliveryList,
    responses=OPERATOR_RESPONSES,
    summary="Webhook deliveries, newest first (an operator's)",
)
async def list_deliveries(
    principal: Caller, host: Host, query: Annotated[DeliveryFilter, Query()]
) -> DeliveryList:
    _operator(principal)
    states = frozenset(query.state) or UNSETTLED
    found = await host.store.list_deliveries(
        DeliveryQuery(states=states, type=query.type, url=query.url, limit=query.limit)
    )
    return DeliveryList(deliveries=[DeliveryView.of(delivery) for delivery in found])


@router.get(
    "/destinations",
    response_model=DestinationList,
    responses=OPERATOR_RESPONSES,
    summary="Each webhook URL's circuit (an operator's)",
)
async def list_destinations(principal: Caller, host: Host) -> DestinationList:
    _operator(principal)
    found = await host.store.webhook_destinations()
    views = [DestinationView.of(each, describe(each)) for each in found]
    return DestinationList(destinations=views)


RESEND_RESPONSES = documented(401, 403, 404, 422, 503)
RESEND_RESPONSES[403]["description"] = OPERATOR_RESPONSES[403]["description"]
RESEND_RESPONSES[404]["description"] = "No delivery has this id."


@router.post(
    "/deliveries/{delivery_id}/resend",
    response_model=DeliveryView,
    responses=RESEND_RESPONSES,
    summary="Send a failed or delivered delivery again, with the same webhook-id",
)
async def resend(
    principal: Caller,
    host: Host,
    delivery_id: Annotated[int, Path(ge=1, le=MAX_DELIVERY_ID)],
) -> DeliveryView:
    _operator(principal)
    delivery = await host.store.resend_delivery(delivery_id, host.agent(None).clock())
    if delivery is None:
        raise DeliveryNotFound(f"no webhook delivery {delivery_id}")
    return DeliveryView.of(delivery)
