"""The Java producer's queue choice from 5.1.4 on: MQFaultStrategy (MQFaultStrategy.java:137-181 in 5.3.3).

``select(info, last, reset_index)``, what DefaultMQProducerImpl.sendDefaultImpl calls:

- sendLatencyFaultEnable false (the default): the first queue, probing one increment at a time,
  whose broker is not ``last``; failing that one more plain call (same as
  TopicPublishInfo.select_one_avoiding).
- true: ``reset()`` the counter if ``reset_index`` (retries do), then the first available queue
  not on ``last``, else the first reachable one not on ``last``, else one plain call. Every probe
  costs an increment, up to 2n+1 per call.

``update_fault_item(broker, latency, isolation, reachable)`` marks a broker for
``not_available_duration(isolation ? 10000 : latency)``, and only when sendLatencyFaultEnable.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rmqsim.producers.fault_items import FaultItems
from rmqsim.producers.latency import LATENCY_5X, not_available_duration
from rmqsim.producers.topic_publish_info import Queue, TopicPublishInfo


@dataclass
class MQFaultStrategy:
    send_latency_fault_enable: bool = False
    faults: FaultItems = field(default_factory=FaultItems)

    def update_fault_item(
        self, broker: str, latency: int, isolation: bool, reachable: bool, now: int = 0
    ) -> int:
        """The duration computed for this send (applied only with sendLatencyFaultEnable)."""
        duration = int(not_available_duration(latency, isolation, LATENCY_5X))
        if self.send_latency_fault_enable:
            self.faults.update(broker, latency, duration, reachable, now)
        return duration

    def select(
        self, info: TopicPublishInfo, last_broker_name: str | None, reset_index: bool, now: int = 0
    ) -> Queue:
        def other_broker(queue: Queue) -> bool:
            return last_broker_name is None or queue[0] != last_broker_name

        if not self.send_latency_fault_enable:
            queue = info.select_filtered(other_broker)
            return queue if queue is not None else info.select_one()
        if reset_index:
            info.index.reset()
        for usable in (
            lambda q: self.faults.is_available(q[0], now),
            lambda q: self.faults.is_reachable(q[0]),
        ):
            queue = info.select_filtered(usable, other_broker)
            if queue is not None:
                return queue
        return info.select_one()
