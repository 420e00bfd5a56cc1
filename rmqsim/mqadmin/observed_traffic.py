"""statsAll's lines as `observed_traffic` rows, their cut names matched back, and each topic's rate.

statsAll prints a line per (topic, consumer group), and one per topic no group consumes, with names
cut to its column (32 or 64 characters). A name is matched as consumerProgress's are
(topic_match, names.resolve): the topic to the one full name the capture knows that starts so, the
group likewise among the groups it has files for. Where a cut topic or group could be several,
the other name of the line can tell: the only candidate pair in which the group subscribes to
the topic (consumerConnection) is taken. Else the line cannot be placed and the import stops,
naming the file and the line, as it does for consumerProgress. A name no known one fits is kept
as printed: statsAll lists topics the capture has no route for (system topics, topics nobody
saved) and groups it has no files for.

#InTPS is the topic's and repeats on each of its lines; the lines of a busy cluster are read one
after another, so they can disagree: the largest is the topic's rate, and the import says so.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Set
from dataclasses import dataclass

from rmqsim.mqadmin import names
from rmqsim.mqadmin.lines import error
from rmqsim.mqadmin.stats_all import StatsAll, TopicGroupStats
from rmqsim.mqadmin.topic_match import match_topic


@dataclass(frozen=True)
class Traffic:
    rows: tuple[dict, ...]  # observed_traffic rows: topic, group, in_tps, out_tps, accumulation
    rates: Mapping[str, float]  # per topic (full name where matched, else as printed): its InTPS
    warnings: tuple[str, ...]


def observed_traffic(
    stats: StatsAll,
    *,
    source: str,
    topics: Set[str],
    subscriptions: Mapping[str, Set[str]],
    groups: Set[str] = frozenset(),
) -> Traffic:
    """``topics``: the full topic names the capture knows; ``subscriptions``: the topics each group
    subscribes to (consumerConnection); ``groups``: further group names known (consumerProgress)."""
    known_groups = set(subscriptions) | set(groups)
    rows, warnings = [], []
    seen: dict[tuple[str, str | None], int] = {}
    in_tps: dict[str, dict[float, list[int]]] = defaultdict(lambda: defaultdict(list))
    unmatched_groups: dict[str, list[int]] = defaultdict(list)
    printed_cut: set[str] = set()  # topics printed as wide as the column: lines of several may meet
    for row in stats.rows:
        topic, group = _names(row, stats.name_width, source, topics, known_groups, subscriptions)
        if row.topic_may_be_cut:
            printed_cut.add(topic)
        if row.group_may_be_cut and group == row.group and group not in known_groups:
            unmatched_groups[group].append(row.line)
        if (topic, group) in seen:
            raise error(
                source,
                row.line,
                f"topic {topic} and group {group or 'NO_CONSUMER'} are listed twice (also line "
                f"{seen[topic, group]})",
            )
        seen[topic, group] = row.line
        in_tps[topic][row.in_tps].append(row.line)
        rows.append(
            {
                "topic": topic,
                "group": group,
                "in_tps": row.in_tps,
                "out_tps": row.out_tps,
                "accumulation": row.accumulation,
            }
        )
    for topic, values in sorted(in_tps.items()):
        if len(values) > 1:
            said = "; ".join(f"{v:.2f} (line {', '.join(map(str, ls))})" for v, ls in sorted(values.items()))
            why = "the rates moved while statsAll ran"
            if topic in printed_cut:
                why += f", or its lines are of several topics whose first {stats.name_width} characters agree"
            warnings.append(
                f"{source}: topic {topic}'s InTPS differs between its lines ({said}): {why}; the largest, "
                f"{max(values):.2f}, is the topic's rate"
            )
    for group, lines in sorted(unmatched_groups.items()):
        warnings.append(
            f"{source}:{lines[0]}: group {group!r} is {stats.name_width} characters, as wide as the column, "
            "and may be cut; no consumerConnection or consumerProgress file names a group that starts "
            "so: kept as printed"
        )
    return Traffic(
        tuple(rows),
        {topic: max(values) for topic, values in in_tps.items()},
        tuple(warnings),
    )


def _names(
    row: TopicGroupStats,
    width: int,
    source: str,
    topics: Set[str],
    groups: Set[str],
    subscriptions: Mapping[str, Set[str]],
) -> tuple[str, str | None]:
    """The line's topic and group, matched; where either could be several names, the one pair in
    which the group subscribes to the topic."""
    topic = match_topic(row.topic, width, topics)
    topic_options = topic.candidates or (row.topic,)
    group_options: tuple[str | None, ...] = (None,)
    group = None
    if row.group is not None:
        group = names.resolve(row.group, width, groups)
        group_options = (group.name,) if group.name else group.candidates or (row.group,)
    if len(topic_options) == 1 and len(group_options) == 1:
        return topic_options[0], group_options[0]
    subscribed = [(t, g) for t in topic_options for g in group_options if g is not None]
    pairs = [(t, g) for t, g in subscribed if t in subscriptions.get(g, ())]
    if len(pairs) == 1:
        return pairs[0]
    problems = [f"topic {topic.explanation}"] if len(topic_options) > 1 else []
    if group is not None and len(group_options) > 1:
        candidates = ", ".join(group.candidates)
        problems.append(f"group {row.group!r} is cut at {width} characters and could be any of {candidates}")
    if row.group is None:
        tells = "the line names no group to tell which"
    elif pairs:
        tells = f"{len(pairs)} of the pairs are a group and a topic it subscribes to"
    else:
        tells = "no consumerConnection file says the group subscribes to one of them"
    wider = ", or save statsAll with mqadmin 4.9.3 or later, which prints 64 characters" if width < 64 else ""
    raise error(
        source,
        row.line,
        f"{'; '.join(problems)}, and {tells}: delete the line (that topic's rate is then unknown){wider}",
    )
