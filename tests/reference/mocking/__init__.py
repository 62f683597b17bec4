"""Tests of reference/mocking/."""
