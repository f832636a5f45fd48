"""Tests of ``autograder.catalogs``, one module per module."""
