"""A directory of saved mqadmin outputs, turned into a snapshot (docs/CONTRACT.md, section 1).

The directory holds what a user saves with shell redirection::

    clusterList.txt                  mqadmin clusterList
    topicRoute/<topic>.txt           mqadmin topicRoute -t <topic>      (one per topic, retry topics too)
    consumerConnection/<group>.txt   mqadmin consumerConnection -g <group>
    consumerProgress/<group>.txt     mqadmin consumerProgress -g <group> -s true
    statsAll.txt                     mqadmin statsAll                   (optional: the whole cluster)
    producerConnection/<producer_group>/<topic>.txt
                                     mqadmin producerConnection -g <producer_group> -t <topic> (optional)
    topicStatus/<topic>.txt          mqadmin topicStatus -t <topic>     (optional)

or what they copy from a page, the table with what the page kept around it: each parser takes its
table out of that the same way (table.py).

What becomes what:

- brokers: every instance clusterList lists, alive. A broker name that a route names but
  clusterList does not is taken from the route (its brokerDatas addresses) and counted alive too:
  the NameServer routes only brokers that are registered, so the route is evidence it was up
  when the route was saved; the import warns, because the captures disagree.
- topic_queues: every route's queueDatas. consumers: each client of a group on each topic it
  subscribes to (retry topics included), once per connection, so a client id listed twice stays
  twice, as the broker's cidAll has it. A subscribed topic without a route file is left out.
- consumers: each client's library (``language``) as consumerConnection prints it (JAVA, GO,
  CPP, ...); the simulation normalises its case.
- groups: the message model; the strategy only where ``--strategy`` names it (mqadmin does not
  print it; a null strategy is AVG); who balances the group (``rebalance``) only where
  ``--rebalance`` names it, and ``request_mode`` and ``pop_share_queue_num`` only where
  ``--request-mode`` does (mqadmin prints none of them). Machine rooms are unknown: null.
- offsets and observed_assignments: consumerProgress's rows, names cut short matched back to the
  routes' full names; each holder's IP matched to the client id of the group it belongs to.
- observed_traffic: every statsAll line, system topics and topics without a route included:
  topic, group (null where NO_CONSUMER), in_tps, out_tps (what the group consumed; null without a
  group), accumulation (null before 4.0). Cut names matched as observed_traffic's docstring says.
- producers: each routed topic's statsAll InTPS (once per topic: the largest where its lines
  disagree) shared over the (producer group, language, version) populations of its
  producerConnection files, per connection (producer_populations). ``selector`` and
  ``send_latency_fault_enable`` only where ``--selector`` and ``--send-latency-fault`` name them
  (mqadmin prints neither). Without statsAll.txt no rate is known and no producers table is
  written: rows of 0 would tell the simulation that nothing is sent.
- queue_status: topicStatus's queues, the broker names cut at 32 matched as consumerProgress's;
  last_updated as printed, in the local time of the machine that ran mqadmin (null: never written).

Nothing here needs Spark: tables are written with pyarrow.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import pyarrow as pa

from rmqsim import schemas
from rmqsim.errors import InputError
from rmqsim.mqadmin import (
    cluster_list,
    consumer_connection,
    consumer_progress,
    names,
    producer_connection,
    stats_all,
    topic_route,
    topic_status,
)
from rmqsim.mqadmin.consumer_connection import ConsumerConnection
from rmqsim.mqadmin.consumer_progress import ConsumerProgress
from rmqsim.mqadmin.lines import error
from rmqsim.mqadmin.observed_traffic import Traffic, observed_traffic
from rmqsim.mqadmin.producer_connection import ProducerConnection
from rmqsim.mqadmin.producer_populations import producer_populations
from rmqsim.mqadmin.stats_all import StatsAll
from rmqsim.mqadmin.topic_route import TopicRoute
from rmqsim.mqadmin.topic_status import TopicStatus
from rmqsim.snapshot.write import arrow_table, write_snapshot

CLUSTER_LIST = "clusterList.txt"
TOPIC_ROUTE = "topicRoute"
CONSUMER_CONNECTION = "consumerConnection"
CONSUMER_PROGRESS = "consumerProgress"
STATS_ALL = "statsAll.txt"
PRODUCER_CONNECTION = "producerConnection"
TOPIC_STATUS = "topicStatus"

T = TypeVar("T")


@dataclass(frozen=True)
class Capture:
    """Everything the directory holds, parsed; files named by their path for messages."""

    root: str
    cluster: cluster_list.ClusterList | None
    routes: Mapping[str, TopicRoute]  # by topic
    connections: Mapping[str, ConsumerConnection]  # by group
    progress: Mapping[str, ConsumerProgress]  # by group
    stats: StatsAll | None = None
    producers: Mapping[tuple[str, str], ProducerConnection] = field(default_factory=dict)  # (group, topic)
    topic_status: Mapping[str, TopicStatus] = field(default_factory=dict)  # by topic

    def path(self, *parts: str) -> str:
        return os.path.join(self.root, *parts)


@dataclass(frozen=True)
class Imported:
    tables: dict[str, pa.Table]
    warnings: tuple[str, ...]
    formats: dict[str, tuple[str, ...]]  # command: the output formats seen (which versions)
    counts: dict[str, int] = field(default_factory=dict)  # rows written per table


def _stem(file: str) -> str:
    return file[: -len(".txt")] if file.endswith(".txt") else file


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError as e:
        raise InputError(path, None, f"cannot read: {e.strerror}") from None


def _files(root: str, sub: str, *, required: bool) -> dict[str, str]:
    """{stem: path} for the files of ``root/sub`` (hidden files skipped)."""
    folder = os.path.join(root, sub)
    if not os.path.isdir(folder):
        if required:
            raise InputError(folder, None, f"missing: save `mqadmin {sub} ...` outputs as {sub}/<name>.txt")
        return {}
    found = {_stem(f): os.path.join(folder, f) for f in sorted(os.listdir(folder)) if not f.startswith(".")}
    if required and not found:
        raise InputError(folder, None, f"empty: save `mqadmin {sub} ...` outputs as {sub}/<name>.txt")
    return found


def read_capture(root: str) -> Capture:
    if not os.path.isdir(root):
        raise InputError("arguments", "--in", f"{root} is not a directory")
    cluster_path = os.path.join(root, CLUSTER_LIST)
    cluster = (
        cluster_list.parse(_read(cluster_path), source=cluster_path) if os.path.exists(cluster_path) else None
    )
    routes = {
        topic: topic_route.parse(_read(p), source=p)
        for topic, p in _files(root, TOPIC_ROUTE, required=True).items()
    }
    connections = {
        group: consumer_connection.parse(_read(p), source=p)
        for group, p in _files(root, CONSUMER_CONNECTION, required=True).items()
    }
    progress = {
        group: consumer_progress.parse(_read(p), source=p)
        for group, p in _files(root, CONSUMER_PROGRESS, required=False).items()
    }
    stats_path = os.path.join(root, STATS_ALL)
    stats = stats_all.parse(_read(stats_path), source=stats_path) if os.path.exists(stats_path) else None
    producers = {
        key: producer_connection.parse(_read(p), source=p) for key, p in _producer_files(root).items()
    }
    status = {
        topic: topic_status.parse(_read(p), source=p)
        for topic, p in _files(root, TOPIC_STATUS, required=False).items()
    }
    return Capture(root, cluster, routes, connections, progress, stats, producers, status)


def _producer_files(root: str) -> dict[tuple[str, str], str]:
    """{(producer group, topic): path}: producerConnection needs both -g and -t, so a group's
    outputs go in a folder of its own, one file per topic."""
    folder = os.path.join(root, PRODUCER_CONNECTION)
    found = {}
    for group, path in _files(root, PRODUCER_CONNECTION, required=False).items():
        if not os.path.isdir(path):
            raise InputError(
                path,
                None,
                f"expected a folder per producer group: save `mqadmin producerConnection -g GROUP -t TOPIC` "
                f"as {PRODUCER_CONNECTION}/GROUP/TOPIC.txt",
            )
        found.update({(group, topic): p for topic, p in _files(folder, group, required=False).items()})
    return found


@dataclass(frozen=True)
class PerGroup(Generic[T]):
    """A flag's values: one group's (``GROUP=VALUE``), and every other group's (a bare ``VALUE``)."""

    default: T | None = None
    by_group: Mapping[str, T] = field(default_factory=dict)

    def get(self, group: str | None) -> T | None:
        """None: a group mqadmin did not name (a topic's default producer population)."""
        return self.default if group is None else self.by_group.get(group, self.default)

    def groups(self) -> set[str]:
        return set(self.by_group)


