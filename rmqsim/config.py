"""Typed configuration: the run's arguments and Spark profiles (flat spark.* keys from conf/spark/)."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from rmqsim.errors import InputError
from rmqsim.strategies import STRATEGIES


def conf_dir() -> Path:
    """conf/ of this checkout, or RMQSIM_CONF_DIR (for a packaged job shipped with --files)."""
    env = os.environ.get("RMQSIM_CONF_DIR")
    return Path(env) if env else Path(__file__).resolve().parent.parent / "conf"


def sample_snapshot() -> Path:
    return conf_dir() / "sample_snapshot"


def sample_scenarios() -> Path:
    return conf_dir() / "scenarios" / "sample.yml"


@dataclass(frozen=True)
class SparkProfile:
    name: str
    master: str | None = None
    conf: Mapping[str, str] = field(default_factory=dict)


def load_profile(name_or_path: str | None) -> SparkProfile:
    """A Spark profile by name (conf/spark/NAME.yml) or path: ``master`` and ``conf`` (spark.* keys);
    None: no profile (the settings spark-submit was given)."""
    if name_or_path is None:
        return SparkProfile("none")
    path = Path(name_or_path)
    if not path.suffix:
        path = conf_dir() / "spark" / f"{name_or_path}.yml"
    if not path.exists():
        raise InputError("arguments", "--profile", f"no Spark profile at {path}")
    data = yaml.safe_load(path.read_text()) or {}
    conf = data.get("conf") or {}
    bad = [k for k in conf if not str(k).startswith("spark.")]
    if bad:
        raise InputError(str(path), "conf", f"keys must be flat spark.* settings, got {bad}")
    return SparkProfile(path.stem, data.get("master"), {str(k): _spark_value(v) for k, v in conf.items()})


def _spark_value(value: object) -> str:
    # YAML's true/false arrive as bools; Spark settings spell them in lower case.
    return str(value).lower() if isinstance(value, bool) else str(value)


def parse_conf(pairs: Sequence[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InputError("arguments", "--conf", f"expected key=value, got {pair!r}")
        out[key.strip()] = value.strip()
    return out


def parse_strategies(text: str) -> tuple[str, ...] | None:
    """``configured`` (None: each group's own), ``all``, or a comma-separated list of names."""
    if text == "configured":
        return None
    if text == "all":
        return tuple(STRATEGIES)
    names = tuple(dict.fromkeys(n.strip().upper() for n in text.split(",") if n.strip()))
    unknown = [n for n in names if n not in STRATEGIES]
    if unknown or not names:
        raise InputError(
            "arguments",
            "--strategies",
            f"unknown or unavailable {unknown or text!r}; "
            f"choose configured, all or from {', '.join(STRATEGIES)}",
        )
    return names


@dataclass(frozen=True)
class SimulateConfig:
    snapshot: str
    out: str
    strategies: tuple[str, ...] | None = None  # None: each group's configured strategy
    scenarios: str | None = None
    mode: str = "overwrite"
    # Python tasks of the allocation stage; default 2 per core, fewer for a small fleet.
    partitions: int | None = None
    # Who writes the tables (rmqsim.sink): None chooses by where the run is; "spark" makes Spark
    # write them anywhere (the tests run every simulate test on both).
    sink: str | None = None
    # The seconds a client's backlog should drain within: clients_needed counts what that takes
    # on top of the inflow (docs/CONTRACT.md, section 2d).
    drain_target_s: float = 3600.0
    # Every phase written whole, as before section 4's "later phases hold what changed".
    full_phases: bool = False
    # The worst elements per sweep and strategy whose phases the other tables hold (section 2f).
    sweep_detail: int = 3

    def __post_init__(self) -> None:
        if self.partitions is not None and self.partitions < 1:
            raise InputError(
                "arguments", "--partitions", f"expected a positive integer, got {self.partitions}"
            )
        if self.sweep_detail < 0:
            raise InputError(
                "arguments", "--sweep-detail", f"expected 0 or a positive integer, got {self.sweep_detail}"
            )
        if not (self.drain_target_s > 0 and math.isfinite(self.drain_target_s)):
            raise InputError(
                "arguments",
                "--drain-target",
                f"expected a positive number of seconds, got {self.drain_target_s}",
            )

    def describe(self) -> str:
        strategies = "configured" if self.strategies is None else ",".join(self.strategies)
        return (
            f"snapshot={self.snapshot} out={self.out} strategies={strategies} "
            f"scenarios={self.scenarios} mode={self.mode} partitions={self.partitions or 'auto'}"
            + (f" sink={self.sink}" if self.sink else "")
        )
