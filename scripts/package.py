"""`make package`: everything spark-submit needs, in dist/.

- rmqsim-VERSION-py3-none-any.whl: for `pip install` into the cluster's Python environment;
- rmqsim-VERSION.zip: the rmqsim package for `--py-files` (zipimport: Python files only);
- simulate.py: the entry point (jobs/simulate.py);
- spark-local.properties, spark-cluster.properties: the Spark profiles of conf/spark/ as
  `--properties-file` input, so that driver and executor settings apply before the JVM starts;
- scenarios/sample.yml and log4j2.properties: for `--files`.

The zip is deterministic (sorted entries, fixed timestamps): the same source gives the same bytes.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's rmqsim, whatever is installed


def version() -> str:
    import rmqsim

    return rmqsim.__version__


def write_properties(profile_yml: Path, out: Path) -> None:
    from rmqsim.config import load_profile

    profile = load_profile(str(profile_yml))
    lines = [f"# From conf/spark/{profile_yml.name} by `make package`: spark-submit --properties-file"]
    if profile.master:
        lines.append(f"spark.master {profile.master}")
    lines += [f"{key} {value}" for key, value in sorted(profile.conf.items())]
    out.write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=str(ROOT / "dist"))
    p.add_argument(
        "--no-wheel", action="store_true", help="skip the wheel (the zip is enough for --py-files)"
    )
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from rmqsim.packaging import write_zip

    write_zip(out / f"rmqsim-{version()}.zip")
    shutil.copyfile(ROOT / "jobs" / "simulate.py", out / "simulate.py")
    for profile in sorted((ROOT / "conf" / "spark").glob("*.yml")):
        write_properties(profile, out / f"spark-{profile.stem}.properties")
    (out / "scenarios").mkdir(exist_ok=True)
    shutil.copyfile(ROOT / "conf" / "scenarios" / "sample.yml", out / "scenarios" / "sample.yml")
    shutil.copyfile(ROOT / "conf" / "log4j2.properties", out / "log4j2.properties")
    if not args.no_wheel:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--quiet",
                "--no-deps",
                "-w",
                str(out),
                str(ROOT),
            ],
            check=True,
        )
    for f in sorted(out.rglob("*")):
        if f.is_file():
            print(f.relative_to(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
