"""`mqadmin clusterList`: one line per broker instance (cluster, broker name, broker id, address).

The header's names contain spaces ("#Cluster Name") and so do some values ("0.00(0,0ms | 0,0ms)"
in 5.x), so a line is not split on white space: the first four columns are read where the header
puts them. 4.9 prints ``%-16s  %-22s  %-4s  %-22s`` for them, 5.x ``%-22s  %-22s  %-4s  %-22s``
and adds #Timer(Progress) and #ACTIVATED. A value wider than its column pushes the rest of the
line right; such a line is read by its first four tokens instead (names have no spaces then). So
is a copy whose spacing a page collapsed: a cluster name with a space then puts a name where the
broker id belongs, and the line is refused rather than read shifted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rmqsim.mqadmin.lines import Line, error
from rmqsim.mqadmin.table import Layout, table_lines

HEADER = ("#Cluster Name", "#Broker Name", "#BID", "#Addr", "#Version")
ADDRESS = re.compile(r"^\S+:\d+$")
LAYOUT = Layout(
    usage="clusterList",
    header=re.compile(r"#Cluster Name\b"),
    expected="the clusterList header (#Cluster Name  #Broker Name  #BID  #Addr  #Version ...)",
    rows=re.compile(r".*?\S\s+\d+\s+\S+:\d+(?:\s|$)"),  # ... broker name, id, host:port
    inside=re.compile(r"#Cluster Name\W+#Broker Name\b"),
)


@dataclass(frozen=True)
class BrokerInstance:
    line: int
    cluster: str
    broker_name: str
    broker_id: int
    address: str


@dataclass(frozen=True)
class ClusterList:
    instances: tuple[BrokerInstance, ...]
    format: str  # "4.x" or "5.x", from the header


def parse(text: str, *, source: str) -> ClusterList:
    lines = table_lines(text, source=source, layout=LAYOUT)
    header = lines[0]
    if "#InTotalYest" in header.text:
        raise error(source, header.number, "saved with `clusterList -m`: save plain `clusterList`")
    starts = [header.text.find(name) for name in HEADER]
    if any(s < 0 for s in starts) or starts != sorted(starts) or starts[0] != 0:
        raise error(
            source,
            header.number,
            f"expected {LAYOUT.expected}",
        )
    if any(header.text[s - 1] not in " \t" for s in starts[1:]):
        raise error(
            source,
            header.number,
            "the clusterList header's columns run together: the page lost the spaces between them; "
            "paste the output as mqadmin printed it",
        )
    form = "5.x" if "#ACTIVATED" in header.text or "#Timer(Progress)" in header.text else "4.x"
    instances = tuple(_instance(source, line, starts) for line in lines[1:])
    return ClusterList(instances, form)


def _instance(source: str, line: Line, starts: list[int]) -> BrokerInstance:
    fields = _by_layout(line.text, starts) or _by_tokens(line.text)
    if fields is None:
        raise error(
            source,
            line.number,
            "expected a broker line: cluster, broker name, broker id (a number) and address (host:port)",
        )
    cluster, broker, bid, address = fields
    return BrokerInstance(line.number, cluster, broker, int(bid), address)


def _valid(fields: list[str]) -> bool:
    cluster, broker, bid, address = fields
    return bool(cluster and broker and re.fullmatch(r"\d+", bid) and ADDRESS.match(address))


def _by_layout(text: str, starts: list[int]) -> list[str] | None:
    # Each column must start right after white space, or a value overflowed into it.
    if len(text) <= starts[4] or any(text[s - 1] != " " for s in starts[1:5]):
        return None
    fields = [text[a:b].strip() for a, b in zip(starts[:4], starts[1:5])]
    return fields if _valid(fields) else None


def _by_tokens(text: str) -> list[str] | None:
    tokens = text.split()
    return tokens[:4] if len(tokens) >= 4 and _valid(tokens[:4]) else None
