"""Why a group's observed assignment is not the simulated one: what `rmqsim validate` can tell.

Pure functions over one group: its routes (schemas.GROUP_ROUTES rows, phase 0) and who held each
queue when consumerProgress was saved. Allocations run through rmqsim.stage.dispatch, the code the
simulation runs, on changed copies of the routes. Causes, by code:

- duplicate_client_id: consumerConnection lists one client id more than once (two processes that
  call themselves the same). Both take the first copy's share, and the queues of the later copy's
  position are read by nobody. The simulation does the same, so this explains unowned queues, not
  a mismatch.
- missing_client: a holder consumerConnection does not list (the files were saved at different
  moments, or the client connected in between).
- ambiguous_ip: consumerProgress prints a holder's IP only, and several listed clients have it:
  their queues are compared by IP.
- client_not_reporting: a listed client the strategy gives queues, all of which consumerProgress
  shows without a holder: the client did not answer mqadmin (not a Java client, or unreachable).
- unknown_strategy: the clients run another strategy than the configured one: the detail names
  the RocketMQ strategies whose assignment is the observed one, or says none is.
- other_library: every client of the group computing its share with one client library's code
  (the Go client's, or rocketmq-client-cpp's, which the Python and Node.js clients are built on;
  the Java client's where the snapshot names another library) gives the observed assignment, and
  the snapshot's ``consumers.language`` does not say so.
- broker_balanced: the broker's answer (QueryAssignmentProcessor, PULL) is the observed
  assignment: the group balances on the broker (clientRebalance off), which ``groups.rebalance``
  does not say. For a strategy the broker lacks it answers null and the clients hold nothing. POP
  is not tried: consumerProgress shows no holder for a queue a client pops.
- stale_view: the observed holders hold their share of the configured strategy for a nearby view
  (one more client, at some place in cidAll; one client less; one broker less; queues the route
  lacks), while the others hold their share of the captured view.

Every answer, the configured one included, is the simulation's for the snapshot as it is (its
``client_languages`` and ``balancing``), except where a cause tries another library or the broker.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa

from rmqsim import schemas
from rmqsim.arrays import as_objects
from rmqsim.javaorder import java_key
from rmqsim.stage.dispatch import allocate_rows
from rmqsim.strategies import ROCKETMQ_STRATEGIES, STRATEGIES
from rmqsim.strategies import broker as broker_side

ROUTES_ARROW = schemas.GROUP_ROUTES_ARROW
PHANTOM = "<unlisted client>"
# The strategies that place clients by their position in cidAll, so an unlisted one can be placed.
POSITIONAL = ("AVG", "AVG_BY_CIRCLE", "MACHINE_ROOM")
# Beyond this a group's nearby views are not searched (each is one allocation of every topic).
MAX_CLIENTS, MAX_QUEUES = 64, 4096
# The client libraries other_library tries, each for every client of the group, with how a detail
# names them. CPP stands for PYTHON and NODE_JS too: they run rocketmq-client-cpp's code. JAVA is
# tried only where the snapshot names another library for some client.
LIBRARIES = {
    "JAVA": "the Java client",
    "GO": "the Go client (rocketmq-client-go)",
    "CPP": "rocketmq-client-cpp (the C++ client, and the Python and Node.js clients built on it)",
}
# schemas.BALANCING for a group the broker balances, answering PULL requests.
BROKER_PULL = {"rebalance": "BROKER", "pop": False, "pop_share_queue_num": -1, "consume_orderly": False}
KEEP = object()  # owners_of: the rows' own value

Queue = tuple[str, str, int]  # (topic, broker_name, queue_id)
Owners = dict[Queue, set[str]]


@dataclass(frozen=True)
class Holder:
    """Who consumerProgress says holds a queue: a client id, or only an IP; both None: nobody."""

    client_id: str | None
    client_ip: str | None

    @property
    def key(self) -> str | None:
        return self.client_id or (f"IP {self.client_ip}" if self.client_ip else None)


@dataclass(frozen=True)
class Cause:
    code: str
    detail: str


def ip_of(client_id: str) -> str:
    return client_id.split("@")[0]


def holds(holder: Holder, owners: Collection[str]) -> bool:
    """Whether the observed holder is one of the simulated owners (by id, else by IP)."""
    if holder.client_id is not None:
        return holder.client_id in owners
    if holder.client_ip is not None:
        return any(ip_of(o) == holder.client_ip for o in owners)
    return not owners


def match_count(observed: Mapping[Queue, Holder], owners: Owners) -> int:
    return sum(holds(h, owners.get(q, ())) for q, h in observed.items())


def owners_of(
    rows: Sequence[dict], strategy: str, *, library: str | None = None, balancing: object = KEEP
) -> Owners:
    """Every queue's owners when the group runs ``strategy`` over ``rows``: as the simulation does,
    each client with its library (``client_languages``) and the group balanced as ``balancing``
    says; or every client running ``library``'s code, or with ``balancing`` (schemas.BALANCING;
    None: the clients balance) instead of the rows' own."""
    runs = [
        {
            **r,
            "strategies": [strategy],
            "skipped": [],
            "compare": False,
            "stale_clients": None,
            "view_phase": None,
            "client_languages": (
                r.get("client_languages") if library is None else [library] * len(r["client_ids"])
            ),
            "balancing": r.get("balancing") if balancing is KEEP else balancing,
        }
        for r in rows
    ]
    out: Owners = defaultdict(set)
    if not runs:
        return out
    batch_rows = pa.RecordBatch.from_pylist(runs, schema=ROUTES_ARROW)
    for a in allocate_rows(batch_rows):
        topics, clients = as_objects(a.batch.topics), as_objects(a.batch.client_ids)
        brokers, queue_ids = as_objects(a.allocation.brokers(a.batch)), a.allocation.queue_ids(a.batch)
        for k, caller in enumerate(a.allocation.caller):
            topic = topics[a.callers.group[caller]]
            out[(topic, brokers[k], int(queue_ids[k]))].add(clients[a.callers.client[caller]])
    return out


