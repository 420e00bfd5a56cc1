"""Command line: `rmqsim demo | simulate | report | generate | import-mqadmin | validate`.

Every command and flag is in docs/CONTRACT.md, section 5.

Exit codes: 0 success, 2 bad input (the message names table, column and problem), 1 otherwise.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import math
import os
import sys
from collections.abc import Sequence

from rmqsim.errors import InputError

# The commands import what they need when they run: --help stays quick.
log = logging.getLogger("rmqsim")


def _spark_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--master", help="Spark master URL (default: spark-submit's, else local[*])")
    p.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting; repeatable"
    )
    p.add_argument(
        "--profile",
        help="Spark profile: a name in conf/spark/ or a YAML path (default: local; none under "
        "spark-submit, whose --properties-file and --conf rule, or through Spark Connect)",
    )
    p.add_argument(
        "--remote",
        metavar="sc://HOST:PORT",
        help="run through the Spark Connect server there (default: the SPARK_REMOTE environment "
        "variable); paths are then the server's",
    )


def _output_args(p: argparse.ArgumentParser) -> None:
    """What a run prints: tables for a person (default), nothing for a scheduled run, JSON for a
    script; and how much it logs (to stderr)."""
    shown = p.add_mutually_exclusive_group()
    shown.add_argument("--quiet", action="store_true", help="print nothing but errors (scheduled runs)")
    shown.add_argument(
        "--json", action="store_true", help="print the run's results as one JSON document (scripts)"
    )
    shown.add_argument(
        "--wide",
        action="store_true",
        help="print every table whole, a table per scenario, as wide as it is; by default the "
        "findings, then tables at most 100 columns wide",
    )
    p.add_argument("--verbose", action="store_true", help="log at DEBUG: Spark's resolved configuration")


def _log_level(args: argparse.Namespace) -> int:
    if getattr(args, "verbose", False):
        return logging.DEBUG
    if getattr(args, "quiet", False) or getattr(args, "json", False):
        return logging.WARNING
    return logging.INFO


def _session(args: argparse.Namespace):
    """The SparkSession the Spark arguments ask for: Spark Connect, spark-submit's, or local."""
    from rmqsim import config, session
    from rmqsim.errors import InputError

    remote = _remote(args)
    if remote and args.master:
        raise InputError("arguments", "--master", "give --master or --remote (SPARK_REMOTE), not both")
    preset = session.under_spark_submit() or remote
    profile = config.load_profile(args.profile or (None if preset else "local"))
    conf = {**profile.conf, **config.parse_conf(args.conf)}
    return session.build_session(master=args.master or profile.master, conf=conf, remote=remote)


def _remote(args: argparse.Namespace) -> str | None:
    from rmqsim.session import remote_url

    return remote_url(getattr(args, "remote", None))


