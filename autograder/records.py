"""What the grader records about a submission, in words: each sentence once, translatable.

The grader writes these English sentences into its record (the gradebook's outcome,
``problems.csv``), where an instructor reads them as they are. A student reads them on a
feedback page or in Gradescope's results, in the language the chapter was released in:
:func:`in_language` matches a recorded sentence against these templates and says it in
that language, its fields too where a field is itself one of these sentences (the reason
inside "stopped by the sandbox"). A sentence that matches none is left as it was written.

Every template is marked with :func:`N_`, so that ``make catalogs`` puts it in the
``course`` catalog (``autograder/catalogs/ui_messages.py``, ``TOOL_MODULES``). This module imports
nothing of the course: the sandbox, the collector and the grader all use it.
"""

from __future__ import annotations

import re
from collections.abc import Callable


def N_(message: str) -> str:  # noqa: N802  (gettext's name)
    """Mark ``message`` for the catalog; it is translated where it is said."""
    return message


# ---------------------------------------------------------------- why the sandbox stopped a notebook
BOTH = N_("{first}, and also {second}")  # two reasons at once (see all_of)
MEMORY = N_("the notebook's processes used {used} MiB together (limit {limit} MiB)")
PROCESSES = N_("the notebook started {count} processes (limit {limit})")
NOTEBOOK_CPU = N_("the notebook used more than {limit} s of CPU time")
CELL_CPU_IGNORED = N_("a cell used more than {limit} s of CPU time and ignored the interrupt")
CELL_CPU_INTERRUPTED = N_("a cell used more than {limit} s of CPU time: interrupted")
FOLDER_FILES = N_("the notebook's folder holds more than {limit} files")
FOLDER_SIZE = N_("the notebook's folder grew past {limit} MiB")

# ---------------------------------------------------------------- what collecting and reconciling changed
SEVERAL_NOTEBOOKS = N_("{count} notebooks ({names}): graded {chosen}")
SEVERAL_NOTEBOOKS_CARRYING = N_(
    "{count} notebooks ({names}): graded {chosen}, the only one with the chapter's graded cells"
)
RESUBMITTED = N_(
    "{count} submissions of {chapter}: graded the newest by the {rule} time, {chosen}, "
    "and set aside {aside}"
)
COUNTED_AS = N_("counted as {chapter}, the chapter of the rest of the batch")
UNKNOWN_GRADED_CELL = N_(
    "a cell marked for grading that the course does not have ({grade_id}) was ignored: "
    "graded as a plain cell"
)
ANSWER_MISSING = N_("the answer cell {grade_id} is missing: its tests score 0")
ANSWER_PUT_BACK = N_("the answer cell {grade_id} was missing: the course's copy was put back")
TASK_PUT_BACK = N_("the task cell {grade_id} was missing: the course's copy was put back")
TEST_PUT_BACK = N_("the test cell {grade_id} was missing: the course's copy was put back")
CELL_PUT_BACK = N_("the cell {grade_id} was missing: the course's copy was put back")

TEMPLATES = (
    BOTH,  # first: a reason's fields must not swallow a second reason
    MEMORY,
    PROCESSES,
    NOTEBOOK_CPU,
    CELL_CPU_IGNORED,
    CELL_CPU_INTERRUPTED,
    FOLDER_FILES,
    FOLDER_SIZE,
    SEVERAL_NOTEBOOKS_CARRYING,  # before SEVERAL_NOTEBOOKS, which would match it too
    SEVERAL_NOTEBOOKS,
    RESUBMITTED,
    COUNTED_AS,
    UNKNOWN_GRADED_CELL,
    ANSWER_MISSING,
    ANSWER_PUT_BACK,
    TASK_PUT_BACK,
    TEST_PUT_BACK,
    CELL_PUT_BACK,
)
FIELD = re.compile(r"\{(\w+)\}")


def _pattern(template: str) -> re.Pattern:
    parts, last = [], 0
    for m in FIELD.finditer(template):
        parts += [re.escape(template[last : m.start()]), f"(?P<{m[1]}>.+?)"]
        last = m.end()
    parts.append(re.escape(template[last:]))
    return re.compile("".join(parts), re.DOTALL)


PATTERNS = [(t, _pattern(t)) for t in TEMPLATES]


def all_of(reasons: list[str]) -> str:
    """Several reasons as one sentence (``BOTH``, nested), in their order."""
    said = reasons[-1] if reasons else ""
    for reason in reversed(reasons[:-1]):
        said = BOTH.format(first=reason, second=said)
    return said


def in_language(text: str, translate: Callable[[str], str]) -> str:
    """``text``, a recorded sentence, said with ``translate`` (a catalog's lookup, such as
    ``autograder.results.feedback.translator(lang)``); as it is when it matches no template.
    ``"; "``-joined sentences (a stop for two reasons) are each said."""
    if "; " in text:
        return "; ".join(in_language(part, translate) for part in text.split("; "))
    for template, pattern in PATTERNS:
        m = pattern.fullmatch(text.strip())
        if m:
            fields = {k: in_language(v, translate) for k, v in m.groupdict().items()}
            return translate(template).format(**fields)
    return text
