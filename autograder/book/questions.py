"""The questions of "Check your understanding": their answer cells, keys, hints, and the cells
that reveal an answer.

A question's answer cell is an autograded answer cell whose grade_id is ``quiz_X_Y``; it
sets ``answer_X_Y`` (and is a ``#@save`` cell, as every graded answer). An exercise's graded
finding is read the same way: an answer cell whose solution only sets a value
(``same_weights_for_every_query = True``), its self-check declared with
``checks._quiz.declare``. Its solution region
holds the key and, in comments, what the self-study check says (see :mod:`checks._quiz`)::

    ### BEGIN SOLUTION
    answer_3_3 = 64 * 64 + 64 * 128 + 64  # why: W_q, W_k and w_v, no biases
    # hint 12288: is every layer counted?
    # hint: count the entries of W_q (h × d_q), W_k (h × d_k) and w_v (h)
    ### END SOLUTION

``python -m autograder export`` writes every answer cell's solution region, and the hints and
tolerances its comments declare, to ``solutions/answers.py``, the self-study keys: in the
installed course and the launchable notebooks' tree, never in a released chapter folder.

A code cell that would show a prediction's answer when run (it counts the parameters the
question asks about, say) carries the tag :data:`REVEALS_TAG`. It comes after the question's
answer cell (best right after it, before the check), within the question; the reader
edition shows it there, folded, as the answer's demonstration. Releases, the student edition and every workbook (downloads, launchable
notebooks) leave it out. A markdown cell that only introduces it carries the tag too.

A cell that the student must run to find a graded value (an exercise's finding: "look at
the rows; are they all the same?") stays everywhere, but its output, which the reference
computed, shows the value: it carries the tag :data:`ANSWER_IN_OUTPUT_TAG`, and the student
edition shows it without its output. (Releases and workbooks have no outputs at all.)
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

from autograder import notebooks as nbs
from checks._quiz import QUESTION

REVEALS_TAG = "reveals-answer"
# A cell the student must run to find a graded value (an exercise's finding), whose output,
# computed with the reference, shows it: the student edition shows the cell without output.
ANSWER_IN_OUTPUT_TAG = "answer-in-output"
ANSWERS_MODULE = "answers"  # solutions/answers.py
_TAG = re.compile(r"(?i)^#\s*(?P<tag>why|hint|tolerance)\b\s*(?P<arg>[^:]*?)\s*:\s*(?P<text>.*)$")


class QuestionError(ValueError):
    """An answer cell whose comments cannot be read (a hint for the key, a bad tolerance)."""


@dataclass
class Question:
    """One question's answer cell, read."""

    grade_id: str  # quiz_3_3
    chapter: str
    name: str  # answer_3_3: the variable the answer cell sets
    region: str  # the solution region, as written
    key: object  # the value of answer_X_Y the region computes
    why: str = ""
    hints: dict = field(default_factory=dict)  # wrong answer -> hint
    hint: str = ""  # for any other wrong answer
    tolerance: dict | None = None  # {"abs": x} or {"rel": r}
    cell: int = 0  # the answer cell's index in its notebook


def _assigned(cell) -> list[str]:
    """The names a solution region binds, if it only assigns values (no def, class, import)."""
    try:
        body = ast.parse(solution_region(cell.source)).body
    except SyntaxError:
        return []
    if not body or not all(isinstance(node, ast.Assign) for node in body):
        return []
    return [t.id for node in body for t in node.targets if isinstance(t, ast.Name)]


def is_question(cell) -> bool:
    """Is ``cell`` the answer cell of a question (grade_id ``quiz_X_Y``), or of a graded
    finding (a solution that only sets one value)?"""
    if cell.cell_type != "code" or not nbs.is_solution(cell):
        return False
    grade_id = str(nbs.nbgrader_meta(cell).get("grade_id", ""))
    return bool(QUESTION.fullmatch(grade_id)) or len(set(_assigned(cell))) == 1


def reveals(cell) -> bool:
    """Does ``cell`` reveal a prediction's answer (tag ``reveals-answer``)?"""
    return REVEALS_TAG in cell.get("metadata", {}).get("tags", [])


def solution_region(source: str) -> str:
    """The lines between ``### BEGIN SOLUTION`` and ``### END SOLUTION``."""
    out, inside = [], False
    for line in source.splitlines():
        marker = line.strip()
        if marker == nbs.SOLUTION_MARKERS[0]:
            inside = True
        elif marker == nbs.SOLUTION_MARKERS[1]:
            inside = False
        elif inside:
            out.append(line)
    return "\n".join(out)


