"""Names mqadmin cut short, matched back to the full names the routes give.

consumerProgress prints at most 64 characters of a topic and 32 of a broker name. A printed name
shorter than its cut is whole; one exactly as long as the cut may be the start of a longer name,
and is the name that starts so, if exactly one known name does.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Resolved:
    name: str | None  # the full name; None where no known name fits, or several do
    candidates: tuple[str, ...]  # where several fit: which
    cut: bool  # the printed name was (or may have been) cut short


def resolve(printed: str, cut: int, known: Iterable[str]) -> Resolved:
    names = set(known)
    if printed in names and len(printed) < cut:
        return Resolved(printed, (), False)
    if len(printed) < cut:
        return Resolved(None, (), False)
    fits = sorted(n for n in names if n.startswith(printed))
    if len(fits) == 1:
        return Resolved(fits[0], (), True)
    return Resolved(None, tuple(fits), True)
