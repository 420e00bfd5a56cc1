"""Scenario files (docs/CONTRACT.md, section 3): named lists of steps, parsed into typed, checked values.

Nothing here touches Spark. ``parse`` checks a file's shape (step kinds, keys, types); ``check_names``
then walks the steps against the names a snapshot holds, so that a step naming a broker, topic,
group or client that does not exist at that point is an InputError before the simulation starts.
``parse_file`` also returns the file's sweeps (section 2f), which ``sweeps`` expands against a
snapshot into one-step scenarios.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path

import yaml

from rmqsim.errors import InputError
from rmqsim.scenarios.step_values import ALL, check_step, coerced, names_of, not_negative
from rmqsim.schemas import MAX_FACTOR

AFTER_S = 600.0  # seconds from the step before (T_0 = 0) to a step (docs/CONTRACT.md, section 2e)
ELEMENT = "/"  # a sweep's element scenario is "<sweep>/<element>": refused in the file's names
BASELINE = "baseline"  # phase 0 is written once under this name


@dataclass(frozen=True)
class AddBrokers:
    names: tuple[str, ...]
    machine_room: str | None = None
    cluster: str | None = None
    topics: tuple[str, ...] | str = ALL
    read_queue_nums: int | None = None  # None: each topic's most common count
    write_queue_nums: int | None = None
    perm: int = 6
    after_s: float = AFTER_S


@dataclass(frozen=True)
class RemoveBrokers:
    names: tuple[str, ...]
    after_s: float = AFTER_S


@dataclass(frozen=True)
class BrokerDown:
    names: tuple[str, ...]
    after_s: float = AFTER_S


@dataclass(frozen=True)
class BrokerUp:
    names: tuple[str, ...]
    after_s: float = AFTER_S


@dataclass(frozen=True)
class SetQueueNums:
    topics: tuple[str, ...] | str = ALL
    brokers: tuple[str, ...] | str = ALL
    read_queue_nums: int | None = None  # None: unchanged
    write_queue_nums: int | None = None
    after_s: float = AFTER_S


@dataclass(frozen=True)
class ConsumersJoin:
    group: str
    topics: tuple[str, ...] | None = None  # None: the group's topics
    client_ids: tuple[str, ...] | None = None
    count: int | None = None
    machine_room: str | None = None
    seed: int = 0
    language: str | None = None  # the client library (consumers.language); None: JAVA
    after_s: float = AFTER_S


@dataclass(frozen=True)
class ConsumersLeave:
    group: str
    client_ids: tuple[str, ...] | None = None
    count: int | None = None
    seed: int = 0
    after_s: float = AFTER_S


@dataclass(frozen=True)
class SetStrategy:
    group: str  # a name, or "all"
    strategy: str
    virtual_node_cnt: int | None = None
    consumer_idcs: tuple[str, ...] | None = None
    inner_strategy: str | None = None
    message_model: str | None = None
    after_s: float = AFTER_S


@dataclass(frozen=True)
class SetRebalance:
    """Who balances the group from this phase on (docs/CONTRACT.md, section 2b)."""

    group: str  # a name, or "all"
    rebalance: str  # client, broker or proxy
    request_mode: str | None = None  # PULL or POP; None: unchanged
    pop_share_queue_num: int | None = None  # None: unchanged
    after_s: float = AFTER_S


@dataclass(frozen=True)
class StaleView:
    """The transition window after a change: the phase keeps the state before it, but the
    named clients (or a seeded ``fraction`` of the group's) still compute their share from the
    view before the change (its mqAll and cidAll), as during the 20 s rebalance interval and the
    30 s route refresh."""

    group: str
    client_ids: tuple[str, ...] | None = None
    fraction: float | None = None
    seed: int = 0
    after_s: float = AFTER_S


@dataclass(frozen=True)
class SetTraffic:
    """Producers' rates from this phase on (docs/CONTRACT.md, section 2c): each topic's total
    (shared over its producers as before), or every producer's rate times a factor."""

    topics: tuple[str, ...] | str = ALL
    msgs_per_s: float | None = None
    factor: float | None = None
    after_s: float = AFTER_S


@dataclass(frozen=True)
class SetBrokerLatency:
    """The send latency producers observe on these brokers from this phase on; None clears it."""

    names: tuple[str, ...]
    send_latency_ms: float | None
    after_s: float = AFTER_S


@dataclass(frozen=True)
class Designate:
    """The machines (IPs) that may consume ``group`` from this phase on (docs/CONTRACT.md, 2d);
    None ends the designation."""

    group: str
    ips: tuple[str, ...] | None
    after_s: float = AFTER_S


@dataclass(frozen=True)
class Crash:
    """The clients stop at once without committing (docs/CONTRACT.md, section 2e): as
    ``consumers_leave`` picks them, and gone from every topic of the group. ``tcp_closed``: the
    brokers see the connection close (else they notice the loss only later)."""

    group: str
    client_ids: tuple[str, ...] | None = None
    count: int | None = None
    seed: int = 0
    tcp_closed: bool = True
    after_s: float = AFTER_S


@dataclass(frozen=True)
class RoomDown:
    """Every broker of these machine rooms goes down and every client in them crashes, in every
    group (docs/CONTRACT.md, section 2e)."""

    rooms: tuple[str, ...]
    tcp_closed: bool = False
    after_s: float = AFTER_S


@dataclass(frozen=True)
class RollingRestart:
    """A group's clients restarted batch after batch in cidAll order (docs/CONTRACT.md, section
    2e): every ``interval_s`` a batch leaves (gracefully, or as a crash with its connection
    closed), and ``down_s`` later the same machines join again with new ids (a new PID; a new IP
    where ``new_ip``). Each leave and each join is a phase (scenarios.restarts expands it)."""

    group: str
    batch: int = 1
    interval_s: float = 60.0
    down_s: float = 30.0
    graceful: bool = True
    new_ip: bool = False
    after_s: float = AFTER_S


@dataclass(frozen=True, eq=False)
class Rejoin:
    """A rolling restart's join (never written in a file: scenarios.restarts makes it): ``rows``,
    the consumers rows of the clients that left, back with ids ``new_ids[i]`` for ``client_ids[i]``."""

    group: str
    client_ids: tuple[str, ...]
    new_ids: tuple[str, ...]
    rows: object  # pa.Table: consumers rows as they were before the leave
    after_s: float = AFTER_S


Step = (
    AddBrokers
    | RemoveBrokers
    | BrokerDown
    | BrokerUp
    | SetQueueNums
    | ConsumersJoin
    | ConsumersLeave
    | SetStrategy
    | SetRebalance
    | StaleView
    | SetTraffic
    | SetBrokerLatency
    | Designate
    | Crash
    | RoomDown
    | RollingRestart
    | Rejoin
)

KINDS: dict[str, type] = {
    "add_brokers": AddBrokers,
    "remove_brokers": RemoveBrokers,
    "broker_down": BrokerDown,
    "broker_up": BrokerUp,
    "set_queue_nums": SetQueueNums,
    "consumers_join": ConsumersJoin,
    "consumers_leave": ConsumersLeave,
    "set_strategy": SetStrategy,
    "set_rebalance": SetRebalance,
    "stale_view": StaleView,
    "set_traffic": SetTraffic,
    "set_broker_latency": SetBrokerLatency,
    "designate": Designate,
    "crash": Crash,
    "room_down": RoomDown,
    "rolling_restart": RollingRestart,
}
KIND_OF = {cls: kind for kind, cls in KINDS.items()} | {Rejoin: "rolling_restart"}
# What a stale view can follow: a step that changes what clients see (a new strategy is a restart).
CHANGES = (
    AddBrokers,
    RemoveBrokers,
    BrokerDown,
    BrokerUp,
    SetQueueNums,
    ConsumersJoin,
    ConsumersLeave,
    Crash,
    RoomDown,
    RollingRestart,
    Rejoin,
)
# What a sweep may generate one scenario per element of (docs/CONTRACT.md, section 2f).
SWEEPS = ("broker_down", "room_down", "crash")


@dataclass(frozen=True)
class Timing:
    """A scenario's clocks and delays (docs/CONTRACT.md, section 2e): the real clients' defaults."""

    seed: int = 0
    rebalance_s: float = 20.0
    route_poll_s: float = 30.0
    commit_s: float = 5.0
    first_pull_delay_s: float = 0.5
    host_loss_s: float = 120.0
    lock_expiry_s: float = 60.0


@dataclass(frozen=True)
class Scenario:
    name: str
    steps: tuple[Step, ...] = field(default_factory=tuple)
    timing: Timing = field(default_factory=Timing)
    labels: tuple[str | None, ...] = ()  # per step, where it has one (a rolling restart's phases)

    @property
    def last_phase(self) -> int:
        return len(self.steps)

    def label(self, phase: int) -> str:
        """What made phase ``phase``: its step's label, or its step's kind (phase 0: the snapshot)."""
        if phase == 0:
            return "snapshot"
        given = self.labels[phase - 1] if phase <= len(self.labels) else None
        return given or KIND_OF[type(self.steps[phase - 1])]

    def stale_views(self) -> list[tuple[int, StaleView]]:
        """(phase, step) of each stale_view: its clients see phase - 2, the others phase - 1."""
        return [(k, s) for k, s in enumerate(self.steps, 1) if isinstance(s, StaleView)]


@dataclass(frozen=True)
class Sweep:
    """A family of one-step scenarios, one per element of the snapshot (docs/CONTRACT.md, 2f):
    ``each`` is the step kind, ``of`` the elements ("all", or broker names, machine rooms, or for
    ``crash`` the groups whose clients crash one at a time)."""

    name: str
    each: str  # one of SWEEPS
    of: tuple[str, ...] | str = ALL


@dataclass(frozen=True)
class ScenarioFile:
    """What a scenarios file holds: its scenarios and its sweeps (either may be empty, not both)."""

    scenarios: tuple[Scenario, ...] = ()
    sweeps: tuple[Sweep, ...] = ()


def parse(text: str, *, source: str = "scenarios") -> tuple[Scenario, ...]:
    """Scenarios from YAML text (none when the file holds only sweeps); any problem is an
    InputError naming the scenario, step and key."""
    return parse_file(text, source=source).scenarios


def parse_file(text: str, *, source: str = "scenarios") -> ScenarioFile:
    """A scenarios file's scenarios and sweeps; any problem is an InputError naming the scenario
    or sweep, the step and the key."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise InputError(source, "yaml", f"not valid YAML: {e}") from None
    if not isinstance(data, Mapping) or ("scenarios" not in data and "sweeps" not in data):
        raise InputError(
            source,
            "scenarios",
            "expected a top-level 'scenarios:' list or 'sweeps:' list with at least one entry",
        )
    for key in ("scenarios", "sweeps"):
        if key in data and (not isinstance(data[key], list) or not data[key]):
            raise InputError(source, key, f"expected a top-level '{key}:' list with at least one entry")
    return ScenarioFile(
        scenarios=_scenarios(data.get("scenarios") or [], source),
        sweeps=_sweeps(data.get("sweeps") or [], source),
    )


SCENARIO_KEYS = frozenset({"name", "steps", "timing"})


def _scenarios(entries: list, source: str) -> tuple[Scenario, ...]:
    out: list[Scenario] = []
    for i, entry in enumerate(entries):
        name = _name(entry, f"{source}: scenario {i + 1}", "scenario")
        where = f"{source}: scenario '{name}'"
        if name == BASELINE:
            raise InputError(
                where, "name", f"'{BASELINE}' is reserved: phase 0 is written once under that name"
            )
        if name in {s.name for s in out}:
            raise InputError(where, "name", "two scenarios have this name")
        unknown = sorted(set(entry) - SCENARIO_KEYS)
        if unknown:
            raise InputError(
                where, str(unknown[0]), f"unknown key(s) {unknown}; expected some of {sorted(SCENARIO_KEYS)}"
            )
        steps = entry.get("steps")
        if not isinstance(steps, list) or not steps:
            raise InputError(where, "steps", "expected a list of at least one step")
        parsed = tuple(_step(s, f"{where}, step {k + 1}") for k, s in enumerate(steps))
        _check_order(parsed, where)
        _check_growth(parsed, where)
        out.append(Scenario(name, parsed, _timing(entry.get("timing"), where)))
    return tuple(out)


def _name(entry: object, where: str, what: str) -> str:
    """A scenario's or sweep's name: not empty, and without '/' (a sweep's scenarios are named
    '<sweep>/<element>')."""
    if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str) or not entry["name"].strip():
        raise InputError(where, "name", f"every {what} needs a non-empty name")
    name = entry["name"].strip()
    if ELEMENT in name:
        raise InputError(
            f"{where} '{name}'",
            "name",
            f"a {what} name may not hold '/' (sweeps name theirs '<sweep>/<element>')",
        )
    return name


_PERIODS = ("rebalance_s", "route_poll_s", "commit_s")  # a clock ticks every so many seconds: above 0


def _timing(value: object, where: str) -> Timing:
    if value is None:
        return Timing()
    known = [f.name for f in fields(Timing)]
    if not isinstance(value, Mapping):
        raise InputError(where, "timing", f"expected a mapping of some of {known}")
    unknown = sorted(set(value) - set(known))
    if unknown:
        raise InputError(where, "timing", f"unknown key(s) {unknown}; expected some of {known}")
    values: dict[str, object] = {}
    for key, given in value.items():
        label = f"timing.{key}"
        if key == "seed":
            if isinstance(given, bool) or not isinstance(given, int):
                raise InputError(where, label, f"expected an integer, got {given!r}")
            values[key] = given
            continue
        seconds = not_negative(given, where, label)
        if key in _PERIODS and seconds <= 0:
            raise InputError(where, label, f"a clock's period must be above 0, got {given!r}")
        values[key] = seconds
    return Timing(**values)


def _sweeps(entries: list, source: str) -> tuple[Sweep, ...]:
    out: list[Sweep] = []
    known = [f.name for f in fields(Sweep)]
    for i, entry in enumerate(entries):
        name = _name(entry, f"{source}: sweep {i + 1}", "sweep")
        where = f"{source}: sweep '{name}'"
        if name in {s.name for s in out}:
            raise InputError(where, "name", "two sweeps have this name")
        unknown = sorted(set(entry) - set(known))
        if unknown:
            raise InputError(where, "sweep", f"unknown key(s) {unknown}; expected {', '.join(known)}")
        each = entry.get("each")
        if each not in SWEEPS:
            raise InputError(where, "each", f"expected one of {', '.join(SWEEPS)}, got {each!r}")
        if "of" not in entry:
            raise InputError(where, "of", "missing: 'all' or a list of names")
        of = entry["of"]
        out.append(Sweep(name, each, ALL if of == ALL else names_of(of, where, "of")))
    return tuple(out)


def _check_order(steps: tuple[Step, ...], where: str) -> None:
    for k, step in enumerate(steps):
        if isinstance(step, StaleView) and (k == 0 or not isinstance(steps[k - 1], CHANGES)):
            kinds = ", ".join(dict.fromkeys(KIND_OF[c] for c in CHANGES))
            raise InputError(
                f"{where}, step {k + 1}", "stale_view", f"must come right after a change step ({kinds})"
            )


def _check_growth(steps: tuple[Step, ...], where: str) -> None:
    """Factors multiply: over any run of a scenario's steps, those of its set_traffic steps must
    not multiply a rate past MAX_FACTOR, so no phase's rate passes MAX_RATE x MAX_FACTOR. Every
    topic is counted as named by every step; a msgs_per_s step for all topics starts afresh."""
    growth = 1.0  # the most a run of steps ending here multiplies a rate by
    for k, step in enumerate(steps):
        if not isinstance(step, SetTraffic):
            continue
        if step.factor is None:
            growth = 1.0 if step.topics == ALL else growth
            continue
        growth = max(growth, 1.0) * step.factor
        if growth > MAX_FACTOR:
            raise InputError(
                f"{where}, step {k + 1}",
                "set_traffic.factor",
                f"with the factors of the steps before it, rates would grow {growth:g} times, "
                f"more than {MAX_FACTOR:g}",
            )


def load(path: str) -> tuple[Scenario, ...]:
    """The scenarios of the file at ``path`` (none when it holds only sweeps)."""
    return load_file(path).scenarios


def load_file(path: str) -> ScenarioFile:
    p = Path(path)
    if not p.is_file():
        raise InputError("arguments", "--scenarios", f"no scenarios file at {path}")
    return parse_file(p.read_text(), source=str(path))


def _step(entry: object, where: str) -> Step:
    if not isinstance(entry, Mapping) or len(entry) != 1:
        raise InputError(where, "step", f"expected one of {', '.join(KINDS)} with its keys")
    [(kind, args)] = entry.items()
    cls = KINDS.get(kind)
    if cls is None:
        raise InputError(where, str(kind), f"unknown step kind; expected one of {', '.join(KINDS)}")
    args = args or {}
    if not isinstance(args, Mapping):
        raise InputError(where, kind, "expected a mapping of keys")
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(args) - known)
    if unknown:
        raise InputError(where, kind, f"unknown key(s) {unknown}; expected some of {sorted(known)}")
    values = {key: coerced(key, value, where, kind) for key, value in args.items()}
    try:
        step = cls(**values)
    except TypeError:
        missing = [f.name for f in fields(cls) if f.name not in values and _required(cls, f.name)]
        raise InputError(where, kind, f"missing key(s) {missing}") from None
    check_step(step, where, kind)
    return step


def _required(cls: type, name: str) -> bool:
    from dataclasses import MISSING

    f = next(f for f in fields(cls) if f.name == name)
    return f.default is MISSING and f.default_factory is MISSING
