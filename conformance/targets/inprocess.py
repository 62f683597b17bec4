"""An application called in process, as a target: a WSGI or ASGI callable, no server and no port.

How this works
--------------
`fuzz --app module:name` imports the module and takes `name` from it: the
application itself, or a factory that makes it (a callable that takes no
argument; `module:name()` calls it in any case), which can make a fresh one
to replay a reproduction on (`fresh`, fuzz/reproduction.py); `connect` gives
what a case's steps send their requests on (runs/server_suite.py). An application whose call
is a coroutine function speaks ASGI, any other WSGI. `Application` stands
where a `Target` stands (remote.py): `post` hands the request to the
application as a server would and returns its status, body and Content-Type,
within the timeout (a call still running then is left to finish on its own
in a thread that never keeps the process from ending, and taken as no
answer). What the application raises is answered as a
server answers it, HTTP 500, its words in the body. The `curl` lines of a
report address the application served at URL (http://127.0.0.1:8000/api by
default), where a reader can serve it to replay them. Only the standard
interfaces are used: the suite never imports an implementation.

`fuzz_application(application)` is the same fuzz from a test suite: it
raises AssertionError with each failure (and the seed that makes the same
calls again) when one is found, or when nothing could be checked.
"""

import asyncio
import contextlib
import importlib
import inspect
import io
import json
import os
import queue
import sys
import threading
import urllib.parse
from concurrent.futures import Future, TimeoutError as Late

from .remote import MAX_ANSWER, Overlong, decodable


class Application:
    """A WSGI or ASGI application, called in process the way `Target` calls a server."""

    tls, stopped = None, ""

    def __init__(self, spec, timeout=10.0, url="http://127.0.0.1:8000/api"):
        """The application `spec` names (ValueError says why it cannot be), or `spec` itself if it is one."""
        self.application, self.factory = load(spec) if type(spec) is str else (spec, None)  # (factory: or None)
        self.timeout = timeout
        parts = urllib.parse.urlsplit(url)
        self.url = f"{spec if type(spec) is str else getattr(spec, '__qualname__', 'the application')} (in process)"
        self.host, self.port, self.path = parts.hostname, parts.port or 80, parts.path
        self.asgi = _is_asgi(self.application)
        self.loop = asyncio.new_event_loop() if self.asgi else None
        self.worker = Worker()

    def post(self, message, data=None, media_type="application/json", keep=False):
        """Hand a request to the application: (HTTP status, the answer's bytes, its Content-Type)."""
        body = json.dumps(message).encode() if data is None else data
        call = self._asgi if self.asgi else self._wsgi
        worker = self.worker
        try:
            with exits_refused():
                return worker.submit(call, body, media_type, worker.abandoned).result(self.timeout)
        except Late:  # (the call goes on in its thread, and loop, collecting no more; the next gets new ones)
            worker.abandoned.set()
            self.worker = Worker()
            self.loop = asyncio.new_event_loop() if self.asgi else None
            raise TimeoutError(f"no answer within {self.timeout:g} s") from None

    @contextlib.contextmanager
    def fresh(self):
        """Within, calls go to a fresh application its factory makes (to replay a case on a fresh state)."""
        kept, self.application = self.application, self.factory()
        try:
            yield
        finally:
            self.application = kept

    def connect(self):
        """A connection, as a case's steps take one (runs/server_suite.py), whose requests go to the
        application."""
        return Exchanges(self)

    def answers(self, tries=2):
        """An application in process always can be called."""
        return True

    def wait(self, seconds, waiting=lambda reason: None):
        """Nothing to wait for: ping it once, as a server is pinged until it answers."""
        return self.post([{}, {"fn.ping_": {}}])

    def _wsgi(self, body, media_type, abandoned):
        said = {}
        environ = {"REQUEST_METHOD": "POST", "PATH_INFO": self.path, "SCRIPT_NAME": "", "QUERY_STRING": "",
                   "CONTENT_TYPE": media_type, "CONTENT_LENGTH": str(len(body)), "SERVER_NAME": self.host,
                   "SERVER_PORT": str(self.port), "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": "127.0.0.1",
                   "wsgi.version": (1, 0), "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(body),
                   "wsgi.errors": sys.stderr, "wsgi.multithread": True, "wsgi.multiprocess": False,
                   "wsgi.run_once": False}
        try:
            parts = self.application(environ, lambda status, headers, exc_info=None: said.update(
                status=int(status.split()[0]), headers=dict((k.lower(), v) for k, v in headers)))
            try:
                collected = Collected(abandoned)
                for part in parts:
                    collected.add(part)
                answer = collected.data()
            finally:
                getattr(parts, "close", lambda: None)()
        except Overlong:
            raise
        except (Exception, SystemExit) as error:  # (a server answers 500, and so does this: sys.exit() in a
            return _raised(error)  # handler ends no run, nor passes it)
        return _answered(said, answer)

    def _asgi(self, body, media_type, abandoned):
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
                 "scheme": "http", "path": self.path, "raw_path": self.path.encode(), "query_string": b"",
                 "root_path": "", "headers": [(b"content-type", media_type.encode()),
                                              (b"content-length", str(len(body)).encode())],
                 "client": ("127.0.0.1", 0), "server": (self.host, self.port)}
        said, collected = {}, Collected(abandoned)

        async def exchange():
            asked, over = [False], asyncio.Event()

            async def receive():
                if not asked[0]:
                    asked[0] = True
                    return {"type": "http.request", "body": body, "more_body": False}
                await over.wait()  # (a client goes away only once the answer is over)
                return {"type": "http.disconnect"}

            async def send(event):
                if event["type"] == "http.response.start":
                    said.update(status=event["status"], headers={k.decode().lower(): v.decode()
                                                                 for k, v in event.get("headers", [])})
                elif event["type"] == "http.response.body":
                    collected.add(event.get("body", b""))
                    if not event.get("more_body"):
                        over.set()
            await self.application(scope, receive, send)
        loop = self.loop
        try:
            loop.run_until_complete(exchange())
        except Overlong:
            raise
        except (Exception, SystemExit) as error:
            return _raised(error)
        finally:
            if abandoned.is_set():  # (its caller has a new loop: this one is closed when its call ends)
                loop.close()
        return _answered(said, collected.data())


