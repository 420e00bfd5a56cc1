"""A bare Spark session: started as ``rmqsim simulate`` starts its own, one tiny job, stopped.

    .venv/bin/python bench/bare_session.py

What no run on Spark can go below, whatever it computes: the imports, the JVM's start, the
session's settings and one job's scheduling, and the stop. The session is the CLI's (rmqsim.cli's
``_session`` with no arguments): the ``local`` profile (conf/spark/local.yml) through
``session.build_session``, so it keeps whatever settings the CLI gives its sessions, and with the
CLI's logging, since build_session logs the resolved configuration.
"""

from __future__ import annotations

import logging

from rmqsim import config, session


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("py4j").setLevel(logging.WARNING)
    profile = config.load_profile("local")
    spark = session.build_session(master=profile.master, conf=dict(profile.conf))
    try:
        spark.range(1).count()
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
