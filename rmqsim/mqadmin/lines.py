"""A saved mqadmin output as numbered lines, without the noise a shell redirect also captures.

`mqadmin ... > file 2>&1` keeps the JVM's and the logging framework's warnings beside the table;
those lines are dropped here, by their well-known prefixes. Everything else is the command's own
output, and a line a parser cannot read is an InputError that names the file and the line.

Output copied from a web page (a wiki, a chat, a ticket) often arrives indented, every line by
the same 4 or 8 spaces. mqadmin starts every line of its output at the first column, so the
indentation the output's lines share is taken off before the parsers see them (line numbers stay
those of the file). A block indented unevenly, a later line less than the first, was damaged in
the copy: an error names the line.
"""

from __future__ import annotations

import os
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

INDENT = " \t"  # what a copy indents with

# What mqadmin prints when the command itself failed: an exception, not a table.
FAILURE = re.compile(r"^(?:[\w$]+\.)+[\w$]*(?:Exception|Error)\b(?::\s*(?P<message>.*))?$")


@dataclass(frozen=True)
class Line:
    number: int  # 1-based, in the file as saved
    text: str  # without the line break; trailing white space kept (layouts need it)


def content_lines(text: str) -> list[Line]:
    """The lines that are the command's output: not blank, not noise, without the indentation
    they all share."""
    out = []
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not stripped or stripped.startswith(NOISE):
            continue
        out.append(Line(number, raw.rstrip("\r")))
    margin = len(os.path.commonprefix([_indent(line.text) for line in out]))
    return [Line(line.number, line.text[margin:]) for line in out] if margin else out


def _indent(text: str) -> str:
    return text[: len(text) - len(text.lstrip(INDENT))]


def error(source: str, line: int | None, problem: str) -> InputError:
    """An InputError that names the file and line: ``consumerProgress/g.txt:12: <problem>``."""
    return InputError(f"{source}:{line}" if line else source, None, problem)


def command_output(text: str, *, source: str, usage: str) -> list[Line]:
    """The content lines of a saved ``mqadmin <usage>``; an error where there are none, or where
    the file holds mqadmin's exception instead of its output."""
    lines = content_lines(text)
    if not lines:
        raise error(source, None, f"empty: save the output of `mqadmin {usage}`")
    command = usage.split()[0]
    for line in lines[:3]:
        match = FAILURE.match(line.text.strip())
        if match:
            raise error(
                source,
                line.number,
                f"mqadmin {command} failed when this was saved ({line.text.strip()}); "
                "run it again, or remove the file",
            )
    first = _indent(lines[0].text)
    if first:  # after the shared indentation is off, a line that keeps some has more than another
        line = next(line for line in lines if len(_indent(line.text)) < len(first))
        less = len(first) - len(_indent(line.text))
        raise error(
            source,
            line.number,
            f"indented {less} character(s) less than line {lines[0].number}, the first of the output: "
            "was it damaged when it was copied? Indent every line alike, or none",
        )
    return lines
