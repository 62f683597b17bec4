"""The services `python -m reference.server --service NAME` serves: the demo calculator (calculator.py,
its memory in memory.py) and the conformance suite's testbed (testbed.py)."""
