"""Reading JSON as fastjson writes it, with the line of every object and array.

RocketMQ serialises with fastjson, which writes a map with numeric keys without quoting them:
``"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"}``, which strict JSON parsers reject. This
reader takes a bare number or identifier where a key is expected, and otherwise reads plain JSON.
Objects and arrays remember the line they start on, so a missing field can be reported by line.
"""

from __future__ import annotations

import bisect
import json
import re

from rmqsim.mqadmin.lines import error

NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
BARE_KEY = re.compile(r"[A-Za-z0-9_$.+-]+")
LITERALS = {"true": True, "false": False, "null": None}


class JsonObject(dict):
    line: int = 0


class JsonArray(list):
    line: int = 0


class _Reader:
    def __init__(self, text: str, source: str, first_line: int) -> None:
        self.text = text
        self.source = source
        self.first_line = first_line
        self.starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]
        self.pos = 0

    def line(self, pos: int | None = None) -> int:
        return self.first_line + bisect.bisect_right(self.starts, self.pos if pos is None else pos) - 1

    def fail(self, problem: str, pos: int | None = None) -> Exception:
        return error(self.source, self.line(pos), f"not JSON as mqadmin prints it: {problem}")

    def skip_space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in " \t\r\n":
            self.pos += 1

    def peek(self) -> str:
        self.skip_space()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def expect(self, char: str) -> None:
        if self.peek() != char:
            found = repr(self.text[self.pos]) if self.pos < len(self.text) else "the end of the file"
            raise self.fail(f"expected {char!r}, found {found}")
        self.pos += 1

    def value(self) -> object:
        c = self.peek()
        if c == "{":
            return self.object()
        if c == "[":
            return self.array()
        if c == '"':
            return self.string()
        match = NUMBER.match(self.text, self.pos)
        if match:
            self.pos = match.end()
            number = match.group()
            return float(number) if any(x in number for x in ".eE") else int(number)
        for word, literal in LITERALS.items():
            if self.text.startswith(word, self.pos):
                self.pos += len(word)
                return literal
        raise self.fail(f"unexpected {c!r}" if c else "unexpected end of the file")

    def string(self) -> str:
        try:
            value, self.pos = json.decoder.scanstring(self.text, self.pos + 1)
        except json.JSONDecodeError as e:
            raise self.fail(e.msg, e.pos) from None
        return value

    def key(self) -> str:
        if self.peek() == '"':
            return self.string()
        match = BARE_KEY.match(self.text, self.pos)  # fastjson: {0:"..."}
        if not match:
            raise self.fail("expected a key")
        self.pos = match.end()
        return match.group()

    def object(self) -> JsonObject:
        out = JsonObject()
        out.line = self.line()
        self.expect("{")
        if self.peek() == "}":
            self.pos += 1
            return out
        while True:
            key = self.key()
            self.expect(":")
            out[key] = self.value()
            if self.peek() == ",":
                self.pos += 1
                continue
            self.expect("}")
            return out

    def array(self) -> JsonArray:
        out = JsonArray()
        out.line = self.line()
        self.expect("[")
        if self.peek() == "]":
            self.pos += 1
            return out
        while True:
            out.append(self.value())
            if self.peek() == ",":
                self.pos += 1
                continue
            self.expect("]")
            return out


def loads(text: str, *, source: str, first_line: int = 1) -> object:
    """Parse ``text`` (which starts on line ``first_line`` of ``source``); nothing may follow it."""
    reader = _Reader(text, source, first_line)
    value = reader.value()
    if reader.peek():
        raise reader.fail("more text after the JSON value")
    return value