def runnable(strategy: str, rows: Sequence[dict]) -> bool:
    """Whether the group has what ``strategy`` reads (the checks simulate makes for a list)."""
    if strategy == "CONFIG":
        return any(r["client_configs"] is not None for r in rows)
    if strategy == "MACHINE_ROOM":
        return all(r["consumer_idcs"] is not None for r in rows)
    if strategy == "MACHINE_ROOM_NEARBY":
        return all(all(x for x in r["broker_rooms"]) and all(x for x in r["client_rooms"]) for r in rows)
    return strategy in STRATEGIES


def _shares(observed: Mapping[Queue, Holder], owners: Owners) -> dict[str, set[Queue]]:
    """The observed queues each client gets under ``owners``, by client id and by IP (a holder
    known by its IP only gets every queue one of its IP's clients owns)."""
    out: dict[str, set[Queue]] = defaultdict(set)
    for q in observed:
        for owner in owners.get(q, ()):
            out[owner].add(q)
            out[f"IP {ip_of(owner)}"].add(q)
    return out


def _held(observed: Mapping[Queue, Holder]) -> dict[str, set[Queue]]:
    out: dict[str, set[Queue]] = defaultdict(set)
    for q, h in observed.items():
        if h.key is not None:
            out[h.key].add(q)
    return out


@dataclass(frozen=True)
class View:
    description: str
    rows: list[dict]
    phantom: bool = False


def _with_clients(rows: Sequence[dict], change) -> list[dict]:
    """The rows with their clients changed by ``change``, over (id, room, CONFIG list, library)
    tuples; an added client (PHANTOM's) has none of the last three (its library: JAVA)."""
    out = []
    for r in rows:
        n = len(r["client_ids"])
        languages = r.get("client_languages")
        clients = change(
            list(
                zip(
                    r["client_ids"],
                    r["client_rooms"],
                    r["client_configs"] or [None] * n,
                    languages or [None] * n,
                )
            )
        )
        out.append(
            {
                **r,
                "client_ids": [c[0] for c in clients],
                "client_rooms": [c[1] for c in clients],
                "client_configs": None if r["client_configs"] is None else [c[2] for c in clients],
                "client_languages": None if languages is None else [c[3] for c in clients],
            }
        )
    return out


