"""Tests of reference/engine/."""