def _seconds(text: str) -> float:
    """A positive, finite number of seconds (--drain-target): exit code 2 otherwise."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text}")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rmqsim",
        description=__doc__.splitlines()[0],
        epilog="Tables, columns, scenario steps and commands: docs/CONTRACT.md.",
    )
    sub = p.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="every strategy and the bundled scenarios on the sample snapshot")
    demo.add_argument("--out", default="out", help="output directory (default: ./out)")
    _output_args(demo)
    _spark_args(demo)

    sim = sub.add_parser("simulate", help="simulate a snapshot")
    sim.add_argument("--snapshot", required=True, help="snapshot directory (docs/CONTRACT.md, section 1)")
    sim.add_argument("--out", required=True, help="output directory (docs/CONTRACT.md, section 4)")
    sim.add_argument("--scenarios", help="scenarios YAML file (docs/CONTRACT.md, section 3)")
    sim.add_argument(
        "--strategies",
        default="configured",
        help="configured (each group's own), all, or a comma-separated list",
    )
    sim.add_argument(
        "--mode",
        default="overwrite",
        choices=["overwrite", "error"],
        help="what to do when --out exists (default: overwrite)",
    )
    sim.add_argument(
        "--partitions",
        type=_positive_int,
        help="Python tasks of the allocation stage (default: 2 per core, 1 per core for a chunk of"
        " scenarios or sweep elements, fewer for a small fleet)",
    )
    sim.add_argument(
        "--drain-target",
        type=_seconds,
        default=3600.0,
        metavar="SECONDS",
        help="how soon a backlog should drain: clients_needed counts what that takes (default 3600)",
    )
    sim.add_argument(
        "--full-phases",
        action="store_true",
        help="write every phase whole (default: a later phase writes only what its steps touched)",
    )
    sim.add_argument(
        "--sweep-detail",
        type=int,
        default=3,
        metavar="K",
        help="the worst K elements of each sweep whose phases the other tables hold (default 3)",
    )
    _output_args(sim)
    _spark_args(sim)

    rep = sub.add_parser(
        "report", help="PNG charts of a run's movement and load, in RUN/charts/ (and RUN/report.html)"
    )
    rep.add_argument("--run", required=True, help="a simulate output directory")
    rep.add_argument(
        "--group", help="the group whose per-client load to chart (default: the one that moved most)"
    )
    rep.add_argument(
        "--scenario", help="the scenario to chart the group in (default: the one that moved most)"
    )
    rep.add_argument(
        "--html",
        action="store_true",
        help="also write RUN/report.html: the tables and charts in one self-contained page",
    )

    gen = sub.add_parser("generate", help="write a synthetic fleet snapshot")
    gen.add_argument("--out", required=True)
    gen.add_argument("--seed", type=int, default=1)
    gen.add_argument(
        "--assignments",
        type=int,
        default=100_000,
        help="about how many queue assignments (one per queue per subscribing group)",
    )
    gen.add_argument("--brokers", type=int, default=8)
    gen.add_argument("--rooms", type=int, default=2)
    gen.add_argument("--mean-clients", type=float, default=8.0, help="mean clients per group")
    gen.add_argument(
        "--producers",
        action="store_true",
        help="also producers on every topic (Java 5.x and 4.x with fault tolerance, Go, HASH with keys) "
        "and a slow broker in eight (docs/CONTRACT.md, section 2c)",
    )
    gen.add_argument(
        "--capacities",
        action="store_true",
        help="producers as --producers gives, and a capacity for every client process (docs/CONTRACT.md, "
        "section 2d)",
    )
    gen.add_argument(
        "--room-broker-names",
        action="store_true",
        help='name brokers "room@broker-NN", as MACHINE_ROOM fleets do',
    )
    gen.add_argument(
        "--queue-config",
        action="store_true",
        help="write a CONFIG list for every client (queue_config table)",
    )

    def _range(text: str) -> tuple[int, int]:
        low, colon, high = text.partition(":")
        try:
            bounds = (int(low), int(high if colon else low))
        except ValueError:
            bounds = (0, 0)
        if not 1 <= bounds[0] <= bounds[1]:
            raise argparse.ArgumentTypeError(
                f"expected MIN:MAX (or N), whole numbers with 1 <= MIN <= MAX, got {text!r}"
            )
        return bounds

    shape = gen.add_argument_group(
        "fleet shape",
        "Each MIN:MAX range (N for exactly N) draws a value n with weight 1/n, small commoner than "
        "big; an option left out keeps the default spread. The many-small-groups fleet: "
        "--queues-per-topic 8:96 --brokers-per-topic 2:6 --groups-per-topic 1:3 --clients-per-group 2:12",
    )
    shape.add_argument(
        "--queues-per-topic",
        type=_range,
        metavar="MIN:MAX",
        help="readable queues of each topic in all, split evenly over its brokers "
        "(default: 2 to 64 per broker)",
    )
    shape.add_argument(
        "--brokers-per-topic",
        type=_range,
        metavar="MIN:MAX",
        help="distinct brokers each topic is on, at most --brokers (default: 1 to 4)",
    )
    shape.add_argument(
        "--groups-per-topic",
        type=_range,
        metavar="MIN:MAX",
        help="groups reading each topic, each of them reading only that topic "
        "(default: groups read 1 to 3 topics, popular topics many groups)",
    )
    shape.add_argument(
        "--clients-per-group",
        type=_range,
        metavar="MIN:MAX",
        help="clients of each group, instead of --mean-clients",
    )

    imp = sub.add_parser(
        "import-mqadmin", help="turn saved mqadmin outputs into a snapshot, with the observed assignment"
    )
    imp.add_argument(
        "--in",
        dest="in_dir",
        required=True,
        help="clusterList.txt, topicRoute/<topic>.txt, consumerConnection/<group>.txt, "
        "consumerProgress/<group>.txt; optionally statsAll.txt, "
        "producerConnection/<producer_group>/<topic>.txt, topicStatus/<topic>.txt "
        "(docs/snapshots.md: Snapshots from a real cluster)",
    )
    imp.add_argument("--out", required=True, help="the snapshot directory to write")
    imp.add_argument(
        "--strategy",
        action="append",
        default=[],
        metavar="[GROUP=]NAME",
        help="a group's strategy (mqadmin does not show it; default AVG); a bare NAME for every "
        "other group; repeatable",
    )
    imp.add_argument(
        "--rebalance",
        action="append",
        default=[],
        metavar="[GROUP=]client|broker|proxy",
        help="who balances a group (groups.rebalance; mqadmin does not show it; default client): "
        "broker for PushConsumers with clientRebalance off; a bare value for every other group; repeatable",
    )
    imp.add_argument(
        "--request-mode",
        action="append",
        default=[],
        metavar="[GROUP=]PULL|POP[:N]",
        help="how a broker-balanced group asks for its queues (groups.request_mode; default PULL); "
        "POP:N also sets groups.pop_share_queue_num to N; a bare value for every other group; repeatable",
    )
    imp.add_argument(
        "--selector",
        action="append",
        default=[],
        metavar="[PRODUCER_GROUP=]HASH|ROUND_ROBIN",
        help="how a producer group picks its queues (producers.selector; mqadmin does not show it; "
        "default ROUND_ROBIN); a bare value for every other producer group; repeatable",
    )
    imp.add_argument(
        "--send-latency-fault",
        action="append",
        default=[],
        metavar="[PRODUCER_GROUP=]true|false",
        help="whether a producer group's Java clients avoid slow brokers "
        "(producers.send_latency_fault_enable; mqadmin does not show it; default false); a bare value "
        "for every other producer group; repeatable",
    )

    val = sub.add_parser(
        "validate",
        help="compare each group's simulated assignment with the one the cluster showed, and the "
        "modelled inflow with the measured one",
    )
    val.add_argument(
        "--snapshot",
        required=True,
        help="a snapshot with observed_assignments, or traffic measurements (offsets.in_tps, "
        "observed_traffic, queue_status), or both",
    )
    val.add_argument("--run", help="a simulate output (--strategies configured) to take the simulation from")
    val.add_argument(
        "--out",
        help="where validation/, validation_queues/, validation_traffic/ and validation_topics/ go "
        "(default: the --run directory, else ./out)",
    )
    _spark_args(val)
    return p


def _simulate(args: argparse.Namespace, *, snapshot: str, strategies: str) -> int:
    from rmqsim import build, config, simulate
    from rmqsim.scenarios.parse import RollingRestart

    cfg = config.SimulateConfig(
        snapshot=snapshot,
        out=args.out,
        strategies=config.parse_strategies(strategies),
        scenarios=getattr(args, "scenarios", None),
        mode=getattr(args, "mode", "overwrite"),
        partitions=getattr(args, "partitions", None),
        drain_target_s=getattr(args, "drain_target", 3600.0),
        full_phases=getattr(args, "full_phases", False),
        sweep_detail=getattr(args, "sweep_detail", 3),
    )
    from rmqsim.sink.directory import RunDirectory
    from rmqsim.snapshot.load import check_layout, is_local

    runs = build.load_scenarios(cfg)  # a bad scenarios file fails before Spark starts
    restarted = [r.name for r in runs if any(isinstance(s, RollingRestart) for s in r.steps)]
    if not _remote(args):  # through Spark Connect the paths are the server's
        check_layout(snapshot)
        RunDirectory.check_mode(args.out, cfg.mode)
    if _remote(args) or not is_local(snapshot):
        result = simulate.run(_session(args), cfg)
    else:
        from rmqsim.session import Starting

        starting = Starting(lambda: _session(args))
        ahead = [build.build_group_routes(None, cfg, deferred=True)]  # pyarrow alone, while the JVM starts
        result = simulate.run(starting.result(), cfg, ahead)
    if args.json:
        print(json.dumps(_jsonable(dataclasses.asdict(result)), indent=1, allow_nan=False))
        return 0
    if args.quiet:
        return 0
    if args.wide:
        _print_wide(result, restarted)
    else:
        _print_compact(result, {r.name: r for r in runs})
    return 0


def _print_compact(result, runs: dict) -> None:
    """The findings first, then one table per concern, none wider than 100 columns."""
    from rmqsim.reporting import compact
    from rmqsim.reporting.findings import findings, format_findings

    def label(scenario: str, phase: int) -> str:
        return runs[scenario].label(phase) if scenario in runs else ""

    found = findings(
        summary=result.summary,
        comparison=result.comparison,
        recommendation=result.recommendation,
        sweep=result.sweep,
        steps=result.steps,
        behind=result.behind,
        stranded=result.stranded,
        label=label,
    )
    blocks = [format_findings(found), compact.format_snapshot(_snapshot_rows(result))]
    if result.comparison:
        blocks.append(compact.format_scenarios(result.comparison))
    if result.sweep:
        blocks.append(compact.format_sweeps(result.sweep))
    if result.recommendation:
        blocks.append(compact.format_recommendation(result.recommendation, result.recommended_groups))
    if result.exposure:
        blocks.append(compact.format_exposure(result.exposure))
    blocks.append(compact.format_reconciliation(result.reconciliation))
    blocks.append(f"outputs in {result.out}\nevery table, and charts: rmqsim report --run OUT --html")
    print("\n\n".join(blocks))


def _snapshot_rows(result) -> list[dict]:
    """The summary's rows of phase 0, the snapshot in every scenario: the first scenario's."""
    first = min(r["scenario"] for r in result.summary)
    return [r for r in result.summary if r["scenario"] == first and r["phase"] == 0]


def _print_wide(result, restarted: list[str]) -> None:
    """Every table whole, as wide as it is: a table per scenario, each strategy a row."""
    from rmqsim.reporting import text
    from rmqsim.scenarios.parse import ELEMENT

    if result.sweep:
        print(text.format_sweep(result.sweep))
        print()
    if result.comparison:
        # Phase 0 is the snapshot in every scenario: its table once, then what each scenario changes.
        first = min(r["scenario"] for r in result.summary)
        print(
            text.format_summary(_snapshot_rows(result)).replace(
                f"scenario {first}, phase 0", "the snapshot (phase 0)"
            )
        )
        print()
        # A sweep's detailed elements are in its table above: the scenarios of the file here.
        scenarios = [r for r in result.comparison if ELEMENT not in r["scenario"]]
        print(text.format_comparison(scenarios))
        print()
        handovers = text.format_handovers(scenarios, restarted)
        if handovers:
            print(handovers)
            print()
        print(text.format_recommendation(result.recommendation, result.recommended_groups))
        if result.exposure:
            print()
            print(text.format_exposure(result.exposure))
    else:
        print(text.format_summary(result.summary))
    print()
    print(text.format_reconciliation(result.reconciliation))
    print(f"\noutputs in {result.out}")


def _jsonable(value: object) -> object:
    """``value`` with every float that JSON cannot hold (NaN, infinity) as null."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def _report(args: argparse.Namespace) -> int:
    from rmqsim.reporting import charts

    written = charts.write_charts(args.run, group=args.group, scenario=args.scenario)
    if written.moved is None:
        print(f"{args.run} has no scenario phases to compare: run simulate with --scenarios")
    else:
        print(f"moved queues per strategy: {written.moved}")
        print(f"load of group {written.group} in scenario {written.scenario}: {written.load}")
        if written.messages is not None:
            print(f"messages per client of group {written.group}: {written.messages}")
            print(f"messages stranded per scenario: {written.stranded}")
        for scenario, path in written.capacity:
            print(f"messages per client against capacity, scenario {scenario}: {path}")
    if args.html:
        from rmqsim.reporting import html

        print(f"html report: {html.write_html(args.run, written)}")
    return 0