@dataclass(frozen=True)
class RequestMode:
    mode: str  # PULL or POP
    pop_share_queue_num: int | None = None  # POP:N; None: the column's default (-1)


def to_tables(
    capture: Capture,
    *,
    default_strategy: str | None = None,
    strategies: Mapping[str, str] | None = None,
    rebalance: PerGroup[str] | None = None,
    request_mode: PerGroup[RequestMode] | None = None,
    selector: PerGroup[str] | None = None,
    send_latency_fault: PerGroup[bool] | None = None,
) -> Imported:
    strategy = PerGroup(default_strategy, dict(strategies or {}))
    rebalance = rebalance or PerGroup()
    request_mode = request_mode or PerGroup()
    selector = selector or PerGroup()
    send_latency_fault = send_latency_fault or PerGroup()
    _check_flag_groups(
        {"--strategy": strategy, "--rebalance": rebalance, "--request-mode": request_mode},
        set(capture.connections),
        f"no {CONSUMER_CONNECTION}/<group>.txt for group(s)",
    )
    _check_flag_groups(
        {"--selector": selector, "--send-latency-fault": send_latency_fault},
        {group for group, _ in capture.producers},
        f"no {PRODUCER_CONNECTION}/<producer_group>/ folder for producer group(s)",
    )
    warnings: list[str] = []
    brokers = _brokers(capture, warnings)
    broker_names = {row["broker_name"] for row in brokers}
    rows = {
        "brokers": brokers,
        "topic_queues": [
            {
                "topic": topic,
                "broker_name": q.broker_name,
                "read_queue_nums": q.read_queue_nums,
                "write_queue_nums": q.write_queue_nums,
                "perm": q.perm,
            }
            for topic, route in sorted(capture.routes.items())
            for q in route.queues
        ],
        "consumers": _consumers(capture, warnings),
        "groups": _groups(capture, strategy, rebalance, request_mode, warnings),
    }
    offsets, observed = _progress(capture, broker_names, warnings)
    rows["offsets"] = offsets
    rows["observed_assignments"] = observed
    # The optional captures give their tables only where they were saved: an empty producers table
    # would say that nothing is sent.
    if capture.stats is not None:
        traffic = _traffic(capture, capture.stats, warnings)
        rows["observed_traffic"] = list(traffic.rows)
        producers = _producers(capture, traffic.rates, selector, send_latency_fault, warnings)
        if producers:
            rows["producers"] = producers
    elif capture.producers:
        warnings.append(
            f"no {STATS_ALL}: the topics' rates are unknown, so {PRODUCER_CONNECTION}/ gives no producers "
            "table (rows of 0 messages would tell the simulation that nothing is sent)"
        )
    if capture.topic_status:
        rows["queue_status"] = _queue_status(capture, broker_names, warnings)
    specs = {s.name: s for s in schemas.SNAPSHOT_TABLES}
    tables = {name: _table(specs[name], table) for name, table in rows.items()}
    return Imported(tables, tuple(warnings), _formats(capture), {n: t.num_rows for n, t in tables.items()})


