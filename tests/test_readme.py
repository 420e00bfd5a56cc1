"""The README's commands stay true: the two set-up commands come first and every rmqsim example parses."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from rmqsim.cli import parser

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def _blocks() -> list[str]:
    return re.findall(r"```sh\n(.*?)```", README, flags=re.S)


def test_readme_opens_with_make_demo_and_make_test() -> None:
    first = [line.split("#")[0].strip() for line in _blocks()[0].splitlines()]
    assert first[:2] == ["make demo", "make test"]
    makefile = (Path(__file__).resolve().parent.parent / "Makefile").read_text()
    assert re.search(r"^demo:", makefile, re.M) and re.search(r"^test:", makefile, re.M)


def _examples() -> list[list[str]]:
    out = []
    for block in _blocks():
        text = block.replace("\\\n", " ")
        for line in text.splitlines():
            line = line.split("  #")[0].strip()
            if line.startswith("rmqsim ") and "[" not in line:
                out.append(shlex.split(line)[1:])
            words = shlex.split(line) if "simulate.py" in line and "..." not in line else []
            entry = [i for i, w in enumerate(words) if w.endswith("/simulate.py")]
            if entry:  # spark-submit's entry point takes simulate's arguments
                out.append(["simulate", *words[entry[0] + 1 :]])
    return out


def test_there_are_examples() -> None:
    assert any(args[0] == "simulate" for args in _examples())


@pytest.mark.parametrize("args", _examples(), ids=lambda a: " ".join(a)[:40])
def test_readme_example_parses(args: list[str]) -> None:
    parser().parse_args(args)