def _comments(source: str) -> list[str]:
    tokens = tokenize.generate_tokens(io.StringIO(source + "\n").readline)
    return [tok.string for tok in tokens if tok.type == tokenize.COMMENT]


def _tolerance(text: str, where: str) -> dict:
    text = text.strip()
    try:
        if text.endswith("%"):
            return {"rel": float(text[:-1]) / 100}
        return {"abs": float(text)}
    except ValueError:
        raise QuestionError(
            f"{where}: tolerance {text!r} is not a number or a percentage"
        ) from None


def read(cell, chapter: str) -> Question:
    """Read a question's answer cell: the key its solution computes, and its comments."""
    grade_id = nbs.nbgrader_meta(cell)["grade_id"]
    where = f"{chapter}: {grade_id}"
    region = solution_region(cell.source).strip("\n")
    match = QUESTION.fullmatch(grade_id)
    name = f"answer_{match['chapter']}_{match['number']}" if match else _assigned(cell)[0]
    namespace: dict = {}
    exec(compile(region, f"<{where}>", "exec"), namespace)  # noqa: S102 (the course's own key)
    if name not in namespace:
        raise QuestionError(f"{where}: the solution region does not set {name}")
    question = Question(grade_id, chapter, name, region, namespace[name])
    current = None  # (kind, argument) the next untagged comment continues
    for comment in _comments(region):
        match = _TAG.match(comment)
        if match:
            tag, arg, text = match["tag"].lower(), match["arg"], match["text"].strip()
            if tag == "why":
                question.why, current = text, ("why", None)
            elif tag == "tolerance":
                question.tolerance, current = _tolerance(text, where), None
            elif arg:
                try:
                    answer = ast.literal_eval(arg)
                except (ValueError, SyntaxError):
                    raise QuestionError(
                        f"{where}: cannot read the answer of `# hint {arg}:`"
                    ) from None
                question.hints[answer] = text
                current = ("hints", answer)
            else:
                question.hint, current = text, ("hint", None)
        elif current is not None:
            more = comment.lstrip("#").strip()
            kind, arg = current
            if kind == "why":
                question.why = f"{question.why} {more}".strip()
            elif kind == "hint":
                question.hint = f"{question.hint} {more}".strip()
            else:
                question.hints[arg] = f"{question.hints[arg]} {more}".strip()
    from checks._quiz import close

    for answer in question.hints:
        if close(answer, question.key, question.tolerance):
            raise QuestionError(f"{where}: a hint for {answer!r}, which is the key")
    return question


def questions(root: Path = nbs.ROOT) -> list[Question]:
    """Every question of the book, in reading order."""
    found = []
    for path in nbs.chapter_notebooks(root):
        for index, cell in enumerate(nbs.read(path).cells):
            if is_question(cell):
                found.append(read(cell, path.stem))
                found[-1].cell = index
    return found


HEADER = '''"""Answers to the questions of every chapter ("Check your understanding"), for self-study.

Generated from the answer cells of the chapter notebooks by ``python -m autograder export``.
Do not edit this file: edit the solution region of a question's answer cell (``quiz_X_Y``),
then run ``make export``. The questions' self-checks read it (``checks/_quiz.py``) to say
right or wrong, with a hint. A released chapter folder never holds it: there the self-checks
say only that an answer was recorded, and the grader's hidden tests grade it.
"""
'''


def render_answers(found: list[Question]) -> str:
    """The text of ``solutions/answers.py`` (before formatting)."""
    parts = [HEADER]
    for q in found:
        if QUESTION.fullmatch(q.grade_id):
            title = "Question " + q.grade_id.removeprefix("quiz_").replace("_", ".")
        else:
            title = f"The finding {q.grade_id}"
        parts.append(f"# {title} (book/{q.chapter}.ipynb)\n{q.region}\n")
    hints = {q.name: q.hints for q in found if q.hints}
    hint = {q.name: q.hint for q in found if q.hint}
    tolerance = {q.name: q.tolerance for q in found if q.tolerance}
    parts.append(
        "# What the comments above declare, read by checks/_quiz.py.\n"
        f"HINTS = {hints!r}\nHINT = {hint!r}\nTOLERANCE = {tolerance!r}\n"
    )
    return "\n\n".join(parts)
