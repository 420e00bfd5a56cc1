"""Check that a change left every table of a run as it was: rmqsim.compare_runs on the command line.

python bench/compare_runs.py OLD_RUN NEW_RUN [--float-tolerance 0] [--show 5] [--new-column TABLE.COLUMN]
"""

import sys

from rmqsim.compare_runs import main

if __name__ == "__main__":
    sys.exit(main())
