"""Instructor tooling for *Attention, Step by Step*, built on nbgrader.

Run ``python -m autograder --help`` for the commands.

The modules form layers, lowest first. A module imports modules of its own layer and of the
layers below it, never one above, and no two modules import each other, even inside a
function (``tests/test_imports.py`` reads the table below and enforces both)::

    ground      __init__ config records notebooks scores tables pool formgrader i18n.markdown
    sources     i18n questions collect sandbox execute export
    parts       launch ledger preprocessors worker jobs
    pages       i18n.pages i18n.readme i18n.book i18n.sphinx grading
    assemblies  editions course
    products    launchables gradescope feedback reports i18n.catalogs
    commands    cli __main__

- **ground**: the configuration (every limit and id, :mod:`.config`), the sentences the
  grader records (:mod:`.records`), reading the book's notebooks and table of contents
  (:mod:`.notebooks`), score arithmetic, the CSV files of a grading run (:mod:`.tables`), the
  grading workers' thread pool (:mod:`.pool`),
  the formgrader's server command, MyST's messages;
- **sources**: what the course is made of, read or checked: the languages and catalogs
  (:mod:`.i18n`), the questions, collected submissions, the sandbox, the book's execution
  and the ``solutions/`` export;
- **parts**: the setup cell and launch links (:mod:`.launch`), the gradebook
  (:mod:`.ledger`), the grader's preprocessors and worker, the job folders;
- **pages**: translated pages, README, book and Sphinx build; the parallel grading run
  (:mod:`.grading`);
- **assemblies**: the two editions of the book (:mod:`.editions`) and the nbgrader course
  folder (:mod:`.course`);
- **products**: what a command hands out: launchable notebooks, the Gradescope bundle,
  feedback pages and summaries, the translation catalogs (which read every message source);
- **commands**: the command line.

Besides the standard library and third-party packages, ``autograder`` may import ``checks``
(the registry, the quiz's rules, the remote protocol the grader drives) and ``solutions``;
neither of them imports ``autograder``.
"""
