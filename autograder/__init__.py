"""Instructor tooling for *Attention, Step by Step*, built on nbgrader.

Run ``python -m autograder --help`` for the commands.
"""