def import_mqadmin(
    root: str,
    out: str,
    *,
    default_strategy: str | None = None,
    strategies: Mapping[str, str] | None = None,
    rebalance: PerGroup[str] | None = None,
    request_mode: PerGroup[RequestMode] | None = None,
    selector: PerGroup[str] | None = None,
    send_latency_fault: PerGroup[bool] | None = None,
) -> Imported:
    imported = to_tables(
        read_capture(root),
        default_strategy=default_strategy,
        strategies=strategies,
        rebalance=rebalance,
        request_mode=request_mode,
        selector=selector,
        send_latency_fault=send_latency_fault,
    )
    write_snapshot(imported.tables, out)
    return imported


def _check_flag_groups(flags: Mapping[str, PerGroup], known: set[str], missing: str) -> None:
    for flag, given in flags.items():
        unknown = sorted(given.groups() - known)
        if unknown:
            raise InputError("arguments", flag, f"{missing} {', '.join(unknown)}")


def _table(spec: schemas.TableSpec, rows: list[dict]) -> pa.Table:
    return arrow_table(spec, _columns(spec, rows))


def _groups(
    capture: Capture,
    strategy: PerGroup[str],
    rebalance: PerGroup[str],
    request_mode: PerGroup[RequestMode],
    warnings: list[str],
) -> list[dict]:
    """A row per group with clients. The flags' columns are set only for the groups they name
    (a bare value names every group), so a capture imported without them has none of them."""
    rows, pop_on_client = [], []
    for group, cc in sorted(capture.connections.items()):
        if not cc.connections:
            continue
        row = {"group": group, "strategy": strategy.get(group), "message_model": cc.message_model}
        balanced_by = rebalance.get(group)
        if balanced_by is not None:
            row["rebalance"] = balanced_by
        mode = request_mode.get(group)
        if mode is not None:
            row["request_mode"] = mode.mode
            if mode.pop_share_queue_num is not None:
                row["pop_share_queue_num"] = mode.pop_share_queue_num
            if mode.mode == "POP" and balanced_by != "broker":
                pop_on_client.append(group)
        rows.append(row)
    if pop_on_client:
        warnings.append(
            f"--request-mode POP for {', '.join(pop_on_client)}, which the broker does not balance: the "
            "request mode counts only with --rebalance GROUP=broker, so it is ignored there"
        )
    return rows


