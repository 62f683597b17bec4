"""Moved to reference/services/calculator.py: this name only says so, in one line, to those who still use it."""

raise SystemExit("reference.calculator is now reference.services.calculator (its factories: "
                 "'reference.services.calculator:wsgi()' and reference.services.calculator:asgi)")
