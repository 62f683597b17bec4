"""Moved to reference/transports/wsgi.py: this name only says so, to those who still import it."""

raise ImportError("reference.wsgi is now reference.transports.wsgi: "
                  "from reference.transports.wsgi import make_application")
