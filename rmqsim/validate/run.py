"""`rmqsim validate`: the simulated assignment of each group's configured strategy beside the one
the cluster showed (the snapshot's observed_assignments), per queue and per group.

The simulation is a run's phase 0 (``--run``, a run made with ``--strategies configured``; with
another run, each group's configured strategy is picked out of it) or made here the same way.
Queues are compared where consumerProgress lists them: a queue matches when its observed holder
is one of its simulated owners (by client id, or by IP where only the IP is known) or when
neither side has one. Groups with a mismatch, or with a duplicate, unlisted or ambiguous client,
are then diagnosed on the driver (rmqsim.validate.diagnose): only their routes are collected.

Where the snapshot measured traffic (offsets.in_tps, observed_traffic, queue_status), the modelled
phase 0 inflow is compared with it too (rmqsim.validate.traffic), on the driver: the snapshot's
inflow as simulate computes it, with or without ``--run``. A snapshot with traffic measurements
and no observed_assignments gets only that comparison.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import StructField, StructType

from rmqsim import build, schemas, session
from rmqsim.config import SimulateConfig
from rmqsim.errors import InputError
from rmqsim.reporting import text
from rmqsim.sink import Sink, open_sink
from rmqsim.sink.arrow_sink import assignment_rows
from rmqsim.snapshot.load import Snapshot, load_snapshot
from rmqsim.snapshot.text import blank, normalised, row_json
from rmqsim.stage.outputs import outputs_of
from rmqsim.strategies import STRATEGIES
from rmqsim.validate import diagnose, traffic
from rmqsim.validate.traffic import Comparison

log = logging.getLogger(__name__)

KEYS = ["group", "topic", "broker_name", "queue_id"]
# The diagnosis runs on the driver, per group: the worst-matching groups first, at most this many,
# so that a fleet where every group mismatches (a wrong --strategy, say) is not collected whole.
MAX_DIAGNOSED = 500
# The routes' balancing struct with nullable fields: toArrow cannot cast a null struct whose fields
# are not nullable (its children hold nulls there), and most groups' balancing is null.
BALANCING_OR_NULL = StructType([StructField(f.name, f.dataType, True) for f in schemas.BALANCING.fields])


@dataclass(frozen=True)
class ValidateConfig:
    snapshot: str
    out: str  # receives validation/ and validation_queues/, validation_traffic/ and validation_topics/
    run: str | None = None  # a simulate output directory; None: simulate here
    sink: str | None = None  # who writes and reads the tables (rmqsim.sink): None chooses by where


@dataclass(frozen=True)
class ValidationResult:
    out: str
    groups: list[dict]  # schemas.VALIDATION rows, by group
    tables: tuple[str, ...] = ("validation", "validation_queues")  # the tables written
    traffic: Comparison | None = None  # where the snapshot measured traffic
    notes: tuple[str, ...] = ()  # what was not compared, and why


def observed_queues(spark: SparkSession, snapshot: Snapshot) -> DataFrame:
    """observed_assignments, one row per queue: rows with a blank key or a bad queue id dropped,
    and the first holder (in id order) kept where a queue is listed twice."""
    observed = snapshot.observed_assignments
    if observed is None:
        raise InputError(
            "observed_assignments", None, "the snapshot has none: import one with `rmqsim import-mqadmin`"
        )
    keyed = pc.and_(pc.fill_null(pc.greater_equal(observed["queue_id"], 0), False), _named(observed))
    observed = session.from_arrow(spark, observed.filter(keyed))
    first = F.row_number().over(Window.partitionBy(*KEYS).orderBy(F.col("client_id"), F.col("client_ip")))
    return observed.withColumn("_n", first).where("_n = 1").drop("_n")


def _named(observed: pa.Table) -> pa.Array:
    """Rows whose group, topic and broker_name are not blank (as the snapshot's checks have it)."""
    blanks = [blank(observed[c]) for c in ("group", "topic", "broker_name")]
    return pc.invert(pc.or_(pc.or_(blanks[0], blanks[1]), blanks[2]))


def configured_strategies(spark: SparkSession, snapshot: Snapshot) -> DataFrame:
    """(group, strategy): each group's configured strategy, normalised (AVG where none); of a
    group's repeated rows, the first in JSON order, as the snapshot's checks keep it."""
    groups = snapshot.groups
    ordered = groups.append_column("_json", row_json(groups)).sort_by(
        [("group", "ascending"), ("_json", "ascending")]
    )
    keep_null = pc.ScalarAggregateOptions(skip_nulls=False)
    first = ordered.group_by("group", use_threads=False).aggregate([("strategy", "first", keep_null)])
    strategy = normalised(pc.coalesce(first["strategy_first"], "AVG"))
    return session.from_arrow(spark, pa.table({"group": first["group"], "strategy": strategy}))


def built_here(spark: SparkSession, config: ValidateConfig) -> build.Staged:
    """The snapshot's routes with every strategy's parameters, and its traffic, as simulate
    builds them (on the driver)."""
    sim = SimulateConfig(snapshot=config.snapshot, out=config.out, strategies=tuple(STRATEGIES))
    return build.build_group_routes(spark, sim)


def group_routes(spark: SparkSession, built: build.Staged, groups: DataFrame) -> DataFrame:
    """Phase 0 routes of the observed groups: what both the configured simulation and the
    diagnosis of a mismatch run on."""
    routes_here = (
        session.from_arrow(spark, built.group_routes, schemas.GROUP_ROUTES)
        .where((F.col("phase") == 0) & (F.col("scenario") == build.BASELINE))
        .join(groups, "group", "left_semi")
    )
    return routes_here


def simulated_here(spark: SparkSession, observed_routes: DataFrame, strategies: DataFrame) -> DataFrame:
    """Phase 0 assignments of each group's configured strategy, as `simulate --strategies
    configured` computes them (a group whose strategy rmqsim does not know is not simulated):
    the observed groups' routes are few, so the driver runs the stage over them."""
    configured = F.coalesce(F.col("_configured"), F.lit("AVG"))
    routes = (
        observed_routes.join(strategies.withColumnRenamed("strategy", "_configured"), "group", "left")
        .where(configured.isin(list(STRATEGIES)))
        .withColumns(
            {
                "strategies": F.array(configured),
                "skipped": F.array().cast(schemas.GROUP_ROUTES["skipped"].dataType),
                "compare": F.lit(False),
            }
        )
        .select(*schemas.GROUP_ROUTES.fieldNames())
        .withColumn("balancing", F.col("balancing").cast(BALANCING_OR_NULL))
        .orderBy("scenario", "group", "phase", "topic")  # every group's rows together
        .toArrow()
    )
    lists = [
        batch for out in outputs_of(routes.to_batches(), ("assignments",)) for batch in out["assignments"]
    ]
    assigned = pa.concat_tables([assignment_rows(b) for b in lists]) if lists else _no_assignments()
    return session.from_arrow(spark, assigned.select([*KEYS, "client_id"]).cast(_KEYS_AND_CLIENT))


_KEYS_AND_CLIENT = pa.schema([schemas.arrow(schemas.ASSIGNMENTS).field(c) for c in (*KEYS, "client_id")])


def _no_assignments() -> pa.Table:
    return schemas.arrow(schemas.ASSIGNMENTS).empty_table()


def simulated_in_run(
    spark: SparkSession, run: str, strategies: DataFrame, sink: str | None = None
) -> DataFrame:
    """A run's phase 0 assignments of each group's configured strategy."""
    path = os.path.join(run, "assignments")
    if not os.path.isdir(path) and "://" not in run:
        raise InputError("arguments", "--run", f"{path} does not exist: is {run} a simulate output?")
    phase0 = open_sink(spark, run, staged=False, kind=sink).read(
        "assignments", ["scenario", "strategy", *KEYS, "client_id"], where={"phase": 0}
    )
    assignments = session.from_arrow(spark, phase0)
    first = assignments.agg(F.min("scenario")).first()[0]  # phase 0 is the snapshot in every scenario
    return (
        assignments.where(F.col("scenario") == first)
        .join(strategies.withColumnRenamed("strategy", "_configured"), "group", "left")
        .where(F.col("strategy") == F.coalesce(F.col("_configured"), F.lit("AVG")))
        .select(*KEYS, "client_id")
    )


def compare(observed: DataFrame, simulated: DataFrame) -> DataFrame:
    """schemas.VALIDATION_QUEUES: every observed queue and every simulated one of the observed
    (group, topic) pairs, with the observed holder, the simulated owners and whether they match."""
    pairs = observed.select("group", "topic").distinct()
    owners = (
        simulated.join(pairs, ["group", "topic"], "left_semi")
        .groupBy(*KEYS)
        .agg(F.array_sort(F.collect_set("client_id")).alias("simulated_client_ids"))
    )
    seen = observed.select(
        *KEYS,
        F.col("client_id").alias("observed_client_id"),
        F.col("client_ip").alias("observed_client_ip"),
        F.lit(True).alias("in_progress"),
    )
    sims = F.coalesce(F.col("simulated_client_ids"), F.array().cast("array<string>"))
    holder_id, holder_ip = F.col("observed_client_id"), F.col("observed_client_ip")
    matched = (
        F.when(~F.col("in_progress"), F.lit(False))
        .when(holder_id.isNotNull(), F.array_contains(sims, holder_id))
        .when(holder_ip.isNotNull(), F.exists(sims, lambda s: F.substring_index(s, "@", 1) == holder_ip))
        .otherwise(F.size(sims) == 0)
    )
    return (
        seen.join(owners, KEYS, "full_outer")
        .withColumn("in_progress", F.coalesce(F.col("in_progress"), F.lit(False)))
        .select(
            *schemas.VALIDATION_QUEUES.fieldNames()[:6],
            sims.alias("simulated_client_ids"),
            "in_progress",
            matched.alias("matched"),
        )
        .select(*schemas.VALIDATION_QUEUES.fieldNames())
    )


def per_group(spark: SparkSession, snapshot: Snapshot, queues: DataFrame, strategies: DataFrame) -> DataFrame:
    """One row per observed group: the counts of schemas.VALIDATION, its configured strategy, and
    what makes it worth a look on the driver: holders known by IP only (unlisted or shared
    IPs), and client ids listed twice."""
    twice = (
        session.from_arrow(spark, snapshot.consumers.select(["group", "topic", "client_id"]))
        .groupBy("group", "topic", "client_id")
        .count()
        .where("count > 1")
        .groupBy("group")
        .agg(F.lit(True).alias("listed_twice"))
    )
    by_ip = F.col("observed_client_id").isNull() & F.col("observed_client_ip").isNotNull()
    return (
        queues.groupBy("group")
        .agg(
            F.countDistinct(F.when(F.col("in_progress"), F.col("topic"))).alias("topics"),
            F.sum(F.col("in_progress").cast("long")).alias("queues_compared"),
            F.sum((F.col("in_progress") & F.col("matched")).cast("long")).alias("matched"),
            F.sum((~F.col("in_progress")).cast("long")).alias("queues_not_in_progress"),
            F.max(F.col("in_progress") & by_ip).alias("by_ip"),
        )
        .join(twice, "group", "left")
        .join(strategies, "group", "left")
    )


def _cases(
    observed_routes: DataFrame, queues: DataFrame, groups: list[str], strategy: dict[str, str]
) -> list[diagnose.GroupCase]:
    """The flagged groups' routes (of the topics observed) and observed holders, on the driver."""
    observed_topics = queues.where(F.col("in_progress")).select("group", "topic").distinct()
    flagged = (
        observed_routes.where(F.col("group").isin(groups))
        .join(observed_topics, ["group", "topic"], "left_semi")
        .withColumn("balancing", F.col("balancing").cast(BALANCING_OR_NULL))
    )
    by_group: dict[str, list[dict]] = {g: [] for g in groups}
    for row in flagged.toArrow().to_pylist():
        by_group[row["group"]].append(row)
    observed: dict[str, dict] = {g: {} for g in groups}
    for r in queues.where(F.col("in_progress") & F.col("group").isin(groups)).collect():
        observed[r["group"]][(r["topic"], r["broker_name"], r["queue_id"])] = diagnose.Holder(
            r["observed_client_id"], r["observed_client_ip"]
        )
    return [diagnose.GroupCase(g, strategy.get(g, "AVG"), by_group[g], observed[g]) for g in groups]


def run(spark: SparkSession, config: ValidateConfig) -> ValidationResult:
    log.info("validate: snapshot=%s run=%s out=%s", config.snapshot, config.run, config.out)
    snapshot = load_snapshot(spark, config.snapshot)  # checks the layout of a local snapshot
    measured = traffic.has_observations(snapshot.offsets, snapshot.observed_traffic, snapshot.queue_status)
    if snapshot.observed_assignments is None and not measured:
        raise InputError(
            "observed_assignments",
            None,
            "the snapshot has none, nor any traffic measurement (offsets.in_tps, observed_traffic, "
            "queue_status): import one with `rmqsim import-mqadmin`",
        )
    sink: Sink = open_sink(spark, config.out, staged=False, kind=config.sink)  # beside a run's tables
    built = built_here(spark, config)
    tables: list[str] = []
    groups: list[dict] = []
    if snapshot.observed_assignments is not None:
        groups = compare_assignments(spark, config, sink, snapshot, built)
        tables += ["validation", "validation_queues"]
    compared, notes = None, ()
    if measured:
        compared = compare_traffic(built)
        if compared is None:
            notes = (NOT_MODELLED,)
        else:
            sink.write("validation_traffic", compared.queues)
            sink.write("validation_topics", compared.topics)
            tables += ["validation_traffic", "validation_topics"]
    log.info("validate: wrote %s", config.out)
    return ValidationResult(config.out, groups, tuple(tables), compared, notes)


NOT_MODELLED = (
    "traffic: not compared: the snapshot has traffic measurements but neither producers nor "
    "offsets.in_tps, so the model sends nothing"
)


def compare_traffic(built: build.Staged) -> Comparison | None:
    """The snapshot's modelled inflow (phase 0 of the baseline) beside its measurements; None
    where the model has no traffic (no producers, no in_tps)."""
    if built.traffic is None:
        return None
    rows = built.traffic.queue_traffic.cast(schemas.arrow(schemas.QUEUE_TRAFFIC))  # names decoded
    phase0 = rows.filter(pc.and_(pc.equal(rows["scenario"], build.BASELINE), pc.equal(rows["phase"], 0)))
    checked = built.checked
    return traffic.compare(
        phase0,
        topics=checked.topic_queues["topic"],
        brokers=checked.brokers,
        producers=checked.producers,
        offsets=checked.offsets,
        observed_traffic=checked.observed_traffic,
        queue_status=checked.queue_status,
    )


def compare_assignments(
    spark: SparkSession, config: ValidateConfig, sink: Sink, snapshot: Snapshot, built: build.Staged
) -> list[dict]:
    """validation_queues/ and validation/ written; the latter's rows, by group."""
    observed = observed_queues(spark, snapshot)
    groups = observed.select("group").distinct()
    strategies = configured_strategies(spark, snapshot)
    # Small (one row per observed (topic, group)), and read twice: by the simulation and the diagnosis.
    observed_routes = group_routes(spark, built, groups)
    observed_routes = observed_routes.persist()
    try:
        simulated = (
            simulated_in_run(spark, config.run, strategies, config.sink)
            if config.run
            else simulated_here(spark, observed_routes, strategies)
        )
        sink.write("validation_queues", compare(observed, simulated).toArrow())
        queues = session.from_arrow(spark, sink.read("validation_queues"), schemas.VALIDATION_QUEUES)
        counts = sorted(per_group(spark, snapshot, queues, strategies).collect(), key=lambda r: r["group"])
        configured = {r["group"]: r["strategy"] or "AVG" for r in counts}
        flagged = [
            r["group"]
            for r in sorted(counts, key=lambda r: (r["matched"] / max(r["queues_compared"], 1), r["group"]))
            if r["matched"] < r["queues_compared"] or r["by_ip"] or r["listed_twice"]
        ]
        if len(flagged) > MAX_DIAGNOSED:
            log.warning(
                "validate: %d groups to diagnose; the %d worst-matching are, the rest report no cause",
                len(flagged),
                MAX_DIAGNOSED,
            )
            flagged = flagged[:MAX_DIAGNOSED]
        cases = _cases(observed_routes, queues, flagged, configured) if flagged else []
        found = {case.group: diagnose.diagnose(case) for case in cases}
    finally:
        observed_routes.unpersist()
    out_rows = []
    for r in counts:
        why = found.get(r["group"], [])
        out_rows.append(
            {
                "group": r["group"],
                "strategy": configured[r["group"]],
                "topics": r["topics"],
                "queues_compared": r["queues_compared"],
                "matched": r["matched"],
                "match_rate": r["matched"] / r["queues_compared"] if r["queues_compared"] else None,
                "queues_not_in_progress": r["queues_not_in_progress"],
                "causes": [c.code for c in why],
                "details": [c.detail for c in why],
            }
        )
    sink.write("validation", pa.Table.from_pylist(out_rows, schema=schemas.arrow(schemas.VALIDATION)))
    return out_rows


COLUMNS = (
    ("group", "group"),
    ("strategy", "strategy"),
    ("queues_compared", "queues"),
    ("matched", "matched"),
    ("match", "match rate"),
    ("cause_codes", "causes"),
)


def format_result(rows: list[dict]) -> str:
    """The per-group table `rmqsim validate` prints, then each cause in a sentence."""
    shown = [
        {
            **r,
            "match": None if r["match_rate"] is None else f"{r['match_rate']:.1%}",
            "cause_codes": ", ".join(dict.fromkeys(r["causes"])) or None,
        }
        for r in rows
    ]
    lines = [text.format_table(shown, COLUMNS)]
    for r in rows:
        lines.extend(f"{r['group']}: {code}: {detail}" for code, detail in zip(r["causes"], r["details"]))
    return "\n".join(lines)


WORST = 5  # the topics and the queues that differ most, printed
QUEUE_COLUMNS = (
    ("topic", "topic"),
    ("broker_name", "broker"),
    ("queue_id", "queue"),
    ("modelled_msgs_per_s", "modelled msgs/s"),
    ("observed_msgs_per_s", "observed msgs/s"),
    ("difference", "difference"),
    ("cause", "cause"),
)
TOPIC_COLUMNS = (
    ("topic", "topic"),
    ("rate_source", "rate from"),
    ("modelled_msgs_per_s", "modelled msgs/s"),
    ("observed_msgs_per_s", "observed msgs/s"),
    ("observed_from", "observed from"),
    ("difference", "difference"),
    ("cause", "cause"),
)
CAUSE_COLUMNS = (("cause", "cause"), ("queues", "queues"), ("topics", "topics"))


def format_traffic(compared: Comparison) -> str:
    """What `rmqsim validate` prints of the traffic comparison: how many queues and topics were
    measured and differ, the causes with what each means, then those that differ most."""
    queues, topics = compared.queues, compared.topics
    odd_queues, odd_topics = _differing(queues), _differing(topics)
    lines = [
        f"traffic, phase 0: queues {queues.num_rows}, measured {_measured(queues)}, differing "
        f"{odd_queues.num_rows}; topics {topics.num_rows}, measured {_measured(topics)}, differing "
        f"{odd_topics.num_rows} (agreeing: within {traffic.ABSOLUTE_TOLERANCE:g} msg/s + "
        f"{traffic.RELATIVE_TOLERANCE:.0%} of the topic's mean queue rate, or of its total)"
    ]
    per_queue, per_topic = _counts(odd_queues), _counts(odd_topics)
    found = [c for c in traffic.CAUSES if c in per_queue or c in per_topic]
    if found:
        counted = [{"cause": c, "queues": per_queue.get(c, 0), "topics": per_topic.get(c, 0)} for c in found]
        lines += ["", text.format_table(counted, CAUSE_COLUMNS)]
        lines += [f"{c}: {traffic.CAUSES[c]}" for c in found]
    if odd_topics.num_rows:
        lines += [
            "",
            "topics whose totals differ most:",
            text.format_table(_worst(odd_topics), TOPIC_COLUMNS),
        ]
    if odd_queues.num_rows:
        lines += ["", "queues that differ most:", text.format_table(_worst(odd_queues), QUEUE_COLUMNS)]
    return "\n".join(lines)


def _measured(table: pa.Table) -> int:
    return table.num_rows - table["observed_msgs_per_s"].null_count


def _differing(table: pa.Table) -> pa.Table:
    """The rows with a cause: those that differ."""
    return table.filter(pc.is_valid(table["cause"]))


def _counts(table: pa.Table) -> dict[str, int]:
    counted = pc.value_counts(table["cause"])
    return dict(zip(counted.field("values").to_pylist(), counted.field("counts").to_pylist()))


def _worst(table: pa.Table) -> list[dict]:
    """The WORST rows with the largest difference, largest first (ties in table order: a stable sort)."""
    ranked = table.append_column("_gap", pc.abs(table["difference"])).sort_by([("_gap", "descending")])
    return ranked.slice(0, WORST).to_pylist()
