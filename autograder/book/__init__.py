"""The book: its editions, its execution, its notebooks for students and its downloads.

:mod:`.questions` reads the predictions and quizzes of a chapter; :mod:`.launch` writes the
setup cell and the launch links (Colab, Binder, a hub); :mod:`.editions` stages the reader
and the student edition and is the Sphinx extension that adds the ``.md`` download;
:mod:`.i18n_stage` translates a staged copy and :mod:`.i18n_extension` is the Sphinx
extension of every build (the language switcher, translated downloads); :mod:`.launchables`
writes the notebooks the launch links open; :mod:`.execute` runs the chapters in place
(``make outputs``); :mod:`.export` writes ``solutions/`` from their ``#@save`` cells.

It imports the ground modules and :mod:`autograder.i18n`, never the grading or the course.
"""
