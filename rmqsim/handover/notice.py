"""When a client present after a step applies its new assignment (docs/CONTRACT.md, section 2e):
at once when the broker notifies the group, at its next tick after its next route poll when only
the routes changed, and at its next tick after the brokers notice a host lost without its
connection closing. A (topic, group) that learns of a change by two of these applies once it
knows both: the later time.
"""

from __future__ import annotations

import numpy as np

from rmqsim.handover.clocks import Clocks
from rmqsim.scenarios import parse

NOTIFY, ROUTES, HOST_LOSS = 1, 2, 4  # bits of a notice

# How a step's change reaches the clients, by step kind; a kind not here hands nothing over.
NOTICES: dict[type, int] = {
    parse.ConsumersJoin: NOTIFY,
    parse.ConsumersLeave: NOTIFY,
    parse.SetStrategy: NOTIFY,
    parse.SetRebalance: NOTIFY,
    parse.Designate: NOTIFY,
    parse.StaleView: NOTIFY,
    parse.Rejoin: NOTIFY,
    parse.AddBrokers: ROUTES,
    parse.RemoveBrokers: ROUTES,
    parse.BrokerDown: ROUTES,
    parse.BrokerUp: ROUTES,
    parse.SetQueueNums: ROUTES,
    parse.RoomDown: ROUTES | HOST_LOSS,
}


def notice(step: parse.Step) -> int:
    """The notice bits of a step: a crash is notified where its connections closed."""
    if isinstance(step, parse.Crash):
        return NOTIFY if step.tcp_closed else HOST_LOSS
    if isinstance(step, parse.RoomDown) and step.tcp_closed:
        return ROUTES | NOTIFY
    return NOTICES.get(type(step), 0)


def applied_at(bits: np.ndarray, t: np.ndarray, clocks: Clocks) -> np.ndarray:
    """Per client, when it applies the assignment of a change at ``t`` that reached it by
    ``bits``: the latest of the notices it needed (``t`` where none)."""
    out = np.array(t, dtype=np.float64, copy=True)
    routes = (bits & ROUTES) != 0
    if routes.any():
        out = np.where(routes, np.maximum(out, clocks.next_tick(clocks.next_poll(t))), out)
    lost = (bits & HOST_LOSS) != 0
    if lost.any():
        out = np.where(lost, np.maximum(out, clocks.next_tick(t + clocks.host_loss_s)), out)
    return out
