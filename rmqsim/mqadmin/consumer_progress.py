"""`mqadmin consumerProgress -g GROUP -s true`: per queue, the offsets and the client holding it.

The header names the columns: #Topic, #Broker Name, #QID, #Broker Offset, #Consumer Offset, then
#Client IP where the command was given ``-s true``, #Diff, #Inflight from 5.1 on, and #LastTime
(a date and a time, or N/A). Topics are cut at 64 characters (32 in early 4.x, whose header says
so) and broker names at 32 (``UtilAll.frontStringAtLeast``): the importer matches them back to the
routes' full names.

The holder is what mqadmin found by asking each client of consumerConnection for its queues; it
prints only the part of the client id before the first '@' (the client's IP), or N/A where no
client reported the queue. Older versions printed the IP of the client's socket address instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rmqsim.mqadmin.lines import Line, error
from rmqsim.mqadmin.table import Layout, table_lines

NO_HOLDER = ("N/A", "NA", "")
TOTALS = r"(?:Consume TPS|Diff Total|Consume Diff Total|Consume Inflight Total):"
FOOTER = re.compile(rf"^{TOTALS}\s*\S+$")
INTEGER = re.compile(r"^-?\d+$")
TOPIC_CUTS = (32, 64)  # %-32s before 4.x's #Client IP column, %-64s since
BROKER_CUT = 32
LAYOUT = Layout(
    usage="consumerProgress -g GROUP -s true",
    header=re.compile(r"#Topic\s+#Broker Name\b"),
    expected="the consumerProgress header (#Topic  #Broker Name  #QID ...)",
    rows=re.compile(rf"\S+\s+\S+\s+\d+\s+-?\d+(?:\s|$)|{TOTALS}"),  # a queue, or the totals
    inside=re.compile(r"#Topic\W+#Broker Name\b"),
    others=(
        (re.compile(r"#Group\s+#Count\b"), "saved without -g: save `consumerProgress -g GROUP -s true`"),
    ),
)


@dataclass(frozen=True)
class QueueProgress:
    line: int
    topic: str  # as printed: maybe cut short
    broker_name: str  # as printed: maybe cut short
    queue_id: int
    broker_offset: int
    consumer_offset: int
    client_ip: str | None  # None: no holder, or the column was not printed
    inflight: int | None


@dataclass(frozen=True)
class ConsumerProgress:
    queues: tuple[QueueProgress, ...]
    shows_holder: bool  # saved with -s true: the #Client IP column is there
    topic_cut: int  # names printed this long may have been cut
    broker_cut: int
    format: str  # "5.1 and later" (#Inflight) or "before 5.1"


def parse(text: str, *, source: str) -> ConsumerProgress:
    lines = table_lines(text, source=source, layout=LAYOUT)
    header = lines[0]
    if "#QID" not in header.text:  # table.py took a line that starts "#Topic  #Broker Name"
        found = header.text.strip()
        raise error(
            source,
            header.number,
            f"expected {LAYOUT.expected}, found {found!r}",
        )
    broker_at = header.text.index("#Broker Name")
    qid_at = header.text.index("#QID")
    shows_holder = "#Client IP" in header.text
    inflight = "#Inflight" in header.text
    queues = []
    table = True
    for line in lines[1:]:
        if FOOTER.match(line.text.strip()):
            table = False
            continue
        if not table:
            raise error(source, line.number, f"unexpected line after the totals: {line.text.strip()!r}")
        queues.append(_queue(source, line, broker_at, qid_at, shows_holder, inflight))
    # A retyped or collapsed header does not say which width cut the topics: 64 then, so that a
    # name printed shorter is never matched to a longer one it cannot be the start of.
    topic_cut = broker_at - 2 if broker_at - 2 in TOPIC_CUTS else max(TOPIC_CUTS)
    return ConsumerProgress(
        tuple(queues),
        shows_holder,
        topic_cut=topic_cut,
        broker_cut=BROKER_CUT,
        format="5.1 and later" if inflight else "before 5.1",
    )


def _queue(
    source: str, line: Line, broker_at: int, qid_at: int, holder: bool, inflight: bool
) -> QueueProgress:
    text = line.text
    # Topic and broker name are cut to their column's width, so they stay where the header puts
    # them; a line that does not (retyped, tabs) is read by white space: neither name has spaces.
    if (
        len(text) > qid_at
        and text[broker_at - 1] == " "
        and text[qid_at - 1] == " "
        and text[broker_at] != " "
    ):
        topic, broker, rest = text[:broker_at].strip(), text[broker_at:qid_at].strip(), text[qid_at:].split()
    else:
        tokens = text.split()
        topic, broker, rest = (tokens[0], tokens[1], tokens[2:]) if len(tokens) > 2 else ("", "", [])
    columns = ["topic", "broker name", "queue id", "broker offset", "consumer offset"]
    columns += ["client IP"] if holder else []
    columns += ["diff"] + (["inflight"] if inflight else [])
    ip = rest.pop(3) if holder and len(rest) > 3 else None
    numbers = len(columns) - 2 - holder
    values, last_time = rest[:numbers], rest[numbers:]  # the time: "N/A", or a date and a time
    if (
        not topic
        or not broker
        or len(values) < numbers
        or len(last_time) > 2
        or not all(INTEGER.match(v) for v in values)
        or int(values[0]) < 0
    ):
        raise error(
            source,
            line.number,
            f"expected {len(columns)} columns ({', '.join(columns)}) and the last time, "
            f"found {text.strip()!r}",
        )
    qid, broker_offset, consumer_offset = (int(v) for v in values[:3])
    return QueueProgress(
        line.number,
        topic,
        broker,
        qid,
        broker_offset,
        consumer_offset,
        None if ip in NO_HOLDER else ip,
        int(values[4]) if inflight else None,
    )