def _with_brokers(rows: Sequence[dict], change) -> list[dict]:
    out = []
    for r in rows:
        entries = change(r["topic"], list(zip(r["broker_names"], r["read_queue_nums"], r["broker_rooms"])))
        entries.sort(key=lambda e: java_key(e[0]))
        out.append(
            {
                **r,
                "broker_names": [e[0] for e in entries],
                "read_queue_nums": [e[1] for e in entries],
                "broker_rooms": [e[2] for e in entries],
            }
        )
    return out


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def nearby_views(rows: Sequence[dict], observed: Mapping[Queue, Holder], strategy: str) -> list[View]:
    """Views a moment away from the captured one, most likely first."""
    views = []
    longest = max((len(r["client_ids"]) for r in rows), default=0)
    if strategy in POSITIONAL:
        for k in range(longest + 1):
            views.append(
                View(
                    f"one more client, {_ordinal(k + 1)} in cidAll",
                    _with_clients(rows, lambda t, k=k: t[:k] + [(PHANTOM, None, None, None)] + t[k:]),
                    phantom=True,
                )
            )
    for client in sorted({c for r in rows for c in r["client_ids"]}, key=java_key):
        views.append(
            View(f"without {client}", _with_clients(rows, lambda t, c=client: [x for x in t if x[0] != c]))
        )
    for broker in sorted({b for r in rows for b in r["broker_names"]}, key=java_key):
        views.append(
            View(
                f"without {broker}'s queues",
                _with_brokers(rows, lambda _, e, b=broker: [x for x in e if x[0] != b]),
            )
        )
    # Queues someone holds that the route lacks: a broker or queues since removed from the route.
    held: dict[tuple[str, str], int] = {}
    for (topic, broker, qid), h in observed.items():
        if h.key is not None:
            held[(topic, broker)] = max(held.get((topic, broker), 0), qid + 1)

    def widen(topic: str, entries: list) -> list:
        nums = {b: n for b, n, _ in entries}
        rooms = {b: room for b, _, room in entries}
        for (t, broker), n in held.items():
            if t == topic and n > nums.get(broker, 0):
                nums[broker] = n
        return [(b, n, rooms.get(b)) for b, n in nums.items()]

    widened = _with_brokers(rows, widen)
    if widened != list(rows):
        views.append(View("with the held queues the saved route lacks", widened))
    return views


def stale_view(
    rows: Sequence[dict], observed: Mapping[Queue, Holder], strategy: str, current: Owners, missing: set[str]
) -> tuple[View, list[str]] | None:
    """The first nearby view the observed holders are explained by (each holding its share of the
    captured view or of that one), and the holders that need it; None if there is none."""
    held = _held(observed)
    now = _shares(observed, current)
    unheld = {q for q, h in observed.items() if h.key is None}
    for view in nearby_views(rows, observed, strategy):
        owners = owners_of(view.rows, strategy)
        then = _shares(observed, owners)
        phantom_share = {q for q in observed if PHANTOM in owners.get(q, ())}
        needs_view = []
        for holder, queues in held.items():
            if holder in missing:
                if not (view.phantom and len(missing) == 1 and queues == phantom_share):
                    break
                needs_view.append(holder)
            elif queues == now.get(holder, set()):
                continue
            elif queues == then.get(holder, set()):
                needs_view.append(holder)
            else:
                break
        else:
            if view.phantom and not missing and not phantom_share <= unheld:
                continue
            if needs_view:
                return view, needs_view
    return None


@dataclass(frozen=True)
class GroupCase:
    group: str
    strategy: str  # the configured one
    rows: list[dict]  # the group's GROUP_ROUTES rows at phase 0, for the topics observed
    observed: dict[Queue, Holder]


