"""Tests of ``autograder.sandbox``: one module per module of the package."""
