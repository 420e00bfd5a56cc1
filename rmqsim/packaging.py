"""The rmqsim package as a zip of its Python files, the form Spark hands to Python workers it
does not install into: spark-submit's --py-files, and a Spark Connect session's artifacts.

Deterministic (sorted entries, fixed timestamps): the same source gives the same bytes.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import rmqsim

FIXED_TIME = (2020, 1, 1, 0, 0, 0)


def package_dir() -> Path:
    return Path(rmqsim.__file__).resolve().parent


def package_files() -> list[str]:
    """Every Python file of the package, as its name inside the zip (``rmqsim/...``)."""
    root = package_dir()
    return sorted(f"rmqsim/{p.relative_to(root).as_posix()}" for p in root.rglob("*.py"))


def write_zip(path: Path) -> Path:
    root = package_dir().parent
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in package_files():
            info = zipfile.ZipInfo(name, FIXED_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, (root / name).read_bytes())
    return path
