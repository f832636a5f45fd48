"""Tests of ``autograder.results``: one module per module of the package."""
