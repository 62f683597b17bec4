"""Tests of reference/protocol/."""
