"""Tests of reference/services/."""
