"""`mqadmin consumerConnection -g GROUP`: the group's clients and its subscriptions.

Before 4.9.3 every client line starts with an index (``%03d  %-32s %-22s %-8s %s``: index, client
id, client address, language, version) and so does every subscription (``001  Topic: T
SubExpression: *``), the first of which follows "Below is subscription:" on the same line. From
4.9.3 on, a header names the columns (``#ClientId  #ClientAddr  #Language  #Version``) and the
subscriptions (``#Topic  #SubExpression``). Both end with ConsumeType, MessageModel and
ConsumeFromWhere. A client id is listed once per connection, so an id listed twice is two
processes that call themselves the same.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rmqsim.mqadmin.lines import error
from rmqsim.mqadmin.table import Layout, table_lines

BELOW = "Below is subscription:"
OLD_CONNECTION = re.compile(r"^\d{3,}\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s*$")
OLD_SUBSCRIPTION = re.compile(r"^\d{3,}\s+Topic:\s+(\S+)\s+SubExpression:\s?(.*)$")
NEW_CONNECTION = re.compile(r"^(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s*$")
SETTINGS = ("ConsumeType", "MessageModel", "ConsumeFromWhere")
LAYOUT = Layout(
    usage="consumerConnection -g GROUP",
    # The header, or before 4.9.3 the first client.
    header=re.compile(r"#ClientId\b|\d{3,}\s+\S+\s+\S+\s+\S+\s+\S+\s*$"),
    expected="consumerConnection's clients (#ClientId  #ClientAddr  #Language  #Version, or before 4.9.3 "
    "NNN  client id  address  language  version)",
    # After a blank line: a client, the subscriptions, the settings.
    rows=re.compile(
        r"Below is subscription:|#Topic\b|(?:ConsumeType|MessageModel|ConsumeFromWhere):"
        r"|\d{3,}\s+\S|\S+\s+\S+:\d+\s+[A-Z_]+\s+\S+\s*$"
    ),
    inside=re.compile(r"#ClientId\W+#ClientAddr\b|(?<=\S)\s+Below is subscription:"),
)


@dataclass(frozen=True)
class Connection:
    line: int
    client_id: str
    client_addr: str
    language: str
    version: str

    @property
    def ip(self) -> str:
        """The IP a client id starts with (``ip@instance[@unit]``): what consumerProgress prints."""
        return self.client_id.split("@")[0]

    @property
    def addr_ip(self) -> str:
        """The IP of the socket address; older consumerProgress printed this one."""
        host = self.client_addr.rsplit(":", 1)[0]
        return host.strip("[]").lstrip("/")


@dataclass(frozen=True)
class Subscription:
    line: int
    topic: str
    expression: str


@dataclass(frozen=True)
class ConsumerConnection:
    connections: tuple[Connection, ...]
    subscriptions: tuple[Subscription, ...]
    consume_type: str | None  # CONSUME_PASSIVELY (push), CONSUME_ACTIVELY (pull), CONSUME_POP
    message_model: str | None  # CLUSTERING or BROADCASTING
    consume_from_where: str | None
    format: str  # "before 4.9.3" (index column) or "4.9.3 and later" (header)


def parse(text: str, *, source: str) -> ConsumerConnection:
    lines = table_lines(text, source=source, layout=LAYOUT)
    new = lines[0].text.startswith("#ClientId")
    connections: list[Connection] = []
    subscriptions: list[Subscription] = []
    settings: dict[str, str] = {}
    section = "connections"
    for line in lines[1:] if new else lines:
        text = line.text.strip()
        if section == "connections" and text.startswith(BELOW):
            section = "subscriptions"
            text = text[len(BELOW) :].strip()  # before 4.9.3 the first subscription follows here
            if not text:
                continue
        key, sep, value = text.partition(":")
        if sep and key in SETTINGS:
            section = "settings"
            settings[key] = value.strip()
            continue
        if section == "connections":
            match = (NEW_CONNECTION if new else OLD_CONNECTION).match(text)
            if not match:
                expected = (
                    "client id, client address, language, version"
                    if new
                    else "index, then client id, address, language, version"
                )
                raise error(source, line.number, f"expected a client line ({expected}), found {text!r}")
            connections.append(Connection(line.number, *match.groups()))
        elif section == "subscriptions":
            if new and text.startswith("#Topic"):
                continue
            if new:
                topic, _, expression = text.partition(" ")
                subscriptions.append(Subscription(line.number, topic, expression.strip()))
                continue
            match = OLD_SUBSCRIPTION.match(text)
            if not match:
                raise error(
                    source,
                    line.number,
                    f"expected a subscription (NNN  Topic: T SubExpression: E), found {text!r}",
                )
            subscriptions.append(Subscription(line.number, match.group(1), match.group(2).strip()))
        else:
            raise error(source, line.number, f"unexpected line after the consumer settings: {text!r}")
    _complete(source, lines[-1].number, section, settings)
    return ConsumerConnection(
        tuple(connections),
        tuple(subscriptions),
        settings.get("ConsumeType"),
        settings.get("MessageModel"),
        settings.get("ConsumeFromWhere"),
        "4.9.3 and later" if new else "before 4.9.3",
    )


def _complete(source: str, last: int, section: str, settings: dict[str, str]) -> None:
    """mqadmin prints the subscriptions and all three settings: a copy without them ends early,
    maybe inside the subscriptions."""
    if section == "connections":
        raise error(source, last, f"no {BELOW!r} section: is this consumerConnection's output?")
    missing = [key for key in SETTINGS if key not in settings]
    if missing:
        raise error(
            source,
            last,
            f"the output ends here, without {', '.join(missing)}: was it cut short when it was copied?",
        )
