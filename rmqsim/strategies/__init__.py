"""Allocation strategies as pure numpy functions over batches of (topic, group) problems.

No Spark import anywhere below this package: every strategy is testable on plain arrays.
"""

from rmqsim.strategies.batch import Allocation, Callers, GroupBatch, distinct_callers
from rmqsim.strategies.registry import (
    ROCKETMQ_STRATEGIES,
    STRATEGIES,
    AllocationError,
    Strategy,
    allocate,
    allocate_one,
    get,
)

__all__ = [
    "ROCKETMQ_STRATEGIES",
    "STRATEGIES",
    "Allocation",
    "AllocationError",
    "Callers",
    "GroupBatch",
    "Strategy",
    "allocate",
    "allocate_one",
    "distinct_callers",
    "get",
]
