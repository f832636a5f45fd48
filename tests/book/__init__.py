"""Tests of ``autograder.book``, one module per module."""
