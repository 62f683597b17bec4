"""How the server commands serve: the options every server has (`server.py`, `mock.py`), and a Service
served with them over HTTP or HTTPS until Ctrl-C or SIGTERM."""

import logging
import ssl
import time
from pathlib import Path

from .. import protocol
from ..transports import http_server
from ..transports.admission import MAX_CONNECTIONS
from ..transports.rules import MAX_BODY, TIMEOUT, Bounds
from .options import timeout


def add_server_options(parser, port):
    """Add the options every server command has."""
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default %(default)s)")
    parser.add_argument("--port", type=int, default=port, help="port to listen on (default %(default)s)")
    parser.add_argument("--path", default="/api", help="the API path (default %(default)s)")
    parser.add_argument("--log-level", default="info", type=str.lower, choices=["debug", "info", "warning", "error"],
                        help="logging detail; debug shows each step of every request, answered by the teaching core's "
                             "steps alone, as with --plain (default %(default)s)")
    parser.add_argument("-v", "--verbose", dest="log_level", action="store_const", const="debug",
                        help="the same as --log-level debug")
    parser.add_argument("--access-log", action="store_true", help="log a line for each request answered (off by "
                        "default, as gunicorn's: a line a request cost a quarter of the requests a second)")
    parser.add_argument("--max-body", type=int, default=MAX_BODY, metavar="BYTES",
                        help="largest request body accepted (default %(default)s)")
    parser.add_argument("--max-connections", type=int, default=MAX_CONNECTIONS, metavar="N",
                        help="connections served at once; beyond, idle or stalled ones give way, "
                             "else HTTP 503 (default %(default)s)")
    parser.add_argument("--timeout", type=timeout, default=TIMEOUT, metavar="SECONDS",
                        help="how long a connection may stay idle, take to send a whole request, or "
                             "take to read an answer (default %(default)s)")
    parser.add_argument("--certfile", metavar="FILE", help="serve HTTPS with this certificate (PEM; its "
                        "private key too, unless --keyfile is given)")
    parser.add_argument("--keyfile", metavar="FILE", help="the private key of --certfile (PEM)")
    parser.add_argument("--plain", action="store_true", help="serve with the teaching core alone, without "
                        "the engine room's shortcuts (the answers are the same; reference/README.md)")


def check_server_options(parser, options):
    """Refuse option values argparse cannot check by itself."""
    if not options.path.startswith("/"):
        parser.error("--path must start with /")
    if not 0 <= options.port <= 65535:
        parser.error(f"--port {options.port} is not between 0 and 65535")
    for name in ("max_body", "max_connections", "timeout"):
        if getattr(options, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} must be positive")
    if options.keyfile and not options.certfile:
        parser.error("--keyfile goes with --certfile")


def core_only(options):
    """Whether to serve with the core alone, its Service and its transport: with --plain, and with the
    debug log, which only the core's steps write (the engine room's short paths log nothing)."""
    return options.plain or options.log_level == "debug"


def kind(options):
    """The kind of Service the options ask for: the core's, or the engine room's (imported only then)."""
    if core_only(options):
        return protocol.Service
    from ..engine import Service
    return Service


class Lines(logging.Formatter):
    """A server's log lines, the time of day written once a second, not once a line."""

    written = (None, "")  # (the second, as text), replaced at once (threads write lines too)

    def formatTime(self, record, datefmt=None):
        """The time as `logging.Formatter` writes it by default: 2026-11-28 12:09:27,981."""
        second, text = self.written
        if int(record.created) != second:
            second = int(record.created)
            self.written = second, text = second, time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(second))
        return f"{text},{int(record.msecs):03d}"


def serve(service, options, what, parser):
    """Serve `service` as the options say until Ctrl-C or SIGTERM, stop gracefully, return the status."""
    handler = logging.StreamHandler()
    handler.setFormatter(Lines("%(asctime)s %(levelname)s %(message)s"))
    logging.basicConfig(level=options.log_level.upper(), handlers=[handler])
    # What no line of a server's log shows is not gathered for each (the logging module's own knobs): a
    # line a request at the default level cost 44% more CPU than none, 22 us of Python each.
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
    logging._srcfile = None  # (no caller's file and line looked up)
    logging.getLogger("reference.access").setLevel(
        logging.DEBUG if options.access_log or options.log_level == "debug" else logging.WARNING)
    tls = None
    if options.certfile:
        try:
            tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            tls.load_cert_chain(options.certfile, options.keyfile)
        except (OSError, ssl.SSLError) as error:
            problem = error.reason or error if isinstance(error, ssl.SSLError) else error.strerror
            if "PEM lib" in str(problem) or "KEY_VALUES_MISMATCH" in str(problem):  # (OpenSSL's words for both)
                problem = _pem_problem(options.certfile, options.keyfile)
            return parser.fail(f"cannot serve HTTPS with --certfile {options.certfile}: {problem}")
    try:
        if core_only(options):
            transport = http_server.Server
        else:
            from ..engine import guard
            transport = guard.Server
        server = transport(service, options.host, options.port, options.path, tls,
                           Bounds(options.max_body, options.timeout, options.max_connections))
    except OSError as error:
        return parser.fail(f"cannot listen on {options.host}:{options.port}: {error.strerror}")
    print(f"Serving {what} at {server.url} (Ctrl-C to stop)", flush=True)
    server.run()
    return 0


def _pem_problem(certfile, keyfile):
    """Which of the two files lacks what OpenSSL looked for in it, in words."""
    def holds(path):
        try:
            text = Path(path).read_bytes()[:1024 * 1024]
        except OSError:
            return set()
        return {kind for kind, mark in (("certificate", b"-----BEGIN CERTIFICATE"), ("key", b"PRIVATE KEY-----"))
                if mark in text}
    cert, key = holds(certfile), holds(keyfile) if keyfile else set()
    if "certificate" not in cert:
        return "it holds no PEM certificate" + (" (it is a private key: give that with --keyfile)" if "key" in cert
                                               else "")
    if not keyfile:
        return "it holds a certificate and no private key: give the key with --keyfile" if "key" not in cert else (
            "the private key it holds is not its certificate's")
    return (f"--keyfile {keyfile} holds no PEM private key" if "key" not in key
            else f"--keyfile {keyfile} is not the certificate's key")
