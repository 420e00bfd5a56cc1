"""The event that made each phase of each scenario (docs/CONTRACT.md, section 2e): when it
happened, how clients learn of it, how the clients it removed went, and the scenario's timing. The
stage reads it from each route row (schemas.HANDOVER_EVENT) to time the hand-overs of that phase.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict

import pyarrow as pa

from rmqsim import schemas
from rmqsim.handover.notice import notice
from rmqsim.handover.queues import CRASHED, LEFT
from rmqsim.scenarios import parse

HANDOVER_EVENT_ARROW = schemas.GROUP_ROUTES_ARROW.field("handover_event").type


def departed(step: parse.Step) -> int:
    """How the clients a step removes go: a crash and a room down stop them without committing."""
    return CRASHED if isinstance(step, (parse.Crash, parse.RoomDown)) else LEFT


def events(runs: Sequence[parse.Scenario]) -> pa.Table | None:
    """A row per (scenario, phase k >= 1): schemas.PHASE and ``handover_event``. None without a
    step."""
    rows: list[dict] = []
    keys: list[tuple[str, int]] = []
    for run in runs:
        at = 0.0
        timing = asdict(run.timing)
        for k, step in enumerate(run.steps, 1):
            at += step.after_s  # T_k = T_{k-1} + after_s, T_0 = 0
            keys.append((run.name, k))
            rows.append(
                {
                    "event_s": at,
                    "notice": notice(step),
                    "departed": departed(step),
                    **timing,
                    "label": run.label(k),
                }
            )
    if not rows:
        return None
    return pa.table(
        {
            "scenario": pa.array([s for s, _ in keys], pa.string()),
            "phase": pa.array([k for _, k in keys], pa.int32()),
            "handover_event": pa.array(rows, type=HANDOVER_EVENT_ARROW),
        }
    )
