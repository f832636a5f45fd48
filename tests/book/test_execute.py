"""Re-executing notebooks in place (autograder/book/execute.py, ``make outputs``): only the
metadata the book reads is kept, streams are what a reader sees, and a notebook anywhere (not
only a chapter of the clone) is run and written back."""

from __future__ import annotations

import nbformat
import pytest

from autograder.book import execute


def _notebook():
    code = nbformat.v4.new_code_cell("print('a'); import sys; print('b', file=sys.stderr)")
    code.metadata.update(
        {
            "tags": ["demo"],
            "collapsed": True,
            "execution": {"iopub.status.idle": "2026-11-27T00:00:00Z"},
        }
    )
    code.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="10%\r"),
        nbformat.v4.new_output("stream", name="stdout", text="100%\n"),
        nbformat.v4.new_output("stream", name="stderr", text="warned\n"),
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# T"), code])
    nb.metadata["widgets"] = {"state": "left by an editor"}
    return nb


def test_normalize_keeps_what_the_book_reads_and_what_a_reader_sees():
    nb = _notebook()
    execute.normalize(nb)
    assert nb.metadata == execute.NOTEBOOK_METADATA
    code = nb.cells[1]
    assert code.metadata == {"tags": ["demo"]}
    streams = [(o.name, o.text) for o in code.outputs]
    assert streams == [("stdout", "100%\n"), ("stderr", "warned\n")]  # one per name, \r applied


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_notebook_outside_the_clone_is_run_and_written_back(tmp_path, capsys):
    path = tmp_path / "n.ipynb"
    nbformat.write(_notebook(), path)
    execute.execute([path])
    nb = nbformat.read(path, as_version=4)
    assert [(o.name, o.text) for o in nb.cells[1].outputs] == [("stdout", "a\n"), ("stderr", "b\n")]
    assert nb.metadata == execute.NOTEBOOK_METADATA
    assert f"executed {path} in " in capsys.readouterr().out
