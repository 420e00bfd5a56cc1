"""A run's output directory, published all at once.

Tables are written into a staging directory beside the destination; only when every table is
complete is the staging directory renamed into place, so a killed run leaves the previous result
untouched. Renames are atomic on a local or POSIX-mounted file system; other URIs (hdfs://, s3a://)
and every path through Spark Connect (the server's file system) are written in place, which the
log says. ``staged=False`` writes in place whatever the path (``rmqsim validate`` adds its tables
to a directory that holds other ones).
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from collections.abc import Iterable
from urllib.parse import urlparse

from rmqsim.errors import InputError

log = logging.getLogger(__name__)
MODES = ("overwrite", "error")
RUN_MARK = "summary"  # every run writes it


def local_path(out: str) -> str | None:
    """``out`` as a local path (file: URIs included), or None for another file system."""
    parsed = urlparse(out)
    if parsed.scheme not in ("", "file"):
        return None
    return parsed.path if out.startswith("file:") else out


class RunDirectory:
    @staticmethod
    def check_mode(out: str, mode: str) -> None:
        """--mode error refuses an existing destination, and overwrite replaces only an earlier
        run or an empty directory (never, say, the snapshot given as --out); checked before any work."""
        if mode not in MODES:
            raise InputError("arguments", "--mode", f"expected one of {', '.join(MODES)}, got {mode!r}")
        final = local_path(out)
        if final is None or not os.path.exists(final):
            return
        if mode == "error":
            raise InputError("arguments", "--out", f"{out} exists and --mode is error")
        if not os.path.isdir(final) or (
            os.listdir(final) and not os.path.isdir(os.path.join(final, RUN_MARK))
        ):
            raise InputError(
                "arguments",
                "--out",
                f"{out} exists and is not an rmqsim output directory (no {RUN_MARK}/): "
                "overwrite replaces only an earlier run; choose another --out or remove it",
            )

    def __init__(
        self, out: str, *, mode: str = "overwrite", remote: bool = False, staged: bool = True
    ) -> None:
        """``remote``: written by a Spark Connect server, whose file system ``out`` is on."""
        self.out = out.rstrip("/")
        final = None if remote else local_path(self.out)
        if not remote and staged:
            self.check_mode(out, mode)
        self.local = final is not None
        self.staged = staged and self.local
        self._final = final or self.out
        if self.staged:
            parent = os.path.dirname(os.path.abspath(self._final))
            os.makedirs(parent, exist_ok=True)
            self.staging = os.path.join(
                parent, f".{os.path.basename(self._final)}.tmp-{uuid.uuid4().hex[:8]}"
            )
        else:
            if staged:
                log.warning(
                    "%s is not a path of this machine: tables are written in place, not atomically", out
                )
            self.staging = self._final

    def table(self, name: str) -> str:
        return f"{self.staging}/{name}"

    def beside(self, suffix: str) -> str:
        """A hidden directory beside the staging one, for work that must never be in the run."""
        parent, name = os.path.split(self.staging if self.staged else self._final)
        return os.path.join(parent, f".{name.lstrip('.')}.{suffix}-{uuid.uuid4().hex[:8]}")

    def remove_temporaries(self, tables: Iterable[str]) -> list[str]:
        """Remove what Spark's writers left in these finished tables (their _temporary folders,
        which a stopped speculative attempt may recreate after its job committed); the folders
        removed. A run written in place on another file system is left as it is."""
        if not self.local:
            return []
        found = [
            root
            for name in sorted(tables)
            for root, _, _ in os.walk(local_path(self.table(name)) or "")
            if os.path.basename(root) == "_temporary"
        ]
        for folder in found:
            shutil.rmtree(folder, ignore_errors=True)
        return found

    def publish(self) -> str:
        """Move the finished run into place, replacing any previous one."""
        if not self.staged:
            return self.out
        old = None
        if os.path.exists(self._final):
            old = f"{self.staging}.old"
            os.rename(self._final, old)
        os.rename(self.staging, self._final)
        if old:
            shutil.rmtree(old, ignore_errors=True)
        return self.out

    def abandon(self) -> None:
        if self.staged:
            shutil.rmtree(self.staging, ignore_errors=True)