def diagnose(case: GroupCase) -> list[Cause]:
    rows, observed, strategy = case.rows, case.observed, case.strategy
    listed = {c for r in rows for c in r["client_ids"]}
    current = owners_of(rows, strategy) if strategy in STRATEGIES else {}
    causes = _duplicate_ids(rows, observed, current)
    held, missing = _unlisted_holders(observed, listed)
    causes += held
    causes += _silent_clients(listed, observed, current)
    if match_count(observed, current) == len(observed):
        return causes
    return causes + _mismatch(case, current, listed, missing, causes)


def _duplicate_ids(rows: Sequence[dict], observed: Mapping[Queue, Holder], current: Owners) -> list[Cause]:
    causes = []
    for r in rows:
        for client, n in sorted(Counter(r["client_ids"]).items()):
            if n > 1:
                unowned = sum(1 for q in observed if q[0] == r["topic"] and not current.get(q))
                causes.append(
                    Cause(
                        "duplicate_client_id",
                        f"{client} is listed {n} times in consumerConnection (on {r['topic']}): every "
                        f"copy takes the first copy's queues, so {unowned} queue(s) of that topic are read "
                        "by nobody",
                    )
                )
    return causes


def _unlisted_holders(observed: Mapping[Queue, Holder], listed: set[str]) -> tuple[list[Cause], set[str]]:
    """Holders consumerConnection does not list, or lists several clients for (by IP); and the
    keys of the missing ones."""
    by_ip: dict[str, set[str]] = defaultdict(set)
    for c in listed:
        by_ip[ip_of(c)].add(c)
    held = _held(observed)
    causes, missing = [], set()
    for key in sorted(held):
        ip = key[len("IP ") :] if key.startswith("IP ") else None
        if (ip is None and key not in listed) or (ip is not None and ip not in by_ip):
            missing.add(key)
            causes.append(
                Cause(
                    "missing_client",
                    f"{ip or key} holds {len(held[key])} queue(s) but consumerConnection does not list it "
                    "(saved at a different moment, or it connected in between)",
                )
            )
        elif ip is not None and len(by_ip[ip]) > 1:
            causes.append(
                Cause(
                    "ambiguous_ip",
                    f"{ip} is {len(by_ip[ip])} clients ({', '.join(sorted(by_ip[ip], key=java_key))}): "
                    "consumerProgress prints only the IP, so their queues are compared by IP",
                )
            )
    return causes, missing


def _silent_clients(listed: set[str], observed: Mapping[Queue, Holder], current: Owners) -> list[Cause]:
    causes = []
    for client in sorted(listed, key=java_key):
        share = {q for q in observed if client in current.get(q, ())}
        if share and all(observed[q].key is None for q in share):
            causes.append(
                Cause(
                    "client_not_reporting",
                    f"the strategy gives {client} {len(share)} queue(s) and consumerProgress shows no holder "
                    "for any: the client did not report its queues (not a Java client, or unreachable)",
                )
            )
    return causes


def _mismatch(
    case: GroupCase, current: Owners, listed: set[str], missing: set[str], found_so_far: list[Cause]
) -> list[Cause]:
    """Why the observed assignment is not the configured strategy's: another strategy's, a stale
    view's, or none this check can rebuild."""
    rows, observed, strategy = case.rows, case.observed, case.strategy
    causes = []
    if strategy not in STRATEGIES:
        causes.append(
            Cause("unknown_strategy", f"the configured strategy {strategy!r} is not one rmqsim knows")
        )
    explained = _other_strategy(case) + (
        _other_library(case) + _broker(case) if strategy in STRATEGIES else []
    )
    if explained:
        return causes + explained
    small = len(listed) <= MAX_CLIENTS and len(observed) <= MAX_QUEUES
    found = (
        stale_view(rows, observed, strategy, current, missing) if small and strategy in STRATEGIES else None
    )
    if found is not None:
        view, holders = found
        causes.append(
            Cause(
                "stale_view",
                f"{', '.join(h.removeprefix('IP ') for h in holders)} hold their {strategy} share of a view "
                f"{view.description}, not of the captured one: the files were saved at different moments, "
                "or those clients had not rebalanced yet",
            )
        )
        return causes
    if not any(c.code in ("missing_client", "client_not_reporting") for c in found_so_far):
        causes.append(
            Cause(
                "unknown_strategy",
                "the observed assignment is none of RocketMQ's strategies on the captured view (nor "
                f"{strategy} in one client library for every client, or on the broker), nor {strategy}'s on "
                "a view one change away: a custom strategy, or a change this check cannot rebuild"
                + (
                    ""
                    if small
                    else f" (more than {MAX_CLIENTS} clients or {MAX_QUEUES} queues: not searched)"
                ),
            )
        )
    return causes


