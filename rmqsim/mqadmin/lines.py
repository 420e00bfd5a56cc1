"""A saved mqadmin output as numbered lines, without the noise a shell redirect also captures.

`mqadmin ... > file 2>&1` keeps the JVM's and the logging framework's warnings beside the table;
those lines are dropped wherever they are, by their well-known prefixes. Where the table itself
is, inside what a page kept around it, is table.py's to find; a line a parser cannot read is an
InputError that names the file and the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rmqsim.errors import InputError

NOISE = (
    "RocketMQLog:",  # 4.x: "RocketMQLog:WARN No appenders could be found for logger ..."
    "SLF4J:",
    "log4j:",
    "Java HotSpot(TM)",  # "... VM warning: ignoring option PermSize=128m ..."
    "OpenJDK 64-Bit Server VM",
    "WARNING:",  # JDK 9+: illegal reflective access
)

# What mqadmin prints when the command itself failed: an exception, not a table.
FAILURE = re.compile(r"^(?:[\w$]+\.)+[\w$]*(?:Exception|Error)\b(?::\s*(?P<message>.*))?$")


@dataclass(frozen=True)
class Line:
    number: int  # 1-based, in the file as saved
    text: str  # without the line break; trailing white space kept (layouts need it)


def is_noise(text: str) -> bool:
    return text.strip().startswith(NOISE)


def content_lines(text: str) -> list[Line]:
    """The lines that are not blank and not noise, as saved."""
    return [
        Line(number, raw.rstrip("\r"))
        for number, raw in enumerate(text.splitlines(), start=1)
        if raw.strip() and not is_noise(raw)
    ]


def error(source: str, line: int | None, problem: str) -> InputError:
    """An InputError that names the file and line: ``consumerProgress/g.txt:12: <problem>``."""
    return InputError(f"{source}:{line}" if line else source, None, problem)
