"""Each topic's statsAll rate shared over its producer populations: the `producers` table
(docs/CONTRACT.md, section 2c).

`mqadmin producerConnection -g GROUP -t TOPIC` needs both names, so its outputs are saved as
``producerConnection/<producer_group>/<topic>.txt``. It lists the connections of the group that
one broker of the topic knows, each with its library (language) and version. A population is
(producer group, language, version) with its connections. mqadmin shows no rate per client, so
every connection counts the same: a population sends the topic's rate times its connections over
all the topic's connections (of every group saved for it).

Only topics with a route get rows (the simulation rejects the others). A topic with a rate and no
producer listed is one default population (Java, null group). A population of a topic statsAll
gives no rate for is kept, with msgs_per_s 0 and a warning: the rows still say who writes where,
and a scenario's set_traffic can give them a rate.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Set
from dataclasses import dataclass

from rmqsim.mqadmin.producer_connection import ProducerConnection
from rmqsim.producers.versions import UnknownVersionError, parse_version
from rmqsim.schemas import LANGUAGES

NOT_IN_STATS_ALL = ("%RETRY%", "%DLQ%")  # statsAll never prints these topics
PRODUCER_CONNECTION_FOLDER = "producerConnection"


@dataclass(frozen=True)
class Populations:
    rows: tuple[dict, ...]  # producers rows: topic, producer_group, client_id, msgs_per_s, language, version
    warnings: tuple[str, ...]


def producer_populations(
    rates: Mapping[str, float],
    connections: Mapping[tuple[str, str], ProducerConnection],
    *,
    routed: Set[str],
    stats_source: str,
    path: Callable[[str, str], str],
) -> Populations:
    """``rates``: statsAll's rate per topic; ``connections``: producerConnection per (producer group,
    topic); ``routed``: the topics with a route; ``path(group, topic)``: a capture's file, for messages."""
    by_topic: dict[str, dict[str, ProducerConnection]] = defaultdict(dict)
    for (group, topic), listed in connections.items():
        by_topic[topic][group] = listed
    rows: list[dict] = []
    warnings: list[str] = []
    unrouted = sorted(t for t in rates if t not in routed)
    if unrouted:
        warnings.append(
            f"{stats_source} names {len(unrouted)} topic(s) without a topicRoute/ file, so no producers "
            f"row: {', '.join(unrouted)}"
        )
    for topic, files in sorted(by_topic.items()):
        if topic not in routed:
            for g in sorted(files):
                warnings.append(f"{path(g, topic)}: no topicRoute/{topic}.txt: its producers are left out")
    for topic in sorted(routed & (set(rates) | set(by_topic))):
        files = by_topic.get(topic, {})
        rate = rates.get(topic)
        for g, listed in sorted(files.items()):
            where = path(g, topic)
            if not listed.online:
                warnings.append(f"{where}: no producer of {g} online ({listed.no_connection}): no population")
            elif rate is None:
                warnings.append(
                    f"{where}: {stats_source} has no line for {topic}, so its rate is unknown: its producers "
                    "are imported with msgs_per_s 0"
                )
            warnings.extend(_unsimulated(where, listed))
        if rate is not None and files and not any(f.online for f in files.values()):
            warnings.append(
                f"no producer of {topic} online in {PRODUCER_CONNECTION_FOLDER}/, though {stats_source} "
                f"measured {rate:.2f} msg/s: imported as one default (Java) population"
            )
        rows.extend(_topic_rows(topic, rate, files))
    silent = sorted(t for t in routed if t not in rates and not t.startswith(NOT_IN_STATS_ALL))
    if rows and silent:
        warnings.append(
            f"{stats_source} has no line for {len(silent)} routed topic(s): {', '.join(silent)}; their rate "
            "is unknown, and the simulation sends them nothing"
        )
    return Populations(tuple(rows), tuple(warnings))


def _topic_rows(topic: str, rate: float | None, files: Mapping[str, ProducerConnection]) -> list[dict]:
    connections = Counter((g, c.language, c.version) for g, f in files.items() for c in f.connections)
    total = sum(connections.values())
    if not total:
        default = {"producer_group": None, "client_id": None, "language": None, "version": None}
        return [] if rate is None else [{"topic": topic, **default, "msgs_per_s": rate}]
    ids: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for g, f in files.items():
        for c in f.connections:
            ids[g, c.language, c.version].append(c.client_id)
    return [
        {
            "topic": topic,
            "producer_group": group,
            "client_id": ids[group, language, version][0] if n == 1 else None,
            # Equal per connection: mqadmin shows no client's own rate.
            "msgs_per_s": (rate or 0.0) * n / total,
            "language": language,
            "version": version,
        }
        for (group, language, version), n in sorted(connections.items())
    ]


def _unsimulated(source: str, listed: ProducerConnection) -> list[str]:
    """Clients whose library or version the simulation cannot place: it rejects their rows."""
    problems = []
    for c in listed.connections:
        if c.language.strip().upper() not in LANGUAGES:
            problems.append(f"{source}:{c.line}: language {c.language} is none of {', '.join(LANGUAGES)}")
        try:
            parse_version(c.version)
        except UnknownVersionError as e:
            problems.append(f"{source}:{c.line}: version {e}")
    return [f"{p}: the simulation rejects its population's row" for p in problems]
