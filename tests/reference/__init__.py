"""Tests of reference/, one folder for each of its folders."""
