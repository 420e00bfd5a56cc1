"""Where a run's CPU goes: the driver, the JVM and Spark's Python workers, sampled from /proc.

    .venv/bin/python bench/cpu_by_process.py -- .venv/bin/rmqsim simulate --snapshot S --out O ...

Runs the command (its output discarded, its stderr in cpu_by_process.log beside the current
directory), reads the user + system CPU seconds of every process under it every 0.25 s, and prints
the totals per kind and a 5-second timeline. A process that ends between two samples loses at most
its last 0.25 s. Compare two runs of the same fleet (with and without scenarios, say) one after the
other on an idle machine; the figures are seconds of CPU, not of wall time.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")
STEP_S = 5


def kind(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "gone"
    if cmd.split(" ")[0].endswith("java") or "org.apache.spark" in cmd:
        return "jvm"
    if "pyspark.daemon" in cmd or "pyspark.worker" in cmd:
        return "python workers"
    return "driver"


def processes() -> dict[int, tuple[int, float]]:
    """Every process: its parent and its CPU seconds so far."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[int(name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK)
    return out


def main(argv: list[str]) -> int:
    command = argv[1:] if argv and argv[0] == "--" else argv
    with open("cpu_by_process.log", "w") as log:
        run = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log)
        last: dict[int, tuple[str, float]] = {}
        start, timeline = time.time(), []
        while run.poll() is None:
            now = processes()
            tree, grew = {run.pid}, True
            while grew:
                grew = False
                for pid, (parent, _) in now.items():
                    if parent in tree and pid not in tree:
                        tree.add(pid)
                        grew = True
            for pid in tree & now.keys():
                last[pid] = (last[pid][0] if pid in last else kind(pid), now[pid][1])
            totals: dict[str, float] = {}
            for name, cpu in last.values():
                totals[name] = totals.get(name, 0.0) + cpu
            timeline.append((time.time() - start, totals))
            time.sleep(0.25)
    print(f"exit {run.returncode}, wall {time.time() - start:.1f} s; CPU seconds:")
    for name, cpu in sorted(timeline[-1][1].items() if timeline else []):
        print(f"  {name:15s} {cpu:7.1f}")
    before: dict[str, float] = {}
    at = STEP_S
    for t, totals in timeline:
        if t >= at:
            spent = ", ".join(f"{k} {v - before.get(k, 0.0):.1f}" for k, v in sorted(totals.items()))
            print(f"  {at:4d} s: {spent}")
            before, at = totals, at + STEP_S
    return run.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
