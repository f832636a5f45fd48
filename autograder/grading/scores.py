"""How a score is shown, everywhere: the autograded points and the points graded by hand.

A chapter's written answers (nbgrader's manually graded Markdown cells) are worth points that
no autograder gives. Every place that shows a score (the grading run's table, the summary,
the feedback page, Gradescope's results) says so in the same words, through :class:`Total`::

    12/12 autograded; 2 points to be graded by hand
    12/12 autograded; 1.5/2 graded by hand

The feedback page says it in the language of the chapter's release (:meth:`Total.words`,
with the ``course`` catalog: every ``tr("...")`` here is one of its messages).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


def _same(msgid: str) -> str:
    return msgid


def joined(items: list[str], tr: Callable[[str], str] = _same) -> str:
    """``a; b; c`` (in Chinese ``a；b；c``: ``tr`` gives the language's messages)."""
    text = items[0] if items else ""
    for item in items[1:]:
        text = tr("{first}; {then}").format(first=text, then=item)
    return text


@dataclass(frozen=True)
class Total:
    """One submission's score, split by who gives the points."""

    auto: float
    auto_max: float
    hand_max: float = 0.0  # the written answers' points
    hand: float = 0.0  # the points given by hand so far
    hand_graded_max: float = 0.0  # the points of the written answers graded so far

    @property
    def pending(self) -> float:
        """Points that still wait for a person."""
        return self.hand_max - self.hand_graded_max

    def __str__(self) -> str:
        return self.words()

    def words(self, tr: Callable[[str], str] = _same) -> str:
        """The score in words; ``tr``: the messages of a language (English by default)."""
        parts = [
            tr("{auto}/{top} autograded").format(auto=f"{self.auto:g}", top=f"{self.auto_max:g}")
        ]
        if self.hand_graded_max:
            parts.append(
                tr("{hand}/{top} graded by hand").format(
                    hand=f"{self.hand:g}", top=f"{self.hand_graded_max:g}"
                )
            )
        if self.pending:
            if self.pending == 1:
                pending = tr("{points} point to be graded by hand")
            else:
                pending = tr("{points} points to be graded by hand")
            parts.append(pending.format(points=f"{self.pending:g}"))
        return joined(parts, tr)


def is_hand_graded(cell_type: str) -> bool:
    """A graded cell whose points a person gives: a written answer (a Markdown cell)."""
    return cell_type == "markdown"


def total_of(grades) -> Total:
    """The :class:`Total` of nbgrader ``Grade`` rows (one submission's, any notebooks)."""
    auto = auto_max = hand = hand_max = hand_graded_max = 0.0
    for g in grades:
        top, score = float(g.max_score or 0), float(g.score or 0)
        if not is_hand_graded(g.cell.cell_type):
            auto, auto_max = auto + score, auto_max + top
            continue
        hand_max += top
        if g.manual_score is not None:
            hand, hand_graded_max = hand + score, hand_graded_max + top
    return Total(auto, auto_max, hand_max, hand, hand_graded_max)
