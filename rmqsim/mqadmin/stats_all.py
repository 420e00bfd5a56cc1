"""`mqadmin statsAll [-a] [-t TOPIC]`: per topic and consumer group, the last minute's and last day's traffic.

A header, then a line per (topic, consumer group) and one per topic that no group consumes. Three
layouts, told apart by the header:

- before 4.0 (3.x): the topic and the group in 32-character columns, then #InTPS, #OutTPS,
  #InMsg24Hour and #OutMsg24Hour. 3.x has no -t.
- 4.0 to 4.9.2: #Accumulation (the group's total diff, floored at 0) between the group and
  #InTPS; the names still 32 wide. 5.0.0-PREVIEW prints this layout too.
- 4.9.3 and later, 5.x included: the two name columns 64 characters wide.

A name longer than its column is cut to it (``UtilAll.frontStringAtLeast``), so a name printed
exactly as wide as the column may be the start of a longer one (the rows mark it). A topic with no
consumer group leaves the group and #OutTPS blank and prints NO_CONSUMER right-aligned in the last
column (#OutMsg24Hour), and 0 as its #Accumulation. #InTPS is the topic's, summed over its master
brokers, and repeats on each of its groups' lines. TPS have two decimals, with the decimal
separator of the JVM's locale (a comma in some). Retry and dead-letter topics (``%RETRY%...``,
``%DLQ%...``) are never listed, even when -t names one. -a keeps the lines with traffic in the
last day.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rmqsim.mqadmin.lines import Line, error
from rmqsim.mqadmin.table import Layout, table_lines

NO_CONSUMER = "NO_CONSUMER"
GROUP_COLUMN = "#Consumer Group"
INTEGER = re.compile(r"^-?\d+$")
DECIMAL = re.compile(r"^-?\d+[.,]\d+$")
NUMBERS = {  # the numeric columns and what each holds
    "accumulation": INTEGER,
    "InTPS": DECIMAL,
    "OutTPS": DECIMAL,
    "InMsg24Hour": INTEGER,
    "OutMsg24Hour": INTEGER,
}
LAYOUT = Layout(
    usage="statsAll [-a] [-t TOPIC]",
    header=re.compile(r"#Topic\s+#Consumer Group\b"),
    expected="the statsAll header (#Topic  #Consumer Group  [#Accumulation]  #InTPS  #OutTPS  #InMsg24Hour  "
    "#OutMsg24Hour)",
    rows=re.compile(r"[^\s:]+(?:\s+[^\s:]+){0,2}\s+-?\d+[.,]\d+(?:\s|$)"),  # names, [accumulation], InTPS
    inside=re.compile(r"#Topic\W+#Consumer Group\b"),
)
LAYOUTS = {  # (name width, #Accumulation printed): the versions that print so
    (32, False): "before 4.0",
    (32, True): "4.0 to 4.9.2",
    (64, True): "4.9.3 and later",
}


@dataclass(frozen=True)
class TopicGroupStats:
    line: int
    topic: str  # as printed: cut to the layout's name width where longer
    topic_may_be_cut: bool  # printed exactly as wide as its column: maybe the start of a longer name
    group: str | None  # None: NO_CONSUMER, no group consumes the topic
    group_may_be_cut: bool
    accumulation: int | None  # None before 4.0 (no column); 0 on a NO_CONSUMER line, as printed
    in_tps: float  # the topic's, the same on each of its lines
    out_tps: float | None  # the group's on this topic; None on a NO_CONSUMER line
    in_msg_24h: int
    out_msg_24h: int | None  # None on a NO_CONSUMER line

    @property
    def has_consumer(self) -> bool:
        return self.group is not None


@dataclass(frozen=True)
class StatsAll:
    rows: tuple[TopicGroupStats, ...]
    name_width: int  # 32 or 64: names printed this long may have been cut
    has_accumulation: bool
    format: str  # "before 4.0", "4.0 to 4.9.2" or "4.9.3 and later"


def parse(text: str, *, source: str) -> StatsAll:
    lines = table_lines(text, source=source, layout=LAYOUT)
    width, accumulation = _layout(source, lines[0])
    rows = tuple(_row(source, line, width, accumulation) for line in lines[1:])
    return StatsAll(rows, width, accumulation, LAYOUTS[width, accumulation])


def _layout(source: str, header: Line) -> tuple[int, bool]:
    """The name width and whether #Accumulation is there, from the header."""
    tokens = header.text.split()
    accumulation = "#Accumulation" in tokens
    expected = ["#Topic", "#Consumer", "Group"] + ["#Accumulation"] * accumulation
    expected += ["#InTPS", "#OutTPS", "#InMsg24Hour", "#OutMsg24Hour"]
    if tokens != expected:
        raise error(
            source,
            header.number,
            "expected the statsAll header (#Topic  #Consumer Group  [#Accumulation]  #InTPS  #OutTPS  "
            f"#InMsg24Hour  #OutMsg24Hour), found {header.text.strip()!r}",
        )
    width = header.text.index(GROUP_COLUMN) - 2  # the topic's column and two spaces come first
    if (width, accumulation) not in LAYOUTS:
        raise error(
            source,
            header.number,
            f"{GROUP_COLUMN} starts at character {width + 3}"
            + ("" if accumulation else ", without #Accumulation")
            + ": no mqadmin prints that (it starts at 35, names cut at 32, before 4.9.3; at 67, names "
            "cut at 64, from 4.9.3 on, with #Accumulation from 4.0 on); was the header retyped, or its "
            "spacing collapsed by a page? Without it, which names were cut cannot be told",
        )
    return width, accumulation


def _row(source: str, line: Line, width: int, accumulation: bool) -> TopicGroupStats:
    tokens = line.text.split()
    counts = ["accumulation"] if accumulation else []
    columns = ["topic", "consumer group", *counts, "InTPS", "OutTPS", "InMsg24Hour", "OutMsg24Hour"]
    if len(tokens) == len(columns):
        named = dict(zip(columns, tokens))
    elif len(tokens) == len(columns) - 2 and tokens[-1] == NO_CONSUMER:
        named = dict(zip(["topic", *counts, "InTPS", "InMsg24Hour"], tokens))
    else:
        raise error(
            source,
            line.number,
            f"expected {len(columns)} fields ({', '.join(columns)}), or {len(columns) - 2} ending in "
            f"{NO_CONSUMER} for a topic no group consumes; found {len(tokens)}: {line.text.strip()!r}",
        )
    for column, value in named.items():
        kind = NUMBERS.get(column)
        if kind is not None and not kind.match(value):
            number = "a number with decimals" if kind is DECIMAL else "a whole number"
            raise error(source, line.number, f"{column} is not {number}: {value!r} in {line.text.strip()!r}")
    for column in ("topic", "consumer group"):
        if len(named.get(column, "")) > width:
            raise error(
                source,
                line.number,
                f"{column} {named[column]!r} is longer than the {width} characters this layout prints: "
                "is the header from another mqadmin version?",
            )
    topic, group = named["topic"], named.get("consumer group")
    return TopicGroupStats(
        line.number,
        topic,
        len(topic) == width,
        group,
        group is not None and len(group) == width,
        int(named["accumulation"]) if accumulation else None,
        _decimal(named["InTPS"]),
        _decimal(named["OutTPS"]) if group is not None else None,
        int(named["InMsg24Hour"]),
        int(named["OutMsg24Hour"]) if group is not None else None,
    )


def _decimal(value: str) -> float:
    return float(value.replace(",", "."))
