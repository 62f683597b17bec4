"""Moved to reference/services/testbed.py: this name only says so, in one line, to those who still use it."""

raise SystemExit("reference.testbed is now reference.services.testbed (its factories: "
                 "'reference.services.testbed:wsgi()' and reference.services.testbed:asgi)")