def _generate(args: argparse.Namespace) -> int:
    from rmqsim.snapshot import synthetic, write

    fleet = synthetic.FleetSpec(
        seed=args.seed,
        assignments=args.assignments,
        brokers=args.brokers,
        rooms=args.rooms,
        mean_clients=args.mean_clients,
        room_broker_names=args.room_broker_names,
        queue_config=args.queue_config,
        queues_per_topic=args.queues_per_topic,
        brokers_per_topic=args.brokers_per_topic,
        groups_per_topic=args.groups_per_topic,
        clients_per_group=args.clients_per_group,
    )
    tables = synthetic.generate(fleet)
    if args.producers or args.capacities:
        from rmqsim.snapshot import synthetic_traffic

        tables = synthetic_traffic.with_producers(tables, args.seed)
        if args.capacities:
            tables = synthetic_traffic.with_capacities(tables, args.seed)
    counts = write.write_snapshot(tables, args.out)
    print(", ".join(f"{table}: {n} rows" for table, n in counts.items()) + f" in {args.out}")
    return 0


def _import_mqadmin(args: argparse.Namespace) -> int:
    from rmqsim.mqadmin import flags, importer

    default, by_group = flags.parse_strategies(args.strategy)
    imported = importer.import_mqadmin(
        args.in_dir,
        args.out,
        default_strategy=default,
        strategies=by_group,
        rebalance=flags.parse_rebalances(args.rebalance),
        request_mode=flags.parse_request_modes(args.request_mode),
        selector=flags.parse_selectors(args.selector),
        send_latency_fault=flags.parse_send_latency_faults(args.send_latency_fault),
    )
    print(", ".join(f"{table}: {n} rows" for table, n in imported.counts.items()) + f" in {args.out}")
    print("formats: " + "; ".join(f"{cmd} {', '.join(f)}" for cmd, f in imported.formats.items()))
    for warning in imported.warnings:
        print(f"warning: {warning}")
    return 0


