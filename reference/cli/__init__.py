"""What the four commands (server.py, client.py, mock.py, schema.py) share: options.py (the parser, a
quiet end on Ctrl-C, option values), serving.py (how a server command serves), drivers.py (the suite's
driver protocols), fetched.py (schemas fetched from servers, and kept), printing.py (answers shown) and
notes.py (what the client tells beside an answer)."""
