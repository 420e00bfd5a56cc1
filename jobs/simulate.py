"""spark-submit entry point: `spark-submit --py-files rmqsim-VERSION.zip simulate.py --snapshot DIR ...`.

Takes the same arguments as `rmqsim simulate`; all logic lives in rmqsim. It logs which rmqsim it
runs (the --py-files zip, or an installed wheel), so a submission using the wrong one shows.
"""

import logging
import sys


def wheels_in_py_files() -> list[str]:
    """The .whl files spark-submit's --py-files put on this driver's path. The driver can import
    from them, but Spark ships only .zip, .egg and .py files to the executors' Python workers,
    where the first task would fail with "No module named 'rmqsim...'"."""
    return [p for p in sys.path if p.endswith(".whl")]


if __name__ == "__main__":
    wheels = wheels_in_py_files()
    if wheels:
        print(
            f"rmqsim: bad input: --py-files has a wheel ({', '.join(wheels)}): Spark ships .zip, .egg "
            "and .py files to the executors' Python, not .whl. Pass rmqsim-VERSION.zip (make package "
            "writes it beside the wheel), or pip install the wheel into the Python of every node.",
            file=sys.stderr,
        )
        sys.exit(2)

    import rmqsim
    from rmqsim.cli import main

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("rmqsim").info("rmqsim %s from %s", rmqsim.__version__, rmqsim.__file__)
    sys.exit(main(["simulate", *sys.argv[1:]]))
