"""How a score is shown, everywhere: the autograded points and the points graded by hand.

A chapter's written answers (nbgrader's manually graded Markdown cells) are worth points that
no autograder gives. Every place that shows a score (the grading run's table, the summary,
the feedback page, Gradescope's results) says so in the same words, through :class:`Total`::

    12/12 autograded; 2 points to be graded by hand
    12/12 autograded; 1.5/2 graded by hand
"""

from __future__ import annotations

from dataclasses import dataclass


def _points(n: float) -> str:
    return f"{n:g} point{'' if n == 1 else 's'}"


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
        text = f"{self.auto:g}/{self.auto_max:g} autograded"
        if self.hand_graded_max:
            text += f"; {self.hand:g}/{self.hand_graded_max:g} graded by hand"
        if self.pending:
            text += f"; {_points(self.pending)} to be graded by hand"
        return text


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
