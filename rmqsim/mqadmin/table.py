"""Where a command's table is inside what people save, and its lines.

People save what they saw: a shell redirect keeps the JVM's warnings beside the table, and a copy
from a web page keeps what the page had around the output: the command line, a prompt, Markdown
fences, prose before and after, a telnet banner, and often a prefix on every line (a code
comment's ` * `, a quote's `> `, a shell comment's `# `, an indentation). mqadmin starts every
line of its output at the first column, so the table is found by its header, and what the header
line has before it is the prefix that every line of the table shares.

- The header is the first line that, its prefix taken off, starts as the command's header does
  (a command without a header starts at its first row). Everything before it is skipped.
- The table runs on from there, each line without the prefix, noise dropped. It ends at a fence,
  a prompt or a command line, a shell's message, a line without the prefix, or a blank line after
  which the next line is none of the table's (a row, a section, the totals). Every other line
  goes to the parser, which refuses what it cannot read, naming the line: a line stuck to the
  table is not skipped as prose, for it may be a row the copy damaged.
- A second header after the end is refused (which output was meant cannot be told); so is a line
  without the prefix that reads as a row (the copy lost the prefix there), and a table with HTML
  escapes in it (the page's source was saved, not its text).
- A file where no line starts as the header does is refused, naming the line that tells why:
  another output of the command, the output run together inside a line (the page joined its
  lines), mqadmin's exception, or else the first line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rmqsim.errors import InputError
from rmqsim.mqadmin.lines import FAILURE, Line, error, is_noise

# What a page puts in front of every line of a block: indentation, the markers of a code comment
# (` * `, `// `), a quote (`> `) or a shell comment (`# `), each followed by white space, and a
# diff's `+`. A header's own `#` is followed by a letter, so it is never taken for a marker.
PREFIX = re.compile(r"^(?:[ \t]*(?:(?:\*|>|#|//)(?=[ \t]|$)|\+))*[ \t]*")

# Lines that end a table wherever they are: nothing mqadmin prints starts so.
SEPARATORS = (
    re.compile(r"^\s*(?:```|~~~|</?(?:pre|code)\b)"),  # a Markdown fence, an HTML <pre> or <code>
    re.compile(  # a prompt: [user@host dir]#, user@host:~$, C:\...>, PS C:\>, $, #, >
        r"^(?:\[[^\]]*\]\s?[#$%>]|[\w.-]+@[\w.-]+(?::\S*)?[#$%>]|[\w.-]+[#$%]"
        r"|(?:PS )?[A-Za-z]:\\[^>]*>|[$%#>❯])(?:\s|$)"
    ),
    re.compile(r"^(?:sudo\s+)?(?:(?:ba)?sh\s+)?\S*mqadmin(?:\.cmd|\.sh)?(?:\s|$)"),  # the command
    re.compile(r"^-?(?:ba|z|k|c|tc|da)?sh: "),  # the shell's message: "-bash: x: command not found"
    re.compile(r"^(?:Connection (?:to \S+ )?closed\b|logout$)"),  # the end of a telnet or ssh session
)
# An HTML escape: the page's source was saved, not the text it shows (no name mqadmin prints has one).
ENTITY = re.compile(r"&(?:quot|amp|lt|gt|nbsp|#\d+);")
# A value on the header's line: a word with a digit in it that is no column's name.
VALUE = re.compile(r"(?:^|\s)([^#\s]*\d\S*)")


@dataclass(frozen=True)
class Layout:
    """What finding one command's table takes."""

    usage: str  # the command as the user runs it: named in messages
    header: re.Pattern[str]  # how the table's first line starts (the prefix taken off)
    expected: str  # the header in words, for a file where none is found
    rows: re.Pattern[str]  # how a line of the table past the header starts: a row, a section, the totals
    inside: re.Pattern[str] | None = None  # the output inside a line: the page joined the lines
    others: tuple[tuple[re.Pattern[str], str], ...] = ()  # other outputs of the command: the refusal

    @property
    def command(self) -> str:
        return self.usage.split()[0]


