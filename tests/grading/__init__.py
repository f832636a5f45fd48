"""Tests of ``autograder.grading``: one module per module of the package."""
