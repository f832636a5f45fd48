"""The messages of the tools (autograder/catalogs/ui_messages.py): every ``tr`` of the course's
tools is read from their source, and one whose text is not a literal string is an error."""

from __future__ import annotations

import pytest

from autograder.catalogs import ui_messages


def test_the_tools_messages_are_found_in_their_source(repo):
    """Are the feedback page's words among the messages read from the tools' source?"""
    found = {m.msgid for m in ui_messages.tool_messages(repo)}
    assert "Scores" in found


def test_a_tr_of_something_not_a_literal_string_is_an_error(repo):
    """A ``tr`` of a name could not be translated (its text is not in the source): an error
    that names the file."""
    path = repo / "autograder/results/feedback.py"
    path.write_text(path.read_text() + "\n\ndef later(page, name):\n    return page.tr(name)\n")
    with pytest.raises(ui_messages.ToolMessageError, match="feedback.py:.*literal string"):
        ui_messages.tool_messages(repo)
