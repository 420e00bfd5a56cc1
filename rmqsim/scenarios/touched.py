"""What a scenario's steps touch, and the phases restricted to it (docs/CONTRACT.md, section 4:
"Later phases hold what changed").

A step touches the (topic, group)s whose inputs it changes: a topic whose queue data, producers or
brokers differ from the phase before, and a group whose clients or groups row differ (or whose
clients' view goes stale). Touched is cumulative over a scenario's steps, so a group a step gave
back its old state still shows the moves back. A touched topic touches every group that reads it,
and a touched group every topic it reads: a client's load sums over its topics. The changes are
found by comparing the tables of consecutive phases, whatever the step kind.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqsim import schemas
from rmqsim.arrays import combined, stacked
from rmqsim.scenarios import parse as sc
from rmqsim.snapshot.load import Snapshot

TOUCHED = schemas.arrow(schemas.TOUCHED)
_NO_NAMES = pa.array([], pa.string())


@dataclass(frozen=True)
class Touched:
    """Per phase k >= 1 of a scenario, the topics and groups touched by step k or an earlier one."""

    topics: list[pa.Array]  # index k - 1
    groups: list[pa.Array]


def _codes(values: pa.ChunkedArray) -> np.ndarray:
    """Each row's index into the column's distinct values, null one of them; lists by their text."""
    if pa.types.is_list(values.type) or pa.types.is_large_list(values.type):
        text = pc.binary_join(pc.cast(values, pa.list_(pa.string())), "\x1f")
        values = pc.if_else(pc.is_valid(values), pc.binary_join_element_wise("[", text, ""), None)
    encoded = pc.dictionary_encode(values.combine_chunks(), null_encoding="encode")
    return encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)


def _row_ids(table: pa.Table) -> np.ndarray:
    """Equal ids for equal rows (nulls equal), whatever the row order: 0, 1, ... Each column's
    codes are folded into one integer (renumbered where it would overflow): a sort of integers, not
    of rows, which took seconds per step on a fleet's consumers."""
    code = np.zeros(table.num_rows, dtype=np.int64)
    for name in table.column_names:
        column = _codes(table[name])
        size = int(column.max(initial=0)) + 1
        if len(code) and int(code.max()) >= (1 << 62) // size:
            code = np.unique(code, return_inverse=True)[1].reshape(-1).astype(np.int64)
        code = code * size + column
    return np.unique(code, return_inverse=True)[1].reshape(-1)


def changed_keys(before: pa.Table, after: pa.Table, key: str) -> pa.Array:
    """The distinct ``key`` values of the rows one table holds and the other does not (as
    multisets): what a step changed in that table."""
    if before is after:
        return _NO_NAMES
    both = stacked(before, after)
    ids = _row_ids(both)
    n = before.num_rows
    counts = np.bincount(ids[:n], minlength=ids.max() + 1 if len(ids) else 0)
    counts_after = np.bincount(ids[n:], minlength=len(counts))
    differ = (counts != counts_after)[ids]
    return _union(both[key].filter(pa.array(differ)))


def _union(*arrays: pa.Array | pa.ChunkedArray) -> pa.Array:
    """The distinct names of every array (nulls left out)."""
    flat = [combined(pc.drop_null(a)).cast(pa.string()) for a in arrays]
    return combined(pc.unique(pa.concat_arrays(flat))) if flat else _NO_NAMES


def _topics_on(brokers: pa.Array, *snaps: Snapshot) -> pa.Array:
    """The topics with queue data on these brokers, or an order conf that names one of them."""
    if not len(brokers):
        return _NO_NAMES
    found = []
    for snap in snaps:
        queues = snap.topic_queues
        found.append(queues["topic"].filter(pc.is_in(queues["broker_name"], value_set=brokers)))
        if snap.order_topics is not None:
            conf = snap.order_topics["order_conf"]
            named = [pc.match_substring(conf, f"{b}:") for b in brokers.to_pylist()]
            hit = named[0]
            for more in named[1:]:
                hit = pc.or_(hit, more)
            found.append(snap.order_topics["topic"].filter(pc.fill_null(hit, False)))
    return _union(*found)