def table_lines(text: str, *, source: str, layout: Layout) -> list[Line]:
    """The table's lines, header (or first row) first, each without the prefix and numbered as
    in the file; an InputError naming the line where there is none, or it cannot be told which."""
    # A Windows editor's byte order mark, and the no-break spaces a browser copies for spaces.
    raw = [line.rstrip("\r").replace("\xa0", " ") for line in text.removeprefix("\ufeff").splitlines()]
    start = next((i for i, line in enumerate(raw) if begins(line, layout.header)), None)
    if start is None:
        raise _missing(raw, source, layout)
    prefix = PREFIX.match(raw[start]).group()
    header = Line(start + 1, raw[start][len(prefix) :])
    _not_joined(source, header, layout)
    body, end = _body(raw, start, prefix, source, layout)
    escaped = next((line for line in (header, *body) if ENTITY.search(line.text)), None)
    if escaped is not None:
        raise error(
            source,
            escaped.number,
            f"{ENTITY.search(escaped.text).group()!r} is the page's HTML, not mqadmin's output: copy the "
            "output from the page as it shows it, or save it again from mqadmin",
        )
    second = next((i for i in range(end, len(raw)) if begins(raw[i], layout.header)), None)
    if second is not None:
        raise error(
            source,
            second + 1,
            f"a second {layout.command} output starts here, after the one at line {header.number}: "
            "which one is meant cannot be told; save one output per file",
        )
    return [header, *body]


def unprefixed(line: str) -> str:
    """The line without what a page put in front of it (indentation, ` * `, `> `, `# `)."""
    return line[len(PREFIX.match(line).group()) :]


def _noise(line: str) -> bool:
    return is_noise(unprefixed(line))


def begins(line: str, pattern: re.Pattern[str]) -> bool:
    """Whether the line, its prefix taken off, begins as ``pattern`` does (a noise line never)."""
    return not _noise(line) and bool(pattern.match(unprefixed(line)))


def _body(raw: list[str], start: int, prefix: str, source: str, layout: Layout) -> tuple[list[Line], int]:
    """The lines after the header up to the table's end, and the index of the first line past it."""
    marker = prefix.strip()  # a blank line of a comment or a quote keeps its marker: " *", ">"
    body: list[Line] = []
    gap = False
    for i in range(start + 1, len(raw)):
        line = raw[i]
        if _noise(line):  # with the prefix or without: the warnings come from another stream
            continue
        if line.startswith(prefix):
            text = line[len(prefix) :]
        elif line.strip() in ("", marker):
            text = ""
        elif layout.rows.match(unprefixed(line)):
            raise _lost_prefix(source, i + 1, line, prefix, start + 1)
        else:
            return body, i
        if not text.strip():
            gap = True
            continue
        if any(p.match(text) for p in SEPARATORS) or gap and not layout.rows.match(text):
            return body, i
        body.append(Line(i + 1, text))
        gap = False
    return body, len(raw)


def _lost_prefix(source: str, number: int, line: str, prefix: str, header: int) -> InputError:
    indent = len(line) - len(line.lstrip(" \t"))
    if not prefix.strip() and indent < len(prefix):
        return error(
            source,
            number,
            f"indented {len(prefix) - indent} character(s) less than line {header}, the table's header: "
            "was it damaged when it was copied? Indent every line alike, or none",
        )
    return error(
        source,
        number,
        f"a row without the {prefix!r} that the table's header (line {header}) starts with: was it "
        "damaged when it was copied? Give every line of the table the same prefix, or none",
    )


def _not_joined(source: str, header: Line, layout: Layout) -> None:
    """A header is column names (each '#Name', some of two words); a value on its line means the
    page joined the rows onto it."""
    if not header.text.startswith("#"):
        return
    value = VALUE.search(header.text)
    if value is not None:
        raise error(
            source,
            header.number,
            f"the {layout.command} header runs on into {header.text[value.start(1) :][:30]!r}: the rows were "
            "joined onto it when the page was copied; paste the output as mqadmin printed it, a row per line",
        )


def _missing(raw: list[str], source: str, layout: Layout) -> InputError:
    """Why no line starts as the header does, naming the line that tells."""
    lines = [Line(i + 1, line) for i, line in enumerate(raw) if line.strip() and not _noise(line)]
    if not lines:
        return error(source, None, f"empty: save the output of `mqadmin {layout.usage}`")
    for line in lines:
        for pattern, message in layout.others:
            if pattern.match(unprefixed(line.text)):
                return error(source, line.number, message)
    for line in lines if layout.inside else ():
        found = layout.inside.search(line.text)
        if found:
            return error(
                source,
                line.number,
                f"the {layout.command} output runs together on this line (from "
                f"{line.text[found.start() :].strip()[:30]!r}): the page lost its line breaks; paste it as "
                "mqadmin printed it, a row per line",
            )
    for line in lines:
        if FAILURE.match(unprefixed(line.text).strip()):
            return error(
                source,
                line.number,
                f"mqadmin {layout.command} failed when this was saved ({unprefixed(line.text).strip()}); "
                "run it again, or remove the file",
            )
    return error(source, lines[0].number, f"expected {layout.expected}, found {lines[0].text.strip()!r}")
