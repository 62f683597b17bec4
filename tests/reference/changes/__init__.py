"""Tests of reference/changes/."""
