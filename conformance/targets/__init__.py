"""What the suite checks, and how it reaches it: remote.py (a server at a URL, every exchange within its
deadline: deadlines.py), inprocess.py (a WSGI or ASGI application called in process) and drivers.py (the
program that drives a client library or a schema loader under test)."""
