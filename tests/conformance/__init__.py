"""Tests of conformance/, one folder for each of its folders."""
