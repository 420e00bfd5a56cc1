"""RocketMQ version names as `mqadmin producerConnection` prints them, and which producer
selection a version runs.

The column is ``MQVersion.getVersionDesc(version)``: a name of the ``MQVersion.Version`` enum
("V4_9_8", "V5_1_4", "V5_3_3_SNAPSHOT", "V3_0_0_BETA6_SNAPSHOT", ...). Names compare in enum
order, where a release's SNAPSHOT comes first. A number past the end of the printing tool's own
list prints as that list's last name: HIGHER_VERSION (after V5_9_9) from 4.1.0 on, but V4_5_0 from
4.0.0 and V3_9_9 from 3.x tools, which then stand for "this or any newer client" (pass the tool's
last name as ``tool_last_name`` to have those rejected); very old tools printed "HigherVersion".

Latency-fault selection changed in 5.1.4 (RIP-63, commit b028277018): older producers run the 4.x
algorithm (a local scan index and pickOneAtLeast), 5.1.4 and later the filtered round robin. A
5.1.4 development build (V5_1_4_SNAPSHOT) may have either, so it is reported as unknown. Only Java
clients read this: the Go and C++ clients send a fixed number (V4_5_2's, V4_6_0's) and have no
latency fault avoidance at all.
"""

from __future__ import annotations

import re
from typing import NamedTuple

import numpy as np
import pyarrow as pa

# Stages within one x.y.z, in enum order: SNAPSHOT, ALPHAn, BETAn_SNAPSHOT, BETAn, release/FINAL.
SNAPSHOT, ALPHA, BETA, RELEASE = 0, 1, 2, 3

NAME = re.compile(r"V(\d+)_(\d+)_(\d+)(?:_(SNAPSHOT|FINAL|ALPHA\d+|BETA\d+(?:_SNAPSHOT)?))?")


class UnknownVersionError(ValueError):
    """A version name this module cannot place: the message says why."""


class RocketMQVersion(NamedTuple):
    """A comparable version: tuple order is MQVersion.Version's enum order."""

    major: int
    minor: int
    patch: int
    stage: int = RELEASE
    stage_number: int = 0
    built: int = 1  # 0 for a development SNAPSHOT of the stage, 1 otherwise


HIGHER_VERSION = RocketMQVersion(2**31 - 1, 0, 0)  # newer than V5_9_9, the enum's last named entry
V5_1_4 = RocketMQVersion(5, 1, 4)
# A missing version means the current Apache client, the release the conformance vectors ran.
CURRENT = RocketMQVersion(5, 3, 3)


def parse_version(name: str | None, *, tool_last_name: str | None = None) -> RocketMQVersion:
    """The version a producerConnection name stands for; None is CURRENT. Raises
    UnknownVersionError for anything else, and for ``tool_last_name`` (the last name in the list
    of the mqadmin that printed it) unless that is HIGHER_VERSION."""
    if name is None:
        return CURRENT
    text = name.strip()
    if tool_last_name is not None and text == tool_last_name.strip() and text != "HIGHER_VERSION":
        raise UnknownVersionError(
            f"{text}: the last name this mqadmin knows, so the client may be any newer one"
        )
    if text == "HIGHER_VERSION":
        return HIGHER_VERSION
    if text == "HigherVersion":
        raise UnknownVersionError(
            "HigherVersion: printed by an mqadmin older than the client, which may be any"
        )
    match = NAME.fullmatch(text)
    if match is None:
        raise UnknownVersionError(f"{name!r} is not a RocketMQ version name (MQVersion.Version, e.g. V4_9_8)")
    major, minor, patch, suffix = match.groups()
    release = (int(major), int(minor), int(patch))
    if suffix is None or suffix == "FINAL":
        return RocketMQVersion(*release)
    if suffix == "SNAPSHOT":
        return RocketMQVersion(*release, SNAPSHOT, 0, 0)
    if suffix.startswith("ALPHA"):
        return RocketMQVersion(*release, ALPHA, int(suffix[5:]))
    number, _, snapshot = suffix[4:].partition("_")
    return RocketMQVersion(*release, BETA, int(number), 0 if snapshot else 1)


def is_before_v5_1_4(name: str | None, *, tool_last_name: str | None = None) -> bool:
    """True when the producer runs the 4.x latency-fault selection (before 5.1.4). Raises
    UnknownVersionError where that cannot be told, V5_1_4_SNAPSHOT included."""
    version = parse_version(name, tool_last_name=tool_last_name)
    if version[:3] == V5_1_4[:3] and version < V5_1_4:
        raise UnknownVersionError(f"{name}: a development build of 5.1.4, with or without RIP-63's selection")
    return version < V5_1_4


def classify_versions(
    names: pa.Array | np.ndarray | list, *, tool_last_name: str | None = None
) -> tuple[np.ndarray, pa.Array]:
    """is_before_v5_1_4 over a column of names (null = CURRENT): (bool per row, False where
    unknown; the reason a row's version is unknown, null where it is known). One parse per
    distinct name."""
    column = names if isinstance(names, pa.Array) else pa.array(list(names), type=pa.string())
    encoded = column.dictionary_encode()
    before, problem = [], []
    for name in encoded.dictionary.to_pylist() + [None]:  # the last slot is for null rows
        try:
            before.append(is_before_v5_1_4(name, tool_last_name=tool_last_name))
            problem.append(None)
        except UnknownVersionError as error:
            before.append(False)
            problem.append(str(error))
    codes = encoded.indices.fill_null(len(before) - 1).to_numpy(zero_copy_only=False)
    return np.array(before, dtype=bool)[codes], pa.array(problem, type=pa.string()).take(codes)