def step_changes(before: Snapshot, after: Snapshot, step: sc.Step) -> tuple[pa.Array, pa.Array]:
    """The topics and groups one step changed."""
    brokers = changed_keys(before.brokers, after.brokers, "broker_name")
    topics = [
        changed_keys(before.topic_queues, after.topic_queues, "topic"),
        _topics_on(brokers, before, after),
    ]
    if before.producers is not None and after.producers is not None:
        topics.append(changed_keys(before.producers, after.producers, "topic"))
    groups = [
        changed_keys(before.consumers, after.consumers, "group"),
        changed_keys(before.groups, after.groups, "group"),
    ]
    if isinstance(step, sc.StaleView):
        groups.append(pa.array([step.group], pa.string()))
    return _union(*topics), _union(*groups)


def touched(phases: list[Snapshot], scenario: sc.Scenario) -> Touched:
    """Per phase k >= 1, the topics and groups steps 1..k changed."""
    topics, groups = [_NO_NAMES], [_NO_NAMES]
    for k, step in enumerate(scenario.steps, 1):
        t, g = step_changes(phases[k - 1], phases[k], step)
        topics.append(_union(topics[-1], t))
        groups.append(_union(groups[-1], g))
    return Touched(topics[1:], groups[1:])


def pairs(consumers: pa.Table) -> pa.Table:
    """The distinct (topic, group)s of a consumers table."""
    return consumers.select(["topic", "group"]).group_by(["topic", "group"], use_threads=False).aggregate([])


@dataclass(frozen=True)
class Restricted:
    """A scenario's phases cut down to the (topic, group)s its steps touch, and those per phase."""

    phases: list[Snapshot]
    touched: pa.Table  # TOUCHED


def restricted(
    phases: list[Snapshot], scenario: sc.Scenario, first_pairs: pa.Table, *, consumers: bool = True
) -> Restricted:
    """``phases`` (apply.phase_snapshots) with every phased table cut to the groups the scenario
    touches by its last phase and the topics they read or it touches; every broker stays (they
    are few). The rows of one phase's tables come out as that phase's tables would give them.
    ``first_pairs``: pairs(phase 0's consumers), the same for every scenario. ``consumers``
    False: the consumers rows are left whole (the caller has their client lists already)."""
    changes = touched(phases, scenario)
    known = first_pairs  # every (topic, group) of phases 0..k
    parts = []
    for k in range(1, len(phases)):
        if phases[k].consumers is not phases[k - 1].consumers:
            known = pairs(stacked(known, pairs(phases[k].consumers)))
        topics, groups = changes.topics[k - 1], changes.groups[k - 1]
        readers = known.filter(pc.is_in(known["topic"], value_set=topics))["group"]
        groups = _union(groups, readers)
        mine = known.filter(pc.is_in(known["group"], value_set=groups))
        unread = topics.filter(pc.invert(pc.is_in(topics, value_set=combined(mine["topic"]))))
        n = mine.num_rows + len(unread)
        parts.append(
            pa.table(
                [
                    pa.repeat(pa.scalar(scenario.name), n),
                    pa.repeat(pa.scalar(k, pa.int32()), n),
                    pa.concat_arrays([combined(mine["topic"]).cast(pa.string()), unread]),
                    pa.concat_arrays(
                        [combined(mine["group"]).cast(pa.string()), pa.nulls(len(unread), pa.string())]
                    ),
                ],
                schema=TOUCHED,
            )
        )
    listed = pa.concat_tables(parts) if parts else TOUCHED.empty_table()
    groups, topics = cut_groups(listed), _union(listed["topic"])
    cache: dict[int, pa.Table] = {}
    cut = [_cut(snap, topics, groups, cache, consumers) for snap in phases]
    return Restricted(cut, listed)


def cut_groups(listed: pa.Table) -> pa.Array:
    """The groups a scenario's consumers and groups rows are cut to: every group its touched/
    rows (``listed``) name."""
    return _union(listed["group"])


def _cut(
    snap: Snapshot, topics: pa.Array, groups: pa.Array, cache: dict[int, pa.Table], consumers: bool
) -> Snapshot:
    """``snap``'s phased tables cut (its consumers only if ``consumers``); a table phases share
    stays shared (``cache``, by identity)."""

    def of(table: pa.Table | None, column: str, names: pa.Array) -> pa.Table | None:
        if table is None:
            return None
        if id(table) not in cache:
            names = names.cast(table.schema.field(column).type)
            cache[id(table)] = table.filter(pc.is_in(table[column], value_set=names))
        return cache[id(table)]

    return replace(
        snap,
        topic_queues=of(snap.topic_queues, "topic", topics),
        consumers=of(snap.consumers, "group", groups) if consumers else snap.consumers,
        groups=of(snap.groups, "group", groups),
        producers=of(snap.producers, "topic", topics),
    )
