"""What a run found, first and in a terminal's width: the lines `demo` and `simulate` open with.

Each finding names its subject (a group, topic, scenario or sweep element) and gives the worst
figure over the strategies run, with the strategy where one is to blame. In order: the groups
behind and the messages stranded in the snapshot; what the steps strand; each sweep's worst
element; then each scenario's costliest step, the costliest scenarios first, as many as fit.
The full figures are in the run's tables and its HTML report.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from rmqsim.reporting.text import worst_elements
from rmqsim.scenarios.parse import ELEMENT

LINES = 15  # the block's most lines, its title included
WIDTH = 100  # the most columns of a line
NAMED = 3  # groups named per finding
LABEL = 24  # the most characters of a step's label


@dataclass(frozen=True)
class Finding:
    subjects: tuple[str, ...]  # the groups, topics, scenarios or elements it names
    text: str


Rows = Sequence[Mapping[str, object]]


def findings(
    *,
    summary: Rows,
    comparison: Rows = (),
    recommendation: Rows = (),
    sweep: Rows = (),
    steps: Rows = (),
    behind: Rows = (),
    stranded: Rows = (),
    label: Callable[[str, int], str] | None = None,
) -> list[Finding]:
    """Every finding of a run (RunResult's lists), the most pressing first; ``label(scenario,
    phase)``: what made the phase (parse.Scenario.label)."""
    strategies = len({r["strategy"] for r in summary})
    out = [*_behind_now(behind, strategies), *_stranded_now(stranded)]
    out += _stranded_by_steps(comparison, recommendation)
    out += _sweeps(sweep)
    out += _costliest_steps(steps, comparison, label)
    return out


def format_findings(found: Sequence[Finding]) -> str:
    """The findings block: a title and at most LINES - 1 findings, the last saying how many more
    there are and where they are."""
    title = "findings (the worst over the strategies run)"
    if not found:
        return f"{title}\n  nothing: no group behind, no message stranded, no step with a cost"
    room = LINES - 1
    shown = list(found) if len(found) <= room else list(found[: room - 1])
    lines = [title, *(_fit(f"  {f.text}") for f in shown)]
    more = len(found) - len(shown)
    if more:
        lines.append(f"  ... {more} more: the run's comparison/, or `rmqsim report --html`")
    return "\n".join(lines)


def _fit(line: str) -> str:
    return line if len(line) <= WIDTH else line[: WIDTH - 3] + "..."


def _named(names: Sequence[str]) -> str:
    more = len(names) - NAMED
    shown = ", ".join(names[:NAMED])
    return f"{shown} and {more} more" if more > 0 else shown


def _behind_now(behind: Rows, strategies: int) -> list[Finding]:
    if not behind:
        return []
    groups = [str(r["group"]) for r in behind]
    first, *rest = behind[:2]
    lag = _rate(first["lag_growth_msgs_per_s"])
    named = [f"{first['group']} ({first['strategies']} of {strategies} strategies, lag +{lag} msgs/s)"]
    named += [
        f"{r['group']} ({r['strategies']} of {strategies}, +{_rate(r['lag_growth_msgs_per_s'])})"
        for r in rest
    ]
    more = f" and {len(groups) - 2} more groups" if len(groups) > 2 else ""
    return [Finding(tuple(groups[:2]), f"behind in the snapshot: {', '.join(named)}{more}")]


def _stranded_now(stranded: Rows) -> list[Finding]:
    if not stranded:
        return []
    first = stranded[0]
    pairs = [f"{r['group']}@{r['topic']}" for r in stranded]
    text = f"stranded in the snapshot: {_rate(first['stranded_msgs_per_s'])} msgs/s of {_named(pairs)}"
    return [Finding((str(first["group"]), str(first["topic"])), text)]


def _stranded_by_steps(comparison: Rows, recommendation: Rows) -> list[Finding]:
    """The groups a step strands messages of (the recommendation's), and the scenario that strands most."""
    groups = [r for r in recommendation if r.get("most_stranded_msgs_per_s")]
    if not groups:
        return []
    most = max(groups, key=lambda r: float(r["most_stranded_msgs_per_s"]))
    scenarios = [
        r for r in comparison if ELEMENT not in str(r["scenario"]) and r.get("most_stranded_msgs_per_s")
    ]
    worst = max(scenarios, key=lambda r: float(r["most_stranded_msgs_per_s"]), default=None)
    names = [str(r["group"]) for r in groups]
    text = f"steps strand up to {_rate(most['most_stranded_msgs_per_s'])} msgs/s of {_named(names)}"
    if worst is not None:
        text = f"{worst['scenario']}: {text}"
    return [Finding(tuple(names[:NAMED]), text)]


def _sweeps(sweep: Rows) -> list[Finding]:
    out = []
    for name, elements in worst_elements(sweep, 1).items():
        e = elements[0]
        figures = [f"lag +{_rate(e['lag_growth_msgs_per_s'])}"] if e["lag_growth_msgs_per_s"] else []
        if e["lost_msgs_per_s"]:
            figures.append(f"{_rate(e['lost_msgs_per_s'])} msgs/s lost")
        figures.append(f"{e['queues_unread']} queues unread")
        text = f"sweep {name}: {e['element']} hurts most ({', '.join(figures)})"
        out.append(Finding((str(e["element"]),), text))
    return out


def _costliest_steps(steps: Rows, comparison: Rows, label: Callable[[str, int], str] | None) -> list[Finding]:
    """Per scenario of the file (not a sweep's element), its costliest step: the one that puts a
    group furthest behind, else whose hand-overs delay or double the most messages; the scenarios
    in that order. Scenarios whose steps cost nothing share one line."""
    by_scenario: dict[str, list[Mapping[str, object]]] = {}
    for row in steps:
        if ELEMENT not in str(row["scenario"]):
            by_scenario.setdefault(str(row["scenario"]), []).append(row)
    ranked = []
    for scenario, rows in by_scenario.items():
        worst = max(rows, key=_cost)
        if _cost(worst) > (0.0, 0.0):
            ranked.append((_cost(worst), scenario, worst))
    ranked.sort(key=lambda c: (-c[0][0], -c[0][1], c[1]))
    out = [
        Finding((scenario, _group_of(worst)), _step_text(scenario, worst, label))
        for _, scenario, worst in ranked
    ]
    costly = {scenario for _, scenario, _ in ranked}
    free = sorted({str(r["scenario"]) for r in comparison if ELEMENT not in str(r["scenario"])} - costly)
    if free:
        out.append(Finding(tuple(free), f"no step puts a group behind or delays a message: {_named(free)}"))
    return out


def _cost(row: Mapping[str, object]) -> tuple[float, float]:
    return float(row.get("behind_lag_growth_msgs_per_s") or 0.0), float(row.get("msgs") or 0.0)


def _group_of(row: Mapping[str, object]) -> str:
    return str(row.get("behind_group") or row.get("msgs_group"))


def _step_text(scenario: str, row: Mapping[str, object], label: Callable[[str, int], str] | None) -> str:
    """The step's group newly behind, else the messages its hand-overs cost and whose."""
    phase = int(row["phase"])
    made = (label(scenario, phase) if label else "")[:LABEL] or f"phase {phase}"
    if row.get("behind_group"):
        cost = f"{row['behind_group']} falls behind, +{_rate(row['behind_lag_growth_msgs_per_s'])} msgs/s"
    else:
        cost = f"{_rate(row['msgs'])} msgs of {row['msgs_group']} late or twice"
    return f"{scenario}, {made}, {row['strategy']}: {cost}"


def _rate(value: object) -> str:
    return "-" if value is None else f"{float(value):.0f}"