def _other_strategy(case: GroupCase) -> list[Cause]:
    """unknown_strategy, where one of RocketMQ's other strategies gives the observed assignment."""
    rows, observed, strategy = case.rows, case.observed, case.strategy
    others = [
        s
        for s in ROCKETMQ_STRATEGIES
        if s != strategy and runnable(s, rows) and match_count(observed, owners_of(rows, s)) == len(observed)
    ]
    if not others:
        return []
    return [
        Cause(
            "unknown_strategy",
            f"the observed assignment is {' and '.join(others)}'s, not {strategy}'s: the clients run "
            f"{others[0]} (import with --strategy {case.group}={others[0]})",
        )
    ]


def languages_of(rows: Sequence[dict]) -> set[str]:
    """The libraries the snapshot names for the group's clients (null: JAVA), normalised."""
    return {
        (language or "JAVA").strip().upper()
        for r in rows
        for language in (r.get("client_languages") or [None] * len(r["client_ids"]))
    }


def _other_library(case: GroupCase) -> list[Cause]:
    """other_library, where every client computing its own share with one library's code gives the
    observed assignment (the simulated one, which does not, already uses the snapshot's libraries)."""
    rows, observed, strategy = case.rows, case.observed, case.strategy
    named = languages_of(rows)
    tried = [lib for lib in LIBRARIES if lib != "JAVA" or named - {"JAVA"}]
    found = [
        lib
        for lib in tried
        if match_count(observed, owners_of(rows, strategy, library=lib, balancing=None)) == len(observed)
    ]
    if not found:
        return []
    what = " or ".join(f"{LIBRARIES[lib]} ({lib})" for lib in found)
    now = ", ".join(sorted(named))
    return [
        Cause(
            "other_library",
            f"the observed assignment is {strategy} as every client computes it with {what}, not with the "
            f"library the snapshot names ({now}): set consumers.language to {found[0]} for the group's "
            "clients (import-mqadmin copies consumerConnection's Language column)",
        )
    ]


def _broker(case: GroupCase) -> list[Cause]:
    """broker_balanced, where the broker's PULL answer gives the observed assignment."""
    rows, observed, strategy, group = case.rows, case.observed, case.strategy, case.group
    if match_count(observed, owners_of(rows, strategy, balancing=BROKER_PULL)) != len(observed):
        return []
    answer = (
        f"its {strategy} share, in Java order, whatever the client's library"
        if strategy in broker_side.INNER
        else f"null (it has no {strategy}, only {' and '.join(broker_side.INNER)}), so the clients hold "
        "nothing"
    )
    given = [r["balancing"] for r in rows if r.get("balancing")]
    hint = f"--rebalance {group}=broker"
    if any(b["pop"] for b in given):
        hint += f" --request-mode {group}=PULL"
    if any(b["consume_orderly"] for b in given):
        hint += " and groups.consume_orderly false (an orderly group balances on the client)"
    return [
        Cause(
            "broker_balanced",
            f"the observed assignment is the broker's: the group balances on the broker (clientRebalance "
            f"off; QueryAssignmentProcessor answers each client {answer}): import with {hint}",
        )
    ]
