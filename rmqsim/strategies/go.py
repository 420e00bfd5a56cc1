"""rocketmq-client-go v2's strategies (consumer/strategy.go at 2173d07), by the group's strategy name.

A Go client computes its share with its own library's code over the same mqAll and cidAll as a
Java client, sorted the Go way (strategies.go_client). Per name:

- AVG, AVG_BY_CIRCLE: Java's arithmetic (strategies.avg, avg_by_circle) over Go's order.
- CONSISTENT_HASH: a different ring (strategies.go_consistent_hash).
- MACHINE_ROOM: blocks from the unfiltered mqAll, a bug of that client (strategies.go_machine_room).
- MACHINE_ROOM_NEARBY: AVG. AllocateByMachineNearby is a TODO that calls AllocateByAveragely, so
  the rooms and the inner strategy are ignored.
- CONFIG: the configured list, nothing checked, as in Java (strategies.by_config).

No Go strategy throws an argument error: where Java throws IllegalArgumentException, Go returns nil
(``Allocation.null_result``), as it does for a currentCID that is not in cidAll. The only errors are
Go panics, which the rebalance goroutine recovers from: the Strategy's ``check`` reports them.
Run these with registry.allocate, like Java's.
"""

from __future__ import annotations

from collections.abc import Mapping

from rmqsim.strategies import (
    avg,
    avg_by_circle,
    by_config,
    go_consistent_hash,
    go_machine_room,
    machine_room_nearby,
)
from rmqsim.strategies.go_client import as_go_client
from rmqsim.strategies.registry import Strategy

_avg = as_go_client(avg.allocate)

GO_STRATEGIES: Mapping[str, Strategy] = {
    s.name: s
    for s in (
        Strategy(avg.NAME, _avg, checks_arguments=False),
        Strategy(avg_by_circle.NAME, as_go_client(avg_by_circle.allocate), checks_arguments=False),
        Strategy(by_config.NAME, by_config.allocate, checks_arguments=False),
        Strategy(
            go_consistent_hash.NAME,
            as_go_client(go_consistent_hash.allocate),
            checks_arguments=False,
            check=go_consistent_hash.check,
        ),
        Strategy(
            go_machine_room.NAME,
            as_go_client(go_machine_room.allocate),
            checks_arguments=False,
            check=go_machine_room.check,
        ),
        Strategy(machine_room_nearby.NAME, _avg, checks_arguments=False),
    )
}