def _columns(spec: schemas.TableSpec, rows: list[dict]) -> dict[str, list]:
    names = [c.name for c in spec.columns if c.required or any(c.name in r for r in rows)]
    return {n: [r.get(n) for r in rows] for n in names}


def _brokers(capture: Capture, warnings: list[str]) -> list[dict]:
    instances: dict[tuple[str, int], dict] = {}

    def add(cluster: str | None, name: str, bid: int, address: str | None) -> None:
        instances.setdefault(
            (name, bid),
            {"cluster": cluster, "broker_name": name, "broker_id": bid, "address": address, "alive": True},
        )

    if capture.cluster is None:
        warnings.append(f"no {CLUSTER_LIST}: brokers are taken from the routes, all counted alive")
    else:
        for b in capture.cluster.instances:
            add(b.cluster, b.broker_name, b.broker_id, b.address)
    listed = {name for name, _ in instances}
    from_routes: dict[str, list[str]] = defaultdict(list)
    for topic, route in sorted(capture.routes.items()):
        for b in route.brokers:
            if b.broker_name not in listed:
                from_routes[b.broker_name].append(topic)
                for bid, address in b.addresses:
                    add(b.cluster, b.broker_name, bid, address)
        for q in route.queues:
            if q.broker_name not in listed and q.broker_name not in {b.broker_name for b in route.brokers}:
                from_routes[q.broker_name].append(topic)
                add(None, q.broker_name, 0, None)
    if capture.cluster is not None:
        for name, topics in sorted(from_routes.items()):
            path = capture.path(TOPIC_ROUTE, f"{topics[0]}.txt")
            others = f" (and {len(topics) - 1} other route(s))" if len(topics) > 1 else ""
            warnings.append(
                f"broker {name} is in {path}{others} but not in {CLUSTER_LIST}: imported from the route, "
                "alive (were the files saved at different times?)"
            )
    return [instances[k] for k in sorted(instances)]


