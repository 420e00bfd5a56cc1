"""spark-submit entry point: `spark-submit jobs/simulate.py --snapshot DIR --out DIR ...`.

Takes the same arguments as `rmqsim simulate`; all logic lives in rmqsim.
"""

import sys

from rmqsim.cli import main

if __name__ == "__main__":
    sys.exit(main(["simulate", *sys.argv[1:]]))
