"""`mqadmin producerConnection -g GROUP -t TOPIC`: the producers of a group that a broker of the topic knows.

One line per connection and no header, the same in every version from 3.x to 5.x: a running
number from 0001 (four digits, zero-padded), two spaces, the client id (ip@instance, padded to
32), the client's address (host:port, padded to 22), its language (padded to 8: JAVA, GO, CPP,
...) and its version. A value wider than its column pushes the rest of the line right. The
version is the name MQVersion gives the number the client sends (V4_9_8, V5_1_4; the Go client
sends V4_5_2's number, the C++ client V4_6_0's); a number past the end of the tool's own list
prints as its last name: V3_9_9 in 3.x, V4_5_0 in 4.0.0, HIGHER_VERSION from 4.1.0 on.

mqadmin asks one broker of the topic's route: from 4.0 on one picked at random, in 3.x the first.
Where that broker lists no connection for the group, mqadmin prints an exception instead: "the
producer group[GROUP] not exist" (the broker never saw the group, or, in 5.x, which drops a group
with its last producer, saw it go) or, from 4.0 on, "Not found the producer group connection" (the
broker kept the group, its producers have gone: 4.x does). Both are read as a group with no
producer online, and the message is kept; any other exception is an error. 3.x prints nothing for
a group its broker kept without connections; such a capture is refused as empty (nothing tells it
from a file saved before the command ran).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rmqsim.mqadmin.consumer_connection import Connection
from rmqsim.mqadmin.lines import FAILURE, Line, content_lines, error
from rmqsim.mqadmin.table import Layout, begins, table_lines, unprefixed

CONNECTION = re.compile(r"^(?P<index>\d{4,})\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)$")
LAYOUT = Layout(  # no header: the table starts at its first producer line
    usage="producerConnection -g GROUP -t TOPIC",
    header=re.compile(r"\d{4,}\s+\S"),
    expected="a producer line (number, client id, client address, language, version)",
    rows=re.compile(r"\d{4,}\s+\S"),
)
CAUSED_BY = "Caused by: "
NO_CONNECTION = re.compile(r"Not found the producer group connection|the producer group\[[^\]]*\] not exist")
FORMAT = "3.x to 5.x"  # one layout


@dataclass(frozen=True)
class ProducerConnection:
    connections: tuple[Connection, ...]  # consumer_connection.Connection: id, address, language, version
    no_connection: str | None  # mqadmin's message where it found no connection; None where it listed some
    format: str  # always "3.x to 5.x": the layout never changed

    @property
    def online(self) -> bool:
        return bool(self.connections)


def parse(text: str, *, source: str) -> ProducerConnection:
    lines = content_lines(text)
    message = _no_connection(lines)
    if message is not None:
        listed = next((line for line in lines if begins(line.text, LAYOUT.header)), None)
        if listed is not None:  # a page that shows a failed run and a later one
            raise error(
                source,
                listed.number,
                f"a producer line, and mqadmin's {message!r} too: which output is meant cannot be told; "
                "save one output per file",
            )
        return ProducerConnection((), message, FORMAT)
    lines = table_lines(text, source=source, layout=LAYOUT)
    connections = tuple(_connection(source, line, n) for n, line in enumerate(lines, start=1))
    return ProducerConnection(connections, None, FORMAT)


def _no_connection(lines: list[Line]) -> str | None:
    """The message of the exception mqadmin prints for a group without connections, if it did."""
    for line in lines:
        text = unprefixed(line.text).strip()
        text = text[len(CAUSED_BY) :] if text.startswith(CAUSED_BY) else text
        failure = FAILURE.match(text)
        found = NO_CONNECTION.search(failure.group("message") or "") if failure else None
        if found:
            return found.group(0)
    return None


def _connection(source: str, line: Line, expected: int) -> Connection:
    text = line.text.strip()
    match = CONNECTION.match(text)
    if not match:
        raise error(
            source,
            line.number,
            "expected a producer line (number, client id, client address, language, version), "
            f"found {text!r}",
        )
    if int(match.group("index")) != expected:
        raise error(
            source,
            line.number,
            f"numbered {match.group('index')} where {expected:04d} comes next: mqadmin numbers the producers "
            "from 0001 without gaps; was a line lost in the copy?",
        )
    client_id, address, language, version = match.groups()[1:]
    return Connection(line.number, client_id, address, language, version)
