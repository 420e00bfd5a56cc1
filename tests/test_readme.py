"""The README and docs/ stay true: the two set-up commands come first, every rmqsim example (README.md,
docs/*.md) parses, every YAML scenarios example goes through the real scenario parser, every
relative link resolves, and the README stays the newcomer's page: short, linking every doc."""

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
DOCS = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))
# docs/CONTRACT.md is skipped where it does not exist
YAML_DOCS = ("README.md", "docs/CONTRACT.md", *(d for d in DOCS if d != "docs/CONTRACT.md"))
EXAMPLE_DOCS = ("README.md", *DOCS)  # the rmqsim examples: the README's first, then docs/'s by name
LINKING_DOCS = ("README.md", "bench/README.md", *DOCS)


def _blocks(text: str = README) -> list[str]:
    return re.findall(r"```sh\n(.*?)```", text, flags=re.S)


def test_readme_opens_with_make_demo_and_make_test() -> None:
    first = [line.split("#")[0].strip() for line in _blocks()[0].splitlines()]
    assert first[:2] == ["make demo", "make test"]
    makefile = (Path(__file__).resolve().parent.parent / "Makefile").read_text()
    assert re.search(r"^demo:", makefile, re.M) and re.search(r"^test:", makefile, re.M)


def _examples() -> list[list[str]]:
    out = []
    for block in (b for doc in EXAMPLE_DOCS for b in _blocks((ROOT / doc).read_text())):
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
    """Examples whose paths are this machine's: not hdfs://, s3a://, Spark Connect or /shared; and
    not the demo, which conftest.py's demo_run runs (sample_run, its output, is `out` below)."""
    return args[0] != "demo" and not any(a.startswith(("hdfs:", "s3a:", "sc:", "/shared")) for a in args)


def test_the_readme_examples_that_can_run_here_run(spark, sample_run, tmp_path, monkeypatch) -> None:
    """Each example with local paths, run as written (in this session's Spark) in a directory
    holding what it names: the sample, dist/'s scenarios, a capture, the demo's run as `out`, and
    the README's scenarios file as `scenarios.yml`."""
    import shutil

    from rmqsim.cli import main
    from rmqsim.config import sample_scenarios, sample_snapshot

    (tmp_path / "conf").mkdir()
    shutil.copytree(sample_snapshot(), tmp_path / "conf" / "sample_snapshot")
    (tmp_path / "dist" / "scenarios").mkdir(parents=True)
    shutil.copy(sample_scenarios(), tmp_path / "dist" / "scenarios" / "sample.yml")
    shutil.copytree(ROOT / "tests" / "data" / "mqadmin" / "v4_9", tmp_path / "captures" / "2026-11-20")
    shutil.copytree(sample_run, tmp_path / "out")
    (tmp_path / "scenarios.yml").write_text(_scenario_files(README)[0])
    monkeypatch.chdir(tmp_path)
    ran = [args for args in _examples() if _runnable(args)]
    assert [a[0] for a in ran] == [
        *("report", "import-mqadmin", "simulate", "report"),  # README.md
        "report",  # docs/outputs.md
        "simulate",  # docs/running.md: spark-submit's
        *("import-mqadmin", "validate", "simulate", "validate"),  # docs/snapshots.md
    ]
    # An example shown twice (README.md's report, again in docs/outputs.md) runs once.
    for args in map(list, dict.fromkeys(map(tuple, ran))):
        # /tmp/... becomes a directory of this test's: nothing written outside it
        args = [str(tmp_path / a[1:]) if a.startswith("/tmp/") else a for a in args]
        assert main(args) == 0, args
    assert (tmp_path / "out" / "report.html").exists() and (tmp_path / "run" / "validation").exists()


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but `-` dropped, spaces to `-`."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _outside_fences(text: str) -> str:
    """The text with fenced blocks taken out: a `#` line in one is no heading, a `[x](y)` no link."""
    return re.sub(r"^([ \t]*)(```|~~~).*?^\1\2[^\n]*$", "", text, flags=re.S | re.M)


def _outside_code(text: str) -> str:
    """The text with fenced blocks and inline code taken out: what they hold is not markdown."""
    return re.sub(r"`[^`\n]*`", "", _outside_fences(text))


def _anchors(path: Path) -> set[str]:
    """Every heading's anchor, a repeated one numbered as GitHub does (`name`, `name-1`, ...)."""
    seen: dict[str, int] = {}
    for heading in re.findall(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", _outside_fences(path.read_text()), flags=re.M):
        slug = _slug(heading)
        seen[slug] = seen.get(slug, -1) + 1
        if seen[slug]:
            seen[f"{slug}-{seen[slug]}"] = 0
    return set(seen)


def _broken_links(path: Path) -> list[str]:
    """The relative links of a markdown file whose file is missing, or whose #anchor names no heading
    of the .md file it points into (the file itself for a bare #anchor)."""
    broken = []
    for target in re.findall(r"\[[^\]\n]*\]\(([^)\s]+)\)", _outside_code(path.read_text())):
        if re.match(r"(https?:|mailto:)", target):
            continue
        file, _, anchor = target.partition("#")
        linked = (path.parent / file).resolve() if file else path
        if not linked.exists():
            broken.append(f"{target}: no {file}")
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            broken.append(f"{target}: no heading #{anchor} in {linked.name}")
    return broken


@pytest.mark.parametrize("doc", LINKING_DOCS)
def test_every_relative_link_resolves(doc: str) -> None:
    assert _broken_links(ROOT / doc) == []


def test_a_broken_link_is_found(tmp_path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A title: `x`\n\n## Twice\n\n## Twice\n")
    (tmp_path / "README.md").write_text(
        "[ok](docs/a.md#a-title-x) [ok](docs/a.md#twice-1) [ok](#) [web](https://x.org/none.md)\n"
        "`[code](docs/none.md)`\n\n```sh\n[code](docs/none.md)\n```\n"
        "[gone](docs/none.md) [bad](docs/a.md#nowhere) [bad](docs/a.md#twice-2)\n"
    )
    assert _broken_links(tmp_path / "README.md") == [
        "docs/none.md: no docs/none.md",
        "docs/a.md#nowhere: no heading #nowhere in a.md",
        "docs/a.md#twice-2: no heading #twice-2 in a.md",
    ]


def test_readme_is_the_newcomer_s_page() -> None:
    assert len(README.splitlines()) <= 300
    # bench/README.md is the current table of every benchmark; its history stays in git
    assert len((ROOT / "bench" / "README.md").read_text().splitlines()) <= 200
    links = set(re.findall(r"\]\(([^)#\s]+)[^)]*\)", _outside_code(README)))
    assert [d for d in DOCS if d not in links] == []


def test_the_worked_example_shows_what_the_demo_prints(demo_run) -> None:
    # The README's output block is the start of what `rmqsim demo` printed, line for line.
    _, done = demo_run
    assert done.returncode == 0, done.stderr[-3000:]
    marker = "<!-- rmqsim demo's output, checked by tests/test_readme.py -->\n```text\n"
    shown = README.split(marker, 1)[1].split("\n```", 1)[0].splitlines()
    assert len(shown) > 20 and shown[0].startswith("findings")
    assert done.stdout.splitlines()[: len(shown)] == shown
