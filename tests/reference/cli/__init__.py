"""Tests of reference/cli/."""
