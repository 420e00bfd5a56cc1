"""What strategies read besides mqAll and cidAll: one typed, read-only attribute per parameter.

A name starting ``queue_`` holds one value per flat queue of the batch, ``client_`` one per flat
client, any other one value per group. None means the batch has no such parameter, and the
strategy that reads it applies its default (or, where RocketMQ has none, says so).

Two kinds satisfy ``Params``: ``ParamValues``, given values (tests, conformance records, one
STICKY phase), and the allocation stage's ``stage.batches.RouteParams``, which converts each
parameter from the Arrow route rows on first use: most batches never need rooms or CONFIG lists.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from rmqsim.arrays import Strings, offsets

_I64 = np.int64


@dataclass(frozen=True)
class ConfigLists:
    """Every flat client's configured list, flat: client i's entries are
    ``broker[offsets[i]:offsets[i + 1]]`` with ``queue_id`` alongside, and ``null[i]`` where its
    list is null. From a Spark batch the brokers stay Arrow: a million configured queues as Python
    tuples cost more than the rest of the stage."""

    offsets: np.ndarray
    broker: Strings
    queue_id: np.ndarray
    null: np.ndarray

    @staticmethod
    def from_lists(lists: Sequence[Sequence[tuple[str, int]] | None]) -> ConfigLists:
        """From one list of (broker, queue_id) pairs, or None, per flat client (tests, records)."""
        pairs = [pair for configured in lists if configured is not None for pair in configured]
        return ConfigLists(
            offsets=offsets(np.array([0 if c is None else len(c) for c in lists], dtype=_I64)),
            broker=np.array([b for b, _ in pairs], dtype=object),
            queue_id=np.array([q for _, q in pairs], dtype=_I64),
            null=np.array([c is None for c in lists], dtype=bool),
        )


class Params(Protocol):
    @property
    def virtual_node_cnt(self) -> np.ndarray | None:
        """int64 per group: CONSISTENT_HASH's virtual nodes per client."""

    @property
    def consumer_idcs(self) -> np.ndarray | None:
        """object per group (a list of str, or None): MACHINE_ROOM's rooms."""

    @property
    def inner_strategy(self) -> np.ndarray | None:
        """object per group ("AVG" or "AVG_BY_CIRCLE"): MACHINE_ROOM_NEARBY's inner strategy."""

    @property
    def queue_room(self) -> Strings | None:
        """str or None per flat queue: MACHINE_ROOM_NEARBY's room of the queue's broker."""

    @property
    def client_room(self) -> Strings | None:
        """str or None per flat client: MACHINE_ROOM_NEARBY's room of the client."""

    @property
    def client_config(self) -> ConfigLists | np.ndarray | None:
        """CONFIG's configured list per flat client: ConfigLists, or an object array of lists of
        (broker, queue_id) pairs (None for a null list)."""

    @property
    def queue_backlog(self) -> np.ndarray | None:
        """int64 per flat queue: LAG_BALANCED's backlog (0 where unknown)."""

    @property
    def queue_inflow(self) -> np.ndarray | None:
        """float64 per flat queue: RATE_BALANCED's messages per second (None: no rates)."""

    @property
    def client_capacity(self) -> np.ndarray | None:
        """float64 per flat client: RATE_BALANCED's capacity, NaN where unknown (None: none known)."""

    @property
    def queue_previous_owner(self) -> np.ndarray | None:
        """int64 per flat queue: STICKY's previous owner, a cidAll position within the group, or -1."""


@dataclass(frozen=True)
class ParamValues:
    """Params from values given up front."""

    virtual_node_cnt: np.ndarray | None = None
    consumer_idcs: np.ndarray | None = None
    inner_strategy: np.ndarray | None = None
    queue_room: Strings | None = None
    client_room: Strings | None = None
    client_config: ConfigLists | np.ndarray | None = None
    queue_backlog: np.ndarray | None = None
    queue_inflow: np.ndarray | None = None
    client_capacity: np.ndarray | None = None
    queue_previous_owner: np.ndarray | None = None


def required(value: object, name: str, strategy: str):
    """``value``, or a clear error where a strategy's parameter was never given (rather than
    every client silently returning nothing)."""
    if value is None:
        raise ValueError(f"{strategy} needs params.{name}")
    return value
