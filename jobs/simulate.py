"""spark-submit entry point: `spark-submit --py-files rmqsim-VERSION.zip simulate.py --snapshot DIR ...`.

Takes the same arguments as `rmqsim simulate`; all logic lives in rmqsim. It logs which rmqsim it
runs (the --py-files zip, or an installed wheel), so a submission using the wrong one shows.
"""

import logging
import sys

import rmqsim
from rmqsim.cli import main

if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("rmqsim").info("rmqsim %s from %s", rmqsim.__version__, rmqsim.__file__)
    sys.exit(main(["simulate", *sys.argv[1:]]))
