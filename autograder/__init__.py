"""Instructor tooling for *Attention, Step by Step*, built on nbgrader.

Run ``python -m autograder --help`` for the commands.

Its packages, each with one responsibility (each one's docstring says what it owns and
what it may import), and the modules beside them:

- the ground, read by every package: :mod:`.errors` (the one error a user can fix, which
  only :mod:`.cli` turns into an exit status), :mod:`.config` (every limit and id, read from
  the ``grading:`` block of ``_config.yml``), :mod:`.records` (the sentences the grader
  records), :mod:`.notebooks` (the book's notebooks and table of contents);
- :mod:`.i18n`: languages, terms, the gettext catalogs' messages of every page and the
  review of a translation (its markup and terms);
- :mod:`.sandbox`: the bubblewrap sandbox, the rlimits and the watchdog of every kernel
  that runs a submission;
- :mod:`.book`: the book's editions, execution, launch links and downloads;
- :mod:`.grading`: a batch from the submissions handed in to the gradebook (collect,
  schedule, run, record);
- :mod:`.course`: the nbgrader course folder (release, grade, export), which assembles the
  book and the grading;
- :mod:`.results`: feedback pages and the instructor's summaries;
- :mod:`.gradescope`: the Gradescope bundle and what it runs;
- :mod:`.catalogs`: the translation catalogs, which read every message source (``make
  catalogs``: the templates and the update; what the tests reject);
- :mod:`.cli`: the command line.

The modules form layers, lowest first. A module imports modules of its own layer and of the
layers below it, never one above, and no two modules import each other, even inside a
function; no two packages import each other either (``tests/test_imports.py`` reads the
table below and enforces all three)::

    ground      __init__ errors config records notebooks i18n.markdown grading grading.scores grading.tables grading.pool grading.formgrader book results gradescope
    sources     i18n book.questions grading.collect sandbox.wrap sandbox.processes sandbox.kernel sandbox.watchdog sandbox book.execute book.export
    parts       book.launch grading.ledger grading.preprocessors grading.worker grading.jobs
    pages       i18n.pages i18n.readme i18n.review book.i18n_stage book.i18n_extension grading.batch
    assemblies  book.editions course
    products    book.launchables gradescope.bundle results.feedback results.reports catalogs.ui_messages catalogs.checks_messages catalogs catalogs.audit
    commands    cli __main__

Besides the standard library and third-party packages, ``autograder`` may import ``checks``
(the registry, the quiz's rules, the remote protocol the grader drives) and ``solutions``;
neither of them imports ``autograder``.
"""

import sys


def leave_out_iri_grammar() -> None:
    """Keep ``rfc3987_syntax`` from being imported in this process (call it before nbformat).

    nbformat's jsonschema imports rfc3987_syntax when it is installed, which builds the Earley
    parsers of its IRI grammar at import: about 2.5 s of CPU in every process that imports
    nbformat (a grading worker: a third of its start; every pytest process), for jsonschema's
    "iri" format checks. Nothing here checks formats (nbformat and nbgrader validate without a
    format checker), so it is left out: jsonschema then has no "iri" checker, and nothing else
    changes.
    """
    sys.modules.setdefault("rfc3987_syntax", None)
