"""What the tests that start real Spark processes share: make package's file names, a Python
without rmqsim for the workers, free ports, waiting for a server's log line, the CLI as a process,
spark-submit of the packaged job, comparing two runs' output tables, and killing an executor."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import sysconfig
import time
from collections.abc import Sequence
from pathlib import Path

import psutil
import pyspark

import rmqsim

ROOT = Path(__file__).resolve().parent.parent
SPARK_HOME = Path(pyspark.__file__).resolve().parent
ZIP = f"rmqsim-{rmqsim.__version__}.zip"  # make package's --py-files zip
WHEEL = f"rmqsim-{rmqsim.__version__}-py3-none-any.whl"


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


def run_cli(*args: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    """`rmqsim ARGS` as a user runs it: a process of its own, its workers on this interpreter."""
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    command = [sys.executable, "-m", "rmqsim.cli", *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout)


def submit_job(
    packaged: Path,
    *job_args: str,
    master: str,
    py_files: str = ZIP,
    options: Sequence[str] = (),
    env: dict[str, str],
    cwd: Path,
    timeout: float,
) -> tuple[int, str]:
    """spark-submit of make package's simulate.py with ``py_files`` from ``packaged`` and
    spark-submit ``options``: its exit code and its whole log (spark-submit prints its Python's
    stderr on its stdout)."""
    command = [str(SPARK_HOME / "bin" / "spark-submit"), "--master", master, *options]
    command += ["--py-files", str(packaged / py_files), str(packaged / "simulate.py"), *job_args]
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    return done.returncode, done.stdout + done.stderr


def same_tables(old: Path, new: Path) -> list[str]:
    """Assert that two runs hold the same tables, equal in schema (nullability included) and rows
    (as multisets, floats exactly): rmqsim.compare_runs; the tables compared."""
    from rmqsim.compare_runs import compare_runs

    results = compare_runs(old, new)
    assert all(r.equal for r in results), "\n".join(line for r in results for line in r.lines)
    return [r.name for r in results]


def executor_jvms(work_dir: Path) -> list[psutil.Process]:
    """The executor JVMs (CoarseGrainedExecutorBackend) a standalone worker launched in
    ``work_dir``: each runs in its own folder there."""
    found = []
    for process in psutil.process_iter(["cmdline", "cwd"]):
        try:
            command = " ".join(process.info["cmdline"] or ())
            cwd = process.info["cwd"] or ""
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if "CoarseGrainedExecutorBackend" in command and cwd.startswith(str(work_dir)):
            found.append(process)
    return found


def runs_python(executor: psutil.Process) -> bool:
    """Whether ``executor`` has started its Python workers (pyspark.daemon or a worker of its own)."""
    try:
        return any("pyspark" in " ".join(c.cmdline()) for c in executor.children(recursive=True))
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def kill_first_executor_running_python(work_dir: Path, *, timeout: float) -> str:
    """``kill -9`` the first executor JVM under ``work_dir`` seen with Python workers: in an
    rmqsim run the first Python a cluster's executors run is the allocation stage's (the table
    writes that unpack its rows come after). Its folder, once killed, as a standalone worker
    names it (app-.../N)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for executor in executor_jvms(work_dir):
            if runs_python(executor):
                folder = str(Path(executor.cwd()).relative_to(work_dir))
                executor.send_signal(signal.SIGKILL)
                executor.wait(timeout=60)
                return folder
        time.sleep(0.05)
    raise AssertionError(f"no executor under {work_dir} ran Python within {timeout} s")
