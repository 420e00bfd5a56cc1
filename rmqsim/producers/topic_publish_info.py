"""TopicPublishInfo and its ThreadLocalIndex: the list a Java producer sends over, and the counter a
sending thread walks it with. Step by step, for the selection simulators and their tests.

ThreadLocalIndex (common/ThreadLocalIndex.java; 4.9.8 :27-36): an int per thread and per
TopicPublishInfo, unset until first use, when it starts from ``Random.nextInt()``; each
incrementAndGet stores ``stored + 1`` with int32 wraparound and returns ``stored & 0x7FFFFFFF``.
``reset()`` (5.x only) stores ``Random.nextInt(Integer.MAX_VALUE)``.

TopicPublishInfo (TopicPublishInfo.java:75-128 in 5.3.3; :70-105 at rocketmq-all-4.9.8): the
no-argument selectOneMessageQueue, the lastBrokerName one, 5.x's filtered one, and 4.x's
getQueueIdByBroker over the route's QueueDatas.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from rmqsim.producers.publish_list import PERM_WRITE

Queue = tuple[str, int]  # (broker name, queue id): a MessageQueue of the list's topic
QueueFilter = Callable[[Queue], bool]

POSITIVE_MASK = 0x7FFFFFFF


def java_int(value: int) -> int:
    """A Python int as the Java int it wraps to."""
    return (value + 2**31) % 2**32 - 2**31


@dataclass
class ThreadLocalIndex:
    stored: int  # the int the thread's ThreadLocal holds
    reset_values: Iterable[int] = ()  # what Random.nextInt(Integer.MAX_VALUE) returns, in order
    resets: int = 0  # how many reset values were used

    def __post_init__(self) -> None:
        self.stored = java_int(self.stored)
        self._pending: Iterator[int] = iter(self.reset_values)

    def increment_and_get(self) -> int:
        self.stored = java_int(self.stored + 1)
        return self.stored & POSITIVE_MASK

    def reset(self) -> None:
        try:
            value = next(self._pending)
        except StopIteration:
            raise ValueError(f"reset number {self.resets + 1}, but no more reset values were given") from None
        self.resets += 1
        self.stored = max(java_int(abs(java_int(value))), 0)  # Math.abs, then "if (index < 0) index = 0"


@dataclass
class TopicPublishInfo:
    queues: list[Queue]  # messageQueueList, in list order (4.9.7 rewrites entries in place)
    index: ThreadLocalIndex  # sendWhichQueue, for one thread
    # 4.x getQueueIdByBroker reads the route's QueueDatas: (broker, writeQueueNums, perm), as the
    # list builder left them (sorted by broker name, except for an orderTopicConf).
    route_queue_datas: list[tuple[str, int, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.queues = [(str(b), int(q)) for b, q in self.queues]

    def next_position(self) -> int:
        """The list position selectOneMessageQueue() takes: ``inc() % n``."""
        if not self.queues:
            raise ValueError("an empty publish list: the producer checks ok() before selecting")
        return self.index.increment_and_get() % len(self.queues)

    def select_one(self) -> Queue:
        """selectOneMessageQueue(): ``list[inc() % n]``."""
        return self.queues[self.next_position()]

    def select_one_avoiding(self, last_broker_name: str | None) -> Queue:
        """selectOneMessageQueue(lastBrokerName): up to n calls for a queue on another broker,
        then one more call whatever its broker."""
        if last_broker_name is not None:
            for _ in range(len(self.queues)):
                queue = self.select_one()
                if queue[0] != last_broker_name:
                    return queue
        return self.select_one()

    def select_filtered(self, *accept: QueueFilter) -> Queue | None:
        """5.x selectOneMessageQueue(filters...): up to n probes, each one increment, for a
        queue every filter accepts; None if there is none."""
        for _ in range(len(self.queues)):
            queue = self.queues[self.index.increment_and_get() % len(self.queues)]
            if all(f(queue) for f in accept):
                return queue
        return None

    def queue_nums_of(self, broker: str, write_perm_only: bool) -> int:
        """4.x getQueueIdByBroker: writeQueueNums of the first QueueData named ``broker``
        (4.9.8: the first with the write perm; 4.9.7: any perm), -1 if none."""
        for name, write_queue_nums, perm in self.route_queue_datas:
            if name == broker and (perm & PERM_WRITE or not write_perm_only):
                return write_queue_nums
        return -1