class Exchanges:
    """A connection to an application in process, as a case's steps use one: each request a whole POST
    body, handed to the application (no other method, no body framed by hand: those are HTTP's)."""

    sock = None

    def __init__(self, application):
        self.application, self.answer = application, None

    def exchange(self, timeout):
        return self

    def request(self, method, path, body=None, headers=None, **_):
        if method != "POST" or type(body) is not bytes:
            raise OSError(f"an application in process is sent whole POST bodies only, not {method} as sent here")
        self.answer = self.application.post(None, body, (headers or {}).get("Content-Type", "application/json"))

    def getresponse(self):
        return Answer(*self.answer)

    def close(self):
        self.answer = None


class Answer(io.BytesIO):
    """An application's answer, read as an HTTP response is: its status, its headers by name, its body."""

    will_close, chunked = False, False

    def __init__(self, status, data, media_type):
        super().__init__(data)
        self.status, self.headers = status, {"content-type": media_type, "content-length": str(len(data))}

    def getheader(self, name, default=None):
        return self.headers.get(name.lower(), default)


class Worker:
    """One thread, a daemon, that makes the calls handed to it in turn: a call that never ends holds
    that thread only, and never keeps the process from ending (a pool's threads would); once `abandoned`
    (its caller stopped waiting), what its call still sends is not collected."""

    def __init__(self):
        self.calls, self.abandoned = queue.SimpleQueue(), threading.Event()
        threading.Thread(target=self.work, name="application", daemon=True).start()

    def submit(self, function, *args):
        """A Future of `function(*args)`, once the calls before it are made."""
        future = Future()
        self.calls.put((future, function, args))
        return future

    def work(self):
        while True:
            future, function, args = self.calls.get()
            try:
                future.set_result(function(*args))
            except BaseException as error:  # (told to the caller, whatever it is)
                future.set_exception(error)


def load(spec):
    """(the application `module:name` names, made by calling `name` if it is a factory; the factory, or
    None); ValueError says why there is none."""
    module_name, _, name = spec.partition(":")
    called = name.endswith("()")
    name = name.removesuffix("()")
    if not module_name or not name.isidentifier():
        raise ValueError(f"--app {spec}: write it as module:application, or module:factory for a callable that "
                         f"makes one")
    try:
        module = importlib.import_module(module_name)
    except Exception as error:  # (whatever importing it raised: a user's own module)
        raise ValueError(f"--app {spec}: cannot import {module_name}: {type(error).__name__}: {error}") from None
    found = getattr(module, name, None)
    if not callable(found):
        raise ValueError(f"--app {spec}: {module_name} has no callable {name}")
    if not (called or _takes_nothing(found)):
        return found, None
    try:
        application = found()
    except Exception as error:
        raise ValueError(f"--app {spec}: {name}() raised {type(error).__name__}: {error}") from None
    if not callable(application):
        raise ValueError(f"--app {spec}: {name}() made {type(application).__name__}, not a WSGI or ASGI application")
    return application, found


def _takes_nothing(function):
    """Whether `function` is called with no argument: a factory, not an application."""
    try:
        return not any(parameter.default is parameter.empty and parameter.kind in (
            parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD) for parameter in
            inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return False


def _is_asgi(application):
    return inspect.iscoroutinefunction(application) or inspect.iscoroutinefunction(
        getattr(application, "__call__", None))


def _answered(said, answer):
    """(status, body, Content-Type) of an answer, as the application `said` them (500 if it said none)."""
    return said.get("status", 500), decodable(answer), said.get("headers", {}).get("content-type", "")


def _raised(error):
    """The answer a server gives when the application raised: HTTP 500, its words in the body."""
    return 500, f"the application raised {type(error).__name__}: {error}".encode(), "text/plain"


class Exited(SystemExit):
    """os._exit(), called by the application while it answers: a server's process would have ended."""


@contextlib.contextmanager
def exits_refused():
    """Within, os._exit() in this process raises Exited, as sys.exit() raises SystemExit, and is answered as
    an application that raised: it ended the run at once, status 0 after one line (a false pass in CI). A
    process the application forks exits as it asks."""
    real, pid = os._exit, os.getpid()

    def refused(status):
        if os.getpid() != pid:
            real(status)
        raise Exited(f"os._exit({status}) called")
    os._exit = refused
    try:
        yield
    finally:
        os._exit = real


class Abandoned(Exception):
    """The call's answer is no longer waited for: what it still sends is not collected."""


class Collected:
    """An answer's parts as they come: at most MAX_ANSWER bytes (Overlong beyond, as a server's answer
    is), collected only while its caller waits (Abandoned after; an answer without end ends there), and
    no empty part kept (an endless run of them holds nothing)."""

    def __init__(self, abandoned):
        self.parts, self.size, self.abandoned = [], 0, abandoned

    def add(self, part):
        if self.abandoned.is_set():
            raise Abandoned()
        if part:
            self.size += len(part)
            if self.size > MAX_ANSWER:
                raise Overlong(f"the answer is over {MAX_ANSWER} bytes, more than the suite reads")
            self.parts.append(part)

    def data(self):
        return b"".join(self.parts)
