"""Tests of conformance/language/."""
