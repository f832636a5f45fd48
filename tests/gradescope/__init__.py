"""Tests of ``autograder.gradescope``: one module per module of the package."""
