"""`mqadmin topicStatus -t TOPIC`: per queue of the topic, its offsets and when it was last written.

A header (#Broker Name  #QID  #Min Offset  #Max Offset  #Last Updated), then a line per queue,
sorted by broker name and queue id: the broker name in a 32-character column and cut to it
(``UtilAll.frontStringAtLeast``), two spaces, the queue id left-aligned in 4, two spaces, the
offsets left-aligned in 20 each with two spaces between, four spaces, and the store time of the
queue's last message as ``yyyy-MM-dd HH:mm:ss,SSS`` in the time zone of the machine that ran
mqadmin, or nothing where the queue was never written (max offset 0). The topic itself is not
printed: the file name names it (topicStatus/<topic>.txt).

The layout is the same from 3.x to 5.3.2 (5.3.1 adds -c, which changes nothing printed). 5.3.3
adds a blank line and ``Topic Put TPS: <value>`` (Java's Double.toString) after the table; that
mqadmin does not add the brokers' values up, so it prints 0.0.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from rmqsim.mqadmin.lines import Line, error
from rmqsim.mqadmin.table import Layout, table_lines

HEADER = ["#Broker", "Name", "#QID", "#Min", "Offset", "#Max", "Offset", "#Last", "Updated"]
QID_COLUMN = "#QID"
BROKER_CUT = 32
COUNT = re.compile(r"^\d+$")
TIME = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}$")
TIME_FORMAT = "%Y-%m-%d %H:%M:%S,%f"
PUT_TPS = re.compile(r"^Topic Put TPS:\s*(?P<value>\S+)$")
DOUBLE = re.compile(r"^(?:-?\d+\.\d+(?:E-?\d+)?|NaN|-?Infinity)$")  # Double.toString
LAYOUT = Layout(
    usage="topicStatus -t TOPIC",
    header=re.compile(r"#Broker Name\s+#QID\b"),
    expected="the topicStatus header (#Broker Name  #QID  #Min Offset  #Max Offset  #Last Updated)",
    rows=re.compile(r"\S+\s+\d+\s+\d+\s+\d+(?:\s|$)|Topic Put TPS:"),
    inside=re.compile(r"#Broker Name\W+#QID\b"),
)


@dataclass(frozen=True)
class QueueStatus:
    line: int
    broker_name: str  # as printed: cut at 32 characters
    broker_may_be_cut: bool  # printed exactly 32 long: maybe the start of a longer name
    queue_id: int
    min_offset: int
    max_offset: int
    last_updated: datetime | None  # naive, mqadmin's local time; None where never written


@dataclass(frozen=True)
class TopicStatus:
    queues: tuple[QueueStatus, ...]
    broker_cut: int  # 32
    put_tps: float | None  # "Topic Put TPS" (5.3.3 and later; 0.0 as that mqadmin prints it)
    format: str  # "before 5.3.3" or "5.3.3 and later"


def parse(text: str, *, source: str) -> TopicStatus:
    lines = table_lines(text, source=source, layout=LAYOUT)
    header = lines[0]
    if header.text.split() != HEADER:
        raise error(
            source,
            header.number,
            "expected the topicStatus header (#Broker Name  #QID  #Min Offset  #Max Offset  #Last Updated), "
            f"found {header.text.strip()!r}",
        )
    qid_at = header.text.index(QID_COLUMN)
    queues: list[QueueStatus] = []
    put_tps = None
    for line in lines[1:]:
        footer = PUT_TPS.match(line.text.strip())
        if put_tps is not None:
            raise error(source, line.number, f"unexpected line after Topic Put TPS: {line.text.strip()!r}")
        if footer:
            put_tps = _put_tps(source, line, footer.group("value"))
            continue
        queues.append(_queue(source, line, qid_at))
    return TopicStatus(
        tuple(queues), BROKER_CUT, put_tps, "before 5.3.3" if put_tps is None else "5.3.3 and later"
    )


def _put_tps(source: str, line: Line, value: str) -> float:
    if not DOUBLE.match(value):
        raise error(source, line.number, f"Topic Put TPS is not a number: {value!r}")
    return float(value)


def _queue(source: str, line: Line, qid_at: int) -> QueueStatus:
    text = line.text
    # The broker name is cut to its column, so the queue id starts where the header's does; a line
    # that does not keep the layout (retyped) is read by white space: broker names have none then.
    if len(text) > qid_at and text[qid_at - 2 : qid_at] == "  " and text[qid_at] != " " and text[0] != " ":
        broker, rest = text[:qid_at].strip(), text[qid_at:].split()
    else:
        broker, *rest = text.split() or [""]
    numbers, stamp = rest[:3], " ".join(rest[3:])
    if len(numbers) < 3 or not all(COUNT.match(n) for n in numbers) or stamp and not TIME.match(stamp):
        raise error(
            source,
            line.number,
            "expected a queue: broker name, queue id, min offset, max offset (whole numbers) and the last "
            f"updated time (yyyy-MM-dd HH:mm:ss,SSS, or nothing); found {text.strip()!r}",
        )
    if len(broker) > BROKER_CUT:
        raise error(
            source,
            line.number,
            f"broker name {broker!r} is longer than the {BROKER_CUT} characters mqadmin prints",
        )
    qid, low, high = (int(n) for n in numbers)
    return QueueStatus(
        line.number,
        broker,
        len(broker) == BROKER_CUT,
        qid,
        low,
        high,
        _time(source, line, stamp) if stamp else None,
    )


def _time(source: str, line: Line, stamp: str) -> datetime:
    try:
        return datetime.strptime(stamp, TIME_FORMAT)
    except ValueError:
        raise error(source, line.number, f"last updated {stamp!r} is not a date and time") from None
