"""The tests, laid out as the code is: tests/reference/X/test_Y.py tests reference/X/Y.py, and
tests/conformance/X/test_Y.py tests conformance/X/Y.py (a door, such as reference/mock.py, is tested
by tests/reference/test_mock.py). Beside them: test_readme.py (the guides' examples, run as written),
test_interop.py (the independent implementation, answering the same requests), test_layout.py (the
rules of the house). What the tests share is support/'s (and conftest.py's fixtures); tools/ holds
what is run by hand, which pytest does not collect."""
