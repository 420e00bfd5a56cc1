"""A topic name as mqadmin printed it, maybe cut short, matched to the one full topic name it can be,
or the reason it cannot be matched: for messages that say which topic, or why none.

statsAll cuts topics at 32 or 64 characters (its ``name_width``), consumerProgress at 64. The
matching is names.resolve's: a name printed shorter than the cut is whole and must be known as it
is; one exactly as long may be the start of a longer name and is the known name that starts so,
where exactly one does (the printed name itself counts, where it is a topic too).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rmqsim.mqadmin import names

NO_CANDIDATE = "no candidate"
SEVERAL_CANDIDATES = "several candidates"


@dataclass(frozen=True)
class TopicMatch:
    printed: str
    topic: str | None  # the one full name it can be; None where there is none, or several
    candidates: tuple[str, ...]  # the known names it can be, sorted: one where matched
    may_be_cut: bool  # printed as long as the cut: maybe the start of a longer name
    reason: str | None  # None where matched, else NO_CANDIDATE or SEVERAL_CANDIDATES
    explanation: str | None  # the reason as a sentence, for a message

    @property
    def matched(self) -> bool:
        return self.topic is not None


def match_topic(printed: str, cut: int, topics: Iterable[str]) -> TopicMatch:
    """The one name of ``topics`` that ``printed`` (cut at ``cut`` characters where longer) can be."""
    found = names.resolve(printed, cut, topics)
    if found.name is not None:
        return TopicMatch(printed, found.name, (found.name,), found.cut, None, None)
    if found.candidates:
        return TopicMatch(
            printed,
            None,
            found.candidates,
            True,
            SEVERAL_CANDIDATES,
            f"{printed!r} is cut at {cut} characters and could be any of {', '.join(found.candidates)}",
        )
    explanation = (
        f"no topic starts with {printed!r} (cut at {cut} characters)"
        if found.cut
        else f"no topic is named {printed!r}"
    )
    return TopicMatch(printed, None, (), found.cut, NO_CANDIDATE, explanation)