def _validate(args: argparse.Namespace) -> int:
    from rmqsim.snapshot.load import check_layout
    from rmqsim.validate import run as validate

    if not _remote(args):  # through Spark Connect the paths are the server's
        check_layout(args.snapshot)  # fail on a wrong path before the JVM starts
    spark = _session(args)
    out = args.out or args.run or "out"
    result = validate.run(spark, validate.ValidateConfig(snapshot=args.snapshot, out=out, run=args.run))
    printed = []
    if "validation" in result.tables:
        printed.append(validate.format_result(result.groups))
    if result.traffic is not None:
        printed.append(validate.format_traffic(result.traffic))
    printed.extend(result.notes)
    print("\n\n".join(printed))
    what = {
        "validation": "per group",
        "validation_queues": "per queue",
        "validation_traffic": "inflow per queue",
        "validation_topics": "inflow per topic",
    }
    written = [f"{os.path.join(out, t)} ({what[t]})" for t in result.tables]
    if written:
        print(f"\noutputs in {', '.join(written[:-1])}{' and ' if len(written) > 1 else ''}{written[-1]}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    log.setLevel(_log_level(args))  # rmqsim's own; other libraries stay at INFO
    logging.getLogger("py4j").setLevel(logging.WARNING)
    if args.command in ("demo", "simulate"):
        from rmqsim.freed_memory import keep_freed_memory

        keep_freed_memory()
    try:
        if args.command == "demo":
            from rmqsim.config import sample_scenarios, sample_snapshot

            args.scenarios = str(sample_scenarios())
            return _simulate(args, snapshot=str(sample_snapshot()), strategies="all")
        if args.command == "simulate":
            return _simulate(args, snapshot=args.snapshot, strategies=args.strategies)
        if args.command == "report":
            return _report(args)
        if args.command == "import-mqadmin":
            return _import_mqadmin(args)
        if args.command == "validate":
            return _validate(args)
        return _generate(args)
    except InputError as e:
        print(f"rmqsim: bad input: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - the CLI's contract is exit code 1 with a message
        log.exception("rmqsim failed")
        print(f"rmqsim: failed: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
