"""What the tests that start real Spark processes share: a Python without rmqsim for the workers,
free ports, waiting for a server's log line, and comparing two runs' output tables."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyspark

SPARK_HOME = Path(pyspark.__file__).resolve().parent


def python_without_rmqsim(folder: Path) -> Path:
    """A virtual environment that sees this one's packages (pyarrow, pandas, numpy, pyspark) but
    not rmqsim: workers running it must get rmqsim from Spark (--py-files, Connect artifacts).
    The editable install's path hook lives in a .pth file, which a path added by another .pth
    does not run."""
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=120)
    python = folder / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(site, "rmqsim-test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    probe = subprocess.run(
        [
            str(python),
            "-c",
            "import pyarrow, numpy, pandas, pyspark\n"
            "try:\n import rmqsim\nexcept ImportError: print('no rmqsim')",
        ],
        capture_output=True,
        text=True,
        cwd=folder,
    )
    assert probe.stdout.strip() == "no rmqsim", probe.stdout + probe.stderr
    return python


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(log: Path, text: str, *, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists() and text in log.read_text(errors="replace"):
            return
        time.sleep(0.5)
    tail = log.read_text(errors="replace")[-3000:] if log.exists() else "(no log)"
    raise AssertionError(f"{text!r} not in {log} after {timeout} s:\n{tail}")


def spark_env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), **extra}
    env.pop("PYTHONPATH", None)
    return env


def output_tables(out: Path) -> dict[str, pa.Table]:
    """Every table of a run, its rows in one order whatever files and partitions hold them."""
    tables = {}
    folders = [p for p in out.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))]
    for path in sorted(p for p in folders if any(p.rglob("*.parquet"))):  # not charts/
        table = ds.dataset(path, format="parquet", partitioning="hive").to_table()
        table = table.select(sorted(table.column_names))
        flat = [c for c in table.column_names if not pa.types.is_nested(table.schema.field(c).type)]
        tables[path.name] = table.sort_by([(c, "ascending") for c in flat])
    return tables
