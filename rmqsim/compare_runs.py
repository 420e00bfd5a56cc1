"""Two runs' tables compared: the proof that a change left what rmqsim computes as it was, and that
both sinks write the same tables. The tests call ``compare_runs``; bench/compare_runs.py is its
command line:

    python bench/compare_runs.py OLD_RUN NEW_RUN [--float-tolerance 0] [--show 5]

Each Parquet dataset in a run directory is a table (hive partitions `scenario=.../strategy=...` are read as
strings); charts/, report.html and other files are skipped, hidden and _underscore entries ignored. Tables
are compared by schema (names, types and nullability, in order) and by rows as a multiset: row order and
part-file layout do not matter, values must be equal (null equals null, NaN equals NaN, floats exactly
unless --float-tolerance; nested values compare by their canonical JSON). A column the new code adds to a
table (a contract extension) is left out with --new-column TABLE.COLUMN. Exit 0 if every table is equal, 1 if
any differs, 2 on usage errors.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from rmqsim import phases, schemas


def visible(path: Path, root: Path) -> bool:
    # Spark's _SUCCESS and .crc files (and anything under such names) are bookkeeping, not data.
    return not any(part.startswith(("_", ".")) for part in path.relative_to(root).parts)


def data_files(path: Path) -> Iterator[Path]:
    return (f for f in path.rglob("*.parquet") if visible(f, path)) if path.is_dir() else iter(())


def read_table(path: Path) -> pa.Table | None:
    """The dataset under path (None if there is none), partition columns as strings, never inferred ints."""
    if not (files := sorted(data_files(path))):
        return None
    keys = [part.split("=", 1)[0] for part in files[0].relative_to(path).parts[:-1] if "=" in part]
    hive = ds.partitioning(pa.schema([(key, pa.string()) for key in keys]), flavor="hive")
    found = ds.dataset(
        [str(f) for f in files], format="parquet", partitioning=hive, partition_base_dir=str(path)
    )
    return found.to_table()


def schema_diff(old: pa.Schema, new: pa.Schema) -> str | None:
    def described(schema: pa.Schema) -> dict[str, str]:
        return {f.name: f"{f.type}{'' if f.nullable else ' not null'}" for f in schema}

    old_types, new_types = described(old), described(new)
    if list(old_types.items()) == list(new_types.items()):
        return None
    gone, added = [n for n in old.names if n not in new_types], [n for n in new.names if n not in old_types]
    retyped = [f"{n} {t} -> {new_types[n]}" for n, t in old_types.items() if new_types.get(n, t) != t]
    parts = [
        f"{what}: {', '.join(names)}"
        for what, names in (("only in old", gone), ("only in new", added), ("types", retyped))
        if names
    ]
    return "schema " + ("; ".join(parts) or "column order differs")


def canonical(table: pa.Table) -> pa.Table:
    """Nested columns (lists, structs, maps) as canonical JSON strings, so every column sorts and groups;
    all columns nullable (schema_diff has compared the flags), so that the rows concatenate."""
    table = table.cast(pa.schema([field.with_nullable(True) for field in table.schema]))
    for i, field in enumerate(table.schema):
        if pa.types.is_nested(field.type):
            text = [
                None if v is None else json.dumps(v, sort_keys=True, default=str)
                for v in table[i].to_pylist()
            ]
            table = table.set_column(i, field.name, pa.array(text, pa.string()))
    return table


def row_order(table: pa.Table) -> pa.Array:
    # Floats sort last, so rows equal within the tolerance still line up by their exact columns.
    names = sorted(table.column_names, key=lambda n: pa.types.is_floating(table.schema.field(n).type))
    return pc.sort_indices(table, sort_keys=[(n, "ascending") for n in names])  # nulls last


def mismatches(
    old: pa.Table, old_rows: pa.Array, new: pa.Table, new_rows: pa.Array, tol: float
) -> np.ndarray:
    """Positions i where rows old[old_rows[i]] and new[new_rows[i]] differ (null == null, NaN == NaN, floats
    within tol). Taking one column at a time keeps a single sorted copy of one column in memory."""
    differ = pa.repeat(False, len(old_rows))
    for name in old.column_names:
        a, b = old[name].take(old_rows), new[name].take(new_rows)
        same = pc.equal(a, b)
        if pa.types.is_floating(a.type):
            close = pc.less_equal(pc.abs(pc.subtract(a, b)), tol)
            same = pc.or_kleene(pc.or_kleene(same, close), pc.and_(pc.is_nan(a), pc.is_nan(b)))
        same = pc.or_(pc.fill_null(same, False), pc.and_(pc.is_null(a), pc.is_null(b)))
        differ = pc.or_(differ, pc.invert(same))
    return np.flatnonzero(differ.to_numpy(zero_copy_only=False))


def surplus(old: pa.Table, new: pa.Table) -> tuple[pa.Table, pa.Table]:
    """Rows (with multiplicity) of old missing from new, and of new missing from old: exact multiset diff."""
    side = pa.array(np.repeat([1, -1], [len(old), len(new)]))  # +1 per old copy, -1 per new copy
    both = pa.concat_tables([old, new]).append_column("__side", side)
    counts = both.group_by(old.column_names, use_threads=False).aggregate([("__side", "sum")])
    extra, rows = counts["__side_sum"].to_numpy(), counts.select(old.column_names)
    picked = [rows.take(np.repeat(np.arange(len(rows)), np.maximum(n, 0))) for n in (extra, -extra)]
    return picked[0].take(row_order(picked[0])), picked[1].take(row_order(picked[1]))


def compare(old: pa.Table, new: pa.Table, tol: float) -> tuple[str | None, pa.Table, pa.Table]:
    """None when equal, else the reason; with the rows only in old and only in new."""
    if reason := schema_diff(old.schema, new.schema):
        return reason, old.slice(0, 0), new.slice(0, 0)
    old, new = canonical(old), canonical(new)
    old_order, new_order, common = row_order(old), row_order(new), min(len(old), len(new))
    head = mismatches(old, old_order[:common], new, new_order[:common], tol)
    prefix = int(head[0]) if head.size else common
    if len(old) == len(new) == prefix:
        return None, old.slice(0, 0), new.slice(0, 0)
    # Rows matching at both ends of the sorted tables pair up; only the middle needs a multiset diff.
    tail = mismatches(old, old_order[len(old) - common :], new, new_order[len(new) - common :], tol)
    suffix = min(common - 1 - int(tail[-1]) if tail.size else common, common - prefix)
    only_old, only_new = surplus(
        old.take(old_order[prefix : len(old) - suffix]), new.take(new_order[prefix : len(new) - suffix])
    )
    return f"rows only in old: {len(only_old)}, only in new: {len(only_new)}", only_old, only_new


def report(
    name: str, old: pa.Table | None, new: pa.Table | None, args: argparse.Namespace
) -> tuple[bool, list[str]]:
    """Whether the table is equal; its result line, then example rows found in one run only."""
    if old is None or new is None:
        line = f"{name:<20}  {'-' if old is None else len(old):>9}  {'-' if new is None else len(new):>9}  "
        return False, [line + f"DIFFERENT (table only in {'old' if new is None else 'new'} run)"]
    return report_parts(name, iter([(old, new)]), args)


def report_parts(
    name: str, parts: Iterator[tuple[pa.Table, pa.Table]], args: argparse.Namespace
) -> tuple[bool, list[str]]:
    """report over a table compared a part at a time (old's part, new's part): its rows counted
    over the parts, the reasons of the parts that differ, their first example rows."""
    counts, reasons, examples = [0, 0], [], []
    for old, new in parts:
        counts[0] += len(old)
        counts[1] += len(new)
        reason, only_old, only_new = compare(old, new, args.float_tolerance)
        if reason is None:
            continue
        reasons.append(reason)
        examples += [
            f"    only in {side}: {row}"
            for side, rows in (("old", only_old), ("new", only_new))
            for row in rows.slice(0, max(args.show - len(examples) // 2, 0)).to_pylist()
        ]
    line = f"{name:<20}  {counts[0]:>9}  {counts[1]:>9}  "
    if not reasons:
        return True, [line + "equal"]
    return False, [line + f"DIFFERENT ({'; '.join(dict.fromkeys(reasons))})", *examples]


@dataclass(frozen=True)
class TableResult:
    name: str
    equal: bool
    lines: list[str]  # its result line, then example rows found in one run only


def compare_runs(
    old_run: Path,
    new_run: Path,
    *,
    float_tolerance: float = 0.0,
    show: int = 5,
    new_columns: Sequence[str] = (),
    tables: Sequence[str] | None = None,
) -> list[TableResult]:
    """Every table of either run (or ``tables``), compared. ``new_columns``: TABLE.COLUMN the new
    run adds, left out of the comparison."""
    args = argparse.Namespace(float_tolerance=float_tolerance, show=show)
    runs = (Path(old_run), Path(new_run))
    names = sorted({p.name for run in runs for p in run.iterdir() if visible(p, run)})
    found = [n for n in names if any(next(data_files(run / n), None) for run in runs)]
    touched = [read_table(run / "touched") for run in runs]
    summaries = [read_table(run / "summary") for run in runs]
    if any(t is not None for t in touched):
        found = [n for n in found if n != "touched"]  # the rebuild's input, not a table to compare

    def rebuilt(side: int, name: str, table: pa.Table | None, scenario: str | None = None) -> pa.Table | None:
        """The run's table (``scenario``'s rows alone, where given), a later phase rebuilt from
        phase 0 and touched/ where the run has it."""
        if table is None or touched[side] is None:
            return table if scenario is None else table.filter(pc.equal(table["scenario"], scenario))
        listed = touched[side].cast(schemas.arrow(schemas.TOUCHED))
        last = phases.last_phases(summaries[side])
        if name == "rejects":
            return phases.full_rejects(table, listed, last)
        if name not in phases.PHASED_TABLES:
            return table
        return phases.full(name, table, listed, last, scenarios=None if scenario is None else (scenario,))

    def by_scenario(name: str, old: pa.Table, new: pa.Table) -> Iterator[tuple[pa.Table, pa.Table]]:
        """A phased table of a run with touched/, a scenario at a time: every phase of every
        scenario rebuilt at once is the fleet once per phase (a 2M-assignment fleet's 24 plain
        scenarios: 98M assignment rows a side, more than this machine's memory)."""
        for scenario in scenarios:
            yield rebuilt(0, name, old, scenario), rebuilt(1, name, new, scenario)

    every = [phases.last_phases(summary) for summary in summaries if summary is not None]
    scenarios = sorted({s for last in every for s in last} - {phases.SNAPSHOT})

    results = []
    some_touched = any(t is not None for t in touched)
    for name in found if tables is None else tables:
        old, new = (read_table(run / name) for run in runs)
        added = [c.split(".", 1)[1] for c in new_columns if c.split(".", 1)[0] == name]
        if new is not None and added:
            new = new.drop_columns([c for c in added if c in new.column_names])
        if old is not None and new is not None and name in phases.PHASED_TABLES and some_touched:
            equal, lines = report_parts(name, by_scenario(name, old, new), args)
        else:
            equal, lines = report(name, rebuilt(0, name, old), rebuilt(1, name, new), args)
        results.append(TableResult(name, equal, lines))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old_run", type=Path)
    parser.add_argument("new_run", type=Path)
    parser.add_argument("--float-tolerance", type=float, default=0.0, help="max |old - new| of equal floats")
    parser.add_argument("--show", type=int, default=5, help="example rows to print per side")
    parser.add_argument(
        "--new-column",
        action="append",
        default=[],
        metavar="TABLE.COLUMN",
        help="a column the new run adds (a contract extension): compared without it; repeatable",
    )
    args = parser.parse_args(argv)
    if missing := [str(run) for run in (args.old_run, args.new_run) if not run.is_dir()]:
        parser.error(f"not a directory: {', '.join(missing)}")  # exits 2
    print(f"{'table':<20}  {'rows_old':>9}  {'rows_new':>9}  result")
    results = compare_runs(
        args.old_run,
        args.new_run,
        float_tolerance=args.float_tolerance,
        show=args.show,
        new_columns=args.new_column,
    )
    for result in results:
        print("\n".join(result.lines), flush=True)
    return 0 if all(r.equal for r in results) else 1


if __name__ == "__main__":  # python -m rmqsim.compare_runs OLD NEW, as bench/compare_runs.py
    raise SystemExit(main())
