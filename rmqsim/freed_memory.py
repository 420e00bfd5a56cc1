"""A driver process keeps the memory it frees, for its next arrays, in small pages.

The driver's work is large arrays that live for one step. Given back to the kernel when freed,
their memory comes back zeroed on the next step's first touch, and numpy and mimalloc (pyarrow's
allocator) ask for huge pages, each zeroed whole (2 MiB) at its first touch: on a 10M fleet with
producers, that zeroing was a quarter of the driver's time on a 2-core VM (perf: clear_page_erms
under huge-page faults). Kept, memory is reused as it is, and only the pages touched are zeroed.
The process does not shrink, and its peak is higher, since each allocator keeps its own (the 10M
run with capacities: 2.6 GB -> 3.1 GB).

pyarrow's arrays come from jemalloc rather than mimalloc: jemalloc keeps what it frees for about a
second (its decay) and then gives it back, and it reuses one thread's freed memory in another.
Kept for good, mimalloc's pages piled up per thread: a sweep's driver (bench/bench_sweep.py, 2M
fleet) peaked at 0.86 GB against 0.65 GB, and the 10M fleet with capacities ran in 34 s and 2.45 GB
against 30.5 s and 2.16 GB (bench/README.md, issue 44).
"""

from __future__ import annotations

import ctypes
import os
import sys

# glibc's mallopt parameters (malloc.h).
M_TRIM_THRESHOLD = -1
M_TOP_PAD = -2
M_MMAP_MAX = -4
KEEP = 2**31 - 1  # an int's largest: never trim the heap's top


def keep_freed_memory() -> None:
    """For this process: numpy's arrays (glibc malloc) come from the heap, not from mmap, and the
    heap is never trimmed; pyarrow's come from jemalloc, and numpy's ask for no huge pages. The
    last two are read from the environment when pyarrow and numpy load, so they hold only where
    they are not loaded yet (and then for the processes this one starts too: Spark's Python
    workers). Where the C library is not glibc, the heap is left as it is."""
    if "pyarrow" not in sys.modules:
        os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "jemalloc")
    if "numpy" not in sys.modules:
        os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt(M_MMAP_MAX, 0)
    mallopt(M_TRIM_THRESHOLD, KEEP)
    mallopt(M_TOP_PAD, 64 << 20)
