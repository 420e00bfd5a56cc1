"""The README's commands stay true: the two set-up commands come first, every rmqsim example parses,
and every YAML scenarios example (README.md, docs/CONTRACT.md) goes through the real scenario parser."""

from __future__ import annotations

import re
import shlex
import textwrap
from pathlib import Path

import pytest

from rmqsim.cli import parser
from rmqsim.scenarios.parse import parse

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
YAML_DOCS = ("README.md", "docs/CONTRACT.md")  # docs/CONTRACT.md is skipped where it does not exist


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


def _scenario_files(text: str) -> list[str]:
    """The ```yaml blocks that are whole scenarios files (a top-level `scenarios:` key); the others
    are fragments, such as one scenario or one step, that the parser does not take alone."""
    fenced = re.findall(r"^([ \t]*)```ya?ml[^\n]*\n(.*?)^\1```", text, flags=re.S | re.M)
    blocks = [textwrap.dedent(body) for _, body in fenced]
    return [b for b in blocks if re.search(r"^scenarios:", b, flags=re.M)]


def _yaml_cases() -> list:
    cases = []
    for doc in YAML_DOCS:
        path = ROOT / doc
        if not path.exists():
            cases.append(pytest.param(doc, None, id=doc, marks=pytest.mark.skip(reason=f"no {doc}")))
            continue
        cases += [
            pytest.param(doc, b, id=f"{doc}-{i}") for i, b in enumerate(_scenario_files(path.read_text()))
        ]
    return cases


def test_the_readme_has_a_yaml_scenarios_example() -> None:
    assert _scenario_files(README)


@pytest.mark.parametrize(("doc", "block"), _yaml_cases())
def test_yaml_scenarios_example_parses(doc: str, block: str) -> None:
    scenarios = parse(block, source=doc)
    assert len(scenarios) >= 1
    assert all(len(s.steps) >= 1 for s in scenarios)


def _runnable(args: list[str]) -> bool:
    """Examples whose paths are this machine's: not hdfs://, s3a://, Spark Connect or /shared."""
    return not any(a.startswith(("hdfs:", "s3a:", "sc:", "/shared")) for a in args)


def test_the_readme_examples_that_can_run_here_run(spark, sample_run, tmp_path, monkeypatch) -> None:
    """Each example with local paths, run as written (in this session's Spark) in a directory
    holding what it names: the sample, dist/'s scenarios, a capture, the demo's run as `out`."""
    import shutil

    from rmqsim.cli import main
    from rmqsim.config import sample_scenarios, sample_snapshot

    (tmp_path / "conf").mkdir()
    shutil.copytree(sample_snapshot(), tmp_path / "conf" / "sample_snapshot")
    (tmp_path / "dist" / "scenarios").mkdir(parents=True)
    shutil.copy(sample_scenarios(), tmp_path / "dist" / "scenarios" / "sample.yml")
    shutil.copytree(ROOT / "tests" / "data" / "mqadmin" / "v4_9", tmp_path / "captures" / "2026-11-20")
    shutil.copytree(sample_run, tmp_path / "out")
    monkeypatch.chdir(tmp_path)
    ran = [args for args in _examples() if _runnable(args)]
    assert [a[0] for a in ran] == ["simulate", "report", "import-mqadmin", "validate", "simulate", "validate"]
    for args in ran:
        # /tmp/... becomes a directory of this test's: nothing written outside it
        args = [str(tmp_path / a[1:]) if a.startswith("/tmp/") else a for a in args]
        assert main(args) == 0, args
    assert (tmp_path / "out" / "report.html").exists() and (tmp_path / "run" / "validation").exists()
