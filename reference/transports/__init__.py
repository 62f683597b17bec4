"""The transports: HTTP around a Service, and the client that calls one.

rules.py says what every transport asks of an HTTP request before the service
sees its body; admission.py what a server lets in at once, and whose turn it
is. http_server.py is the bundled server (`Server`), wsgi.py and asgi.py the
same behind any WSGI or ASGI server; http_client.py is the client (`Client`).
None of them knows the protocol's rules: those are the Service's (protocol/).
"""