def _consumers(capture: Capture, warnings: list[str]) -> list[dict]:
    rows = []
    for group, cc in sorted(capture.connections.items()):
        path = capture.path(CONSUMER_CONNECTION, f"{group}.txt")
        if not cc.connections:
            warnings.append(f"{path} lists no client: the group was offline")
        if cc.consume_type == "CONSUME_POP":
            warnings.append(f"{path}: the group consumes by POP, where no queue is assigned to a client")
        for sub in cc.subscriptions:
            if sub.topic not in capture.routes:
                warnings.append(
                    f"{path}:{sub.line} subscribes {sub.topic}, but there is no "
                    f"{TOPIC_ROUTE}/{sub.topic}.txt: that topic is left out"
                )
                continue
            rows.extend(
                {"group": group, "topic": sub.topic, "client_id": c.client_id, "language": c.language}
                for c in cc.connections
            )
    return rows


def _holder(ip: str | None, cc: ConsumerConnection | None) -> str | None:
    """The client id of the group's client with this IP, where exactly one has it."""
    if ip is None or cc is None:
        return None
    ids = {c.client_id for c in cc.connections if c.ip == ip} or {
        c.client_id for c in cc.connections if c.addr_ip == ip
    }
    return next(iter(ids)) if len(ids) == 1 else None


def _progress(capture: Capture, broker_names: set[str], warnings: list[str]) -> tuple[list[dict], list[dict]]:
    offsets, observed = [], []
    for group, progress in sorted(capture.progress.items()):
        path = capture.path(CONSUMER_PROGRESS, f"{group}.txt")
        cc = capture.connections.get(group)
        if cc is None:
            warnings.append(
                f"{path}: no {CONSUMER_CONNECTION}/{group}.txt, so its holders' client ids are unknown"
            )
        if not progress.shows_holder:
            warnings.append(
                f"{path} was saved without -s true: it names no holders, so {group} cannot be validated"
            )
        topics = set(capture.routes) | {s.topic for s in (cc.subscriptions if cc else ())}
        skipped: dict[str, list[int]] = defaultdict(list)
        seen: dict[tuple[str, str, int], int] = {}
        for q in progress.queues:
            topic = _resolve(path, q.line, "topic", q.topic, progress.topic_cut, topics)
            broker = _resolve(path, q.line, "broker name", q.broker_name, progress.broker_cut, broker_names)
            if topic is None or topic not in capture.routes:
                skipped[f"topic {topic or q.topic} has no {TOPIC_ROUTE}/ file"].append(q.line)
                continue
            if broker is None:
                skipped[f"broker {q.broker_name} is in no route and not in {CLUSTER_LIST}"].append(q.line)
                continue
            key = (topic, broker, q.queue_id)
            if key in seen:
                raise error(
                    path,
                    q.line,
                    f"queue {topic} {broker} {q.queue_id} is listed twice (also line {seen[key]})",
                )
            seen[key] = q.line
            queue = {"group": group, "topic": topic, "broker_name": broker, "queue_id": q.queue_id}
            offsets.append({**queue, "broker_offset": q.broker_offset, "consumer_offset": q.consumer_offset})
            if progress.shows_holder:
                observed.append({**queue, "client_id": _holder(q.client_ip, cc), "client_ip": q.client_ip})
        _left_out(path, skipped, warnings)
    return offsets, observed


def _left_out(path: str, skipped: Mapping[str, list[int]], warnings: list[str]) -> None:
    """One warning per reason lines of a file were left out, naming the first line."""
    for what, lines in sorted(skipped.items()):
        where = f"{path}:{lines[0]}" + (f" and {len(lines) - 1} more line(s)" if len(lines) > 1 else "")
        warnings.append(f"{where}: {what}: left out")


