"""Tests of conformance/runs/."""
