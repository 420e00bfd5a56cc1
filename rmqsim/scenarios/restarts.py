"""Rolling restarts expanded into the phases they make (docs/CONTRACT.md, section 2e): batch after
batch of the group's clients, in cidAll order, leaves and, ``down_s`` later, joins again with new
ids, each leave and each join a step of its own at the time it happens.

Which clients a restart restarts depends on the steps before it (a join adds some, a crash takes
some), so the expansion replays those steps on the restarted groups' rows alone: as few rows as
the groups have, whatever the fleet's size.

A restarted client's new id keeps its IP (a new one where ``new_ip``, as a rescheduled pod gets) and
takes a new PID: ``ip@pid``, from the 8-byte BLAKE2b digest of ``"<seed>:restart:<old id>:<n>"``
(``seed``: the scenario's ``timing.seed``; ``n`` = 0, or the first that gives an id the group does
not have), read as an unsigned big-endian integer: PID = 1 + that mod 4,194,303 (Linux's largest
PID); a new IP is ``10.<byte 0>.<byte 1>.<byte 2 mod 254 + 1>``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace

import pyarrow as pa
import pyarrow.compute as pc

from rmqsim.javaorder import java_sorted
from rmqsim.scenarios import parse as sc
from rmqsim.scenarios.apply import phase_snapshots
from rmqsim.snapshot.load import Snapshot

MAX_PID = 4_194_303


def expanded(runs: Sequence[sc.Scenario], tables: Snapshot) -> tuple[sc.Scenario, ...]:
    """``runs`` with every rolling_restart replaced by its leaves and joins, each labelled."""
    return tuple(_expanded(run, tables) if _restarts(run) else run for run in runs)


def is_expanded(run: sc.Scenario) -> bool:
    return any(isinstance(s, sc.Rejoin) for s in run.steps)


def _restarts(run: sc.Scenario) -> list[sc.RollingRestart]:
    return [s for s in run.steps if isinstance(s, sc.RollingRestart)]


def _expanded(run: sc.Scenario, tables: Snapshot) -> sc.Scenario:
    groups = pa.array(sorted({s.group for s in _restarts(run)}), pa.string())
    consumers = tables.consumers
    mine = replace(
        tables,
        consumers=consumers.filter(pc.is_in(consumers["group"], value_set=groups)),
        producers=None,  # a restart changes no rate: the replay needs no producer
        producer_keys=None,
    )
    steps: list[sc.Step] = []
    labels: list[str | None] = []
    for step in run.steps:
        if not isinstance(step, sc.RollingRestart):
            steps.append(step)
            labels.append(None)  # its kind
            continue
        now = phase_snapshots(mine, replace(run, steps=tuple(steps), labels=()))[-1].consumers
        made, named = _restart(step, now, run.timing.seed)
        steps.extend(made)
        labels.extend(named)
    return replace(run, steps=tuple(steps), labels=tuple(labels))


def _restart(step: sc.RollingRestart, consumers: pa.Table, seed: int) -> tuple[list[sc.Step], list[str]]:
    """The leaves and joins of one restart, in the order they happen, and their labels."""
    rows = consumers.filter(pc.equal(consumers["group"], step.group))
    clients = java_sorted(set(pc.drop_null(rows["client_id"]).to_pylist()))
    batches = [tuple(clients[i : i + step.batch]) for i in range(0, len(clients), step.batch)]
    taken = set(clients)
    events = []  # (time from the restart's start, a join first at a tie, batch, step maker)
    for i, batch in enumerate(batches):
        new = tuple(_new_id(c, seed, taken, step.new_ip) for c in batch)
        events.append((i * step.interval_s, 1, i, "leave", batch, new))
        events.append((i * step.interval_s + step.down_s, 0, i, "join", batch, new))
    events.sort(key=lambda e: e[:3])
    made: list[sc.Step] = []
    named: list[str] = []
    at = 0.0
    for n, (t, _, i, what, batch, new) in enumerate(events):
        after_s = step.after_s + t if n == 0 else t - at
        at = t
        if what == "leave":
            leave = sc.ConsumersLeave(step.group, client_ids=batch, after_s=after_s)
            made.append(
                leave
                if step.graceful
                else sc.Crash(step.group, client_ids=batch, tcp_closed=True, after_s=after_s)
            )
        else:
            made.append(sc.Rejoin(step.group, batch, new, _renamed(rows, batch, new), after_s=after_s))
        named.append(f"rolling_restart {step.group}: {i + 1}/{len(batches)} {what}")
    return made, named


def _new_id(old: str, seed: int, taken: set[str], new_ip: bool) -> str:
    """A restarted client's id: its IP (or a new one) and a new PID, unlike any id of its group."""
    ip = old.split("@", 1)[0]
    n = 0
    while True:
        digest = hashlib.blake2b(f"{seed}:restart:{old}:{n}".encode(), digest_size=8).digest()
        pid = 1 + int.from_bytes(digest, "big") % MAX_PID
        host = f"10.{digest[0]}.{digest[1]}.{digest[2] % 254 + 1}" if new_ip else ip
        new = f"{host}@{pid}"
        if new not in taken:
            taken.add(new)
            return new
        n += 1


def _renamed(rows: pa.Table, old: tuple[str, ...], new: tuple[str, ...]) -> pa.Table:
    """The consumers rows of clients ``old``, each with its new id."""
    ids = rows["client_id"]
    mine = rows.filter(pc.is_in(ids, value_set=pa.array(list(old), ids.type)))
    at = pc.index_in(mine["client_id"], value_set=pa.array(list(old), ids.type))
    fresh = pa.array(list(new), ids.type).take(at)
    i = mine.schema.get_field_index("client_id")
    return mine.set_column(i, mine.schema.field(i), fresh)