def _traffic(capture: Capture, stats: StatsAll, warnings: list[str]) -> Traffic:
    """statsAll's lines, names matched against every full topic and group name the capture has."""
    subscriptions = {g: {s.topic for s in cc.subscriptions} for g, cc in capture.connections.items()}
    topics = (
        set(capture.routes)
        | {t for subscribed in subscriptions.values() for t in subscribed}
        | set(capture.topic_status)
        | {topic for _, topic in capture.producers}
    )
    traffic = observed_traffic(
        stats,
        source=capture.path(STATS_ALL),
        topics=topics,
        subscriptions=subscriptions,
        groups=set(capture.progress),
    )
    warnings.extend(traffic.warnings)
    return traffic


def _producers(
    capture: Capture,
    rates: Mapping[str, float],
    selector: PerGroup[str],
    send_latency_fault: PerGroup[bool],
    warnings: list[str],
) -> list[dict]:
    """The populations, with the flags' columns where they name a value (a bare value is every
    other group's, the default population's, whose group is unknown, included)."""
    populations = producer_populations(
        rates,
        capture.producers,
        routed=set(capture.routes),
        stats_source=capture.path(STATS_ALL),
        path=lambda group, topic: capture.path(PRODUCER_CONNECTION, group, f"{topic}.txt"),
    )
    warnings.extend(populations.warnings)
    rows = []
    for population in populations.rows:
        row = dict(population)
        for column, given in (("selector", selector), ("send_latency_fault_enable", send_latency_fault)):
            value = given.get(row.get("producer_group"))
            if value is not None:
                row[column] = value
        rows.append(row)
    return rows


def _queue_status(capture: Capture, broker_names: set[str], warnings: list[str]) -> list[dict]:
    """topicStatus's queues, as consumerProgress's are taken: a broker name cut at 32 matched to
    the one broker that starts so (several: an error), queues of an unknown topic or broker left out."""
    rows = []
    for topic, status in sorted(capture.topic_status.items()):
        path = capture.path(TOPIC_STATUS, f"{topic}.txt")
        if topic not in capture.routes:
            warnings.append(f"{path}: no {TOPIC_ROUTE}/{topic}.txt: left out")
            continue
        skipped: dict[str, list[int]] = defaultdict(list)
        seen: dict[tuple[str, int], int] = {}
        for q in status.queues:
            broker = _resolve(path, q.line, "broker name", q.broker_name, status.broker_cut, broker_names)
            if broker is None:
                skipped[f"broker {q.broker_name} is in no route and not in {CLUSTER_LIST}"].append(q.line)
                continue
            if (broker, q.queue_id) in seen:
                also = seen[broker, q.queue_id]
                raise error(path, q.line, f"queue {broker} {q.queue_id} is listed twice (also line {also})")
            seen[broker, q.queue_id] = q.line
            rows.append(
                {
                    "topic": topic,
                    "broker_name": broker,
                    "queue_id": q.queue_id,
                    "min_offset": q.min_offset,
                    "max_offset": q.max_offset,
                    "last_updated": q.last_updated,
                }
            )
        _left_out(path, skipped, warnings)
    return rows


def _resolve(path: str, line: int, what: str, printed: str, cut: int, known: set[str]) -> str | None:
    found = names.resolve(printed, cut, known)
    if found.candidates:
        raise error(
            path,
            line,
            f"{what} {printed!r} is cut at {cut} characters and could be any of "
            f"{', '.join(found.candidates)}: rename one, or leave the other's route out of the capture",
        )
    return found.name


def _formats(capture: Capture) -> dict[str, tuple[str, ...]]:
    seen = {
        "clusterList": {capture.cluster.format} if capture.cluster else set(),
        "topicRoute": {r.format for r in capture.routes.values()},
        "consumerConnection": {c.format for c in capture.connections.values()},
        "consumerProgress": {p.format for p in capture.progress.values()},
        "statsAll": {capture.stats.format} if capture.stats else set(),
        "producerConnection": {p.format for p in capture.producers.values()},
        "topicStatus": {t.format for t in capture.topic_status.values()},
    }
    return {command: tuple(sorted(formats)) for command, formats in seen.items() if formats}
