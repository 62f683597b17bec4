"""Tests of conformance/reports/."""
