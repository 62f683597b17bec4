"""Tests of conformance/commands/."""
