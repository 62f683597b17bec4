"""Tests of reference/transports/."""
