"""Moved to reference/transports/asgi.py: this name only says so, to those who still import it."""

raise ImportError("reference.asgi is now reference.transports.asgi: "
                  "from reference.transports.asgi import make_application")
