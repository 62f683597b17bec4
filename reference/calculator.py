"""The demo service: a calculator with variables, a paper tape, export/import and sessions.

How this works
--------------
State lives in memory, under one lock, in namespaces of variables and a
paper tape (every evaluation, failed ones as 0.0 and unsuccessful). A call
without `@auth_` uses the shared namespace; `Ephemeral {username}` that
user's; `Session {token}` that of the user who got the token from `fn.login`.
A namespace is made by its first write; reading a missing one reads empty.

State is bounded in count and bytes (a variable counts as its name plus
VARIABLE_BYTES, an evaluation as its MessagePack form plus ENTRY_BYTES), and
no limit takes away data someone else is using. A full namespace gives up its
oldest evaluations, then refuses with ErrorNamespaceFull. Beyond the counts of
namespaces and sessions, or `max_state` bytes in all, what has been idle for
`idle` seconds is forgotten, else the newcomer gets ErrorUnavailable. The
shared namespace has its room from the start and is never forgotten, so calls
without `@auth_` always work.

`Calculator().handlers()` are ready for `Service`, with two hooks: `identify`
(before) turns `@auth_` into a namespace, `guard` (wrap) holds the lock and
answers a limit met with its error.
"""

import json
import logging
import math
import operator
import random
import secrets
import threading
import time

import msgpack

from importlib import resources

from . import engine, protocol
from .protocol import Refusal, load
from .protocol.service import UNAUTHENTICATED
from .protocol.types import Type
from .protocol.validate import at, check
from .wsgi import make_application

log = logging.getLogger("reference")

SHARED = ""  # the namespace of calls without @auth_ (Ephemeral "" is the same one)
VARIABLE_BYTES, ENTRY_BYTES, NAMESPACE_BYTES, SESSION_BYTES = 200, 80, 700, 300  # beside the text each holds
UNAVAILABLE: dict = {"ErrorUnavailable": {}}
NO_NAMESPACE = ("fn.add", "fn.login")  # which ignore @auth_
NUMBER = Type("number")


class Full(Exception):
    """There is no room for what a call would keep; `result` says which limit it met."""

    def __init__(self, result):
        super().__init__(result)
        self.result = result


class Namespace:
    """One user's variables and paper tape (oldest evaluation first, each as MessagePack)."""

    def __init__(self, name):
        self.variables = {}
        self.tape = []
        self.size = 0  # bytes of its variables and tape
        self.overhead = NAMESPACE_BYTES + len(name.encode())  # of the namespace itself
        self.used = time.monotonic()


def entries():
    """The calculator's schema entries, which the conformance suite ships for every implementation."""
    return json.loads(resources.files("conformance").joinpath("calculator.json").read_text(encoding="utf-8"))


def service(plain=False, **options):
    """A Service answering with a new Calculator; `options` go to Calculator(). `plain` leaves the
    engine room out."""
    schema = load(entries())
    calculator = Calculator(schema, **options)
    return (protocol.Service if plain else engine.Service)(schema, calculator.handlers(),
                                                           before=calculator.identify, wrap=calculator.guard)


def wsgi():
    """A new calculator as a WSGI application: gunicorn --threads 8 'reference.calculator:wsgi()'."""
    return make_application(service())


class Calculator:
    """The calculator's state and its handlers (limits: see the module's docstring)."""

    def __init__(self, schema, unavailable_rate=0.0, max_namespaces=1000, max_sessions=1000,
                 max_variables=1000, tape_length=1000, namespace_bytes=1024 * 1024,
                 max_state=64 * 1024 * 1024, idle=3600):
        if max_state < namespace_bytes + NAMESPACE_BYTES:
            raise ValueError(f"max_state {max_state} cannot hold the shared namespace: it needs "
                             f"namespace_bytes and {NAMESPACE_BYTES} more, {namespace_bytes + NAMESPACE_BYTES}")
        self.lock = threading.Lock()
        self.shared = Namespace(SHARED)
        self.namespaces = {SHARED: self.shared}  # username (or SHARED) -> Namespace
        self.sessions = {}  # token -> [username, when last used]
        self.size = self.shared.overhead + namespace_bytes  # bytes kept, the shared namespace's room included
        self.unavailable_rate, self.idle = unavailable_rate, idle
        self.max_namespaces, self.max_sessions, self.max_state = max_namespaces, max_sessions, max_state
        self.max_variables, self.tape_length, self.namespace_bytes = max_variables, tape_length, namespace_bytes
        self.full = {"ErrorNamespaceFull": {"variables": max_variables, "bytes": namespace_bytes}}
        self.evaluation = Type("struct", False, schema.definition("struct.Evaluation"))

    def handlers(self):
        """Every calculator function, by name."""
        return {"fn.add": self.add, "fn.saveVariable": self.save_variable, "fn.saveVariables": self.save_variables,
                "fn.getVariable": self.get_variable, "fn.getVariables": self.get_variables,
                "fn.deleteVariable": self.delete_variable, "fn.deleteVariables": self.delete_variables,
                "fn.evaluate": self.evaluate, "fn.getPaperTape": self.get_paper_tape, "fn.export": self.export,
                "fn.import": self.import_, "fn.login": self.login, "fn.logout": self.logout}

    def identify(self, function, headers):
        """The `before` hook: the headers, with the "namespace" that `@auth_` designates."""
        auth = headers.get("@auth_")
        if function in NO_NAMESPACE:
            return headers
        if auth is None:
            name = SHARED
        elif "Ephemeral" in auth:
            name = auth["Ephemeral"]["username"]
        else:
            with self.lock:
                session = self.sessions.get(auth["Session"]["token"])
                if session is None:
                    raise Refusal(UNAUTHENTICATED)
                name, session[1] = session[0], time.monotonic()
        return {**headers, "namespace": name}

    def guard(self, function, handler, arguments, headers):
        """The `wrap` hook: call the handler holding the lock; answer a limit met with its error."""
        if self.unavailable_rate and random.random() < self.unavailable_rate:
            return UNAVAILABLE
        try:
            with self.lock:
                return handler(arguments, headers)
        except Full as full:
            log.info("%s refused: %s", function, full.result)
            return full.result

    def _namespace(self, headers, write=False):
        """The namespace the `before` hook found; kept (made if need be) for a write."""
        name = headers["namespace"]
        namespace = self.namespaces.get(name)
        if namespace is None:
            namespace = Namespace(name)
            if not write:
                return namespace
            self._make_room(namespace.overhead, namespaces=1)
            self.namespaces[name] = namespace
            self.size += namespace.overhead
        namespace.used = time.monotonic()
        return namespace

    def _make_room(self, size, namespaces=0, sessions=0):
        """Make room for `size` bytes and that many namespaces and sessions, or raise Full."""
        def fits():
            return (self.size + size <= self.max_state
                    and len(self.namespaces) - 1 + namespaces <= self.max_namespaces  # the shared one aside
                    and len(self.sessions) + sessions <= self.max_sessions)
        if not fits():
            self._forget_idle()
        if not fits():
            raise Full(UNAVAILABLE)

    def _forget_idle(self):
        """Forget the namespaces and sessions nobody has used for `idle` seconds."""
        now = time.monotonic()
        for name, namespace in list(self.namespaces.items()):
            if namespace is not self.shared and now - namespace.used > self.idle:
                self._forget(name)
        for token, (username, used) in list(self.sessions.items()):
            if now - used > self.idle:
                del self.sessions[token]
                self.size -= SESSION_BYTES + len(username.encode())

    def _forget(self, name):
        namespace = self.namespaces.pop(name)
        self.size -= namespace.overhead + namespace.size

    def _grow(self, namespace, size):
        """Count `size` more bytes in a namespace, its oldest evaluations giving way, or raise Full."""
        while namespace.tape and namespace.size + size > self.namespace_bytes:
            self._drop_oldest(namespace)
        if namespace.size + size > self.namespace_bytes:
            raise Full(self.full)
        self._keep(namespace, size)

    def _keep(self, namespace, size):
        """Keep `size` more bytes in a namespace: room is made for them unless it is the shared one."""
        if namespace is not self.shared:
            self._make_room(size)
        self._count(namespace, size)

    def _count(self, namespace, size):
        """Count `size` more (or fewer) bytes in a namespace, and in all unless it is the shared one."""
        namespace.size += size
        if namespace is not self.shared:
            self.size += size

    def _drop_oldest(self, namespace):
        entry = namespace.tape.pop(0)
        self._count(namespace, -(ENTRY_BYTES + len(entry)))

    def add(self, arguments, headers):
        return {"Ok_": {"result": arguments["x"] + arguments["y"]}}

    def save_variable(self, arguments, headers):
        return self.save_variables({"variables": {arguments["name"]: arguments["value"]}}, headers)

    def save_variables(self, arguments, headers):
        namespace = self._namespace(headers, write=True)
        new = [name for name in arguments["variables"] if name not in namespace.variables]
        if len(namespace.variables) + len(new) > self.max_variables:
            raise Full(self.full)
        self._grow(namespace, sum(VARIABLE_BYTES + len(name.encode()) for name in new))
        namespace.variables.update(arguments["variables"])
        return {"Ok_": {}}

    def get_variable(self, arguments, headers):
        name = arguments["name"]
        variables = self._namespace(headers).variables
        if name not in variables:
            return {"Ok_": {}}  # absence is an omitted optional field, not an error
        return {"Ok_": {"variable!": {"name": name, "value": variables[name]}}}

    def get_variables(self, arguments, headers):
        variables = self._namespace(headers).variables
        return {"Ok_": {"variables": [{"name": n, "value": variables[n]} for n in sorted(variables)]}}

    def delete_variable(self, arguments, headers):
        return self.delete_variables({"names": [arguments["name"]]}, headers)

    def delete_variables(self, arguments, headers):
        namespace = self._namespace(headers)
        for name in arguments["names"]:
            if namespace.variables.pop(name, None) is not None:
                self._count(namespace, -(VARIABLE_BYTES + len(name.encode())))
        return {"Ok_": {}}

    def evaluate(self, arguments, headers):
        namespace = self._namespace(headers, write=True)
        expression = arguments["expression"]
        unknown = list(dict.fromkeys(unknown_variables(expression, namespace.variables)))
        if unknown:
            result = {"ErrorUnknownVariables": {"unknownVariables": unknown}}
        else:
            try:
                value = compute(expression, namespace.variables)
            except ZeroDivisionError:
                value = None
            except OverflowError:  # too large for a float: like 1e308 * 10, it is out of range
                value = math.inf
            result = {"ErrorCannotDivideByZero": {}} if value is None else {"Ok_": {
                "result": value, "saveResult": {"fn.saveVariable": {"name": "result", "value": value}}}}
        ok = "Ok_" in result and representable(result["Ok_"]["result"])
        entry = msgpack.packb({"expression": expression, "result": result["Ok_"]["result"] if ok else 0.0,
                               "timestamp": int(time.time()), "successful": ok})
        try:
            self._grow(namespace, ENTRY_BYTES + len(entry))
        except Full:  # the tape keeps the newest evaluations that fit, and this one does not
            log.info("an evaluation of %d bytes does not fit on the tape of its namespace", len(entry))
            return result
        namespace.tape.append(entry)
        while len(namespace.tape) > self.tape_length:
            self._drop_oldest(namespace)
        return result

    def get_paper_tape(self, arguments, headers):
        newest_first = self._namespace(headers).tape[::-1]
        if "limit!" in arguments:  # a slice: a negative limit drops that many of the oldest
            newest_first = newest_first[:arguments["limit!"]]
        return {"Ok_": {"tape": [msgpack.unpackb(entry) for entry in newest_first]}}

    def export(self, arguments, headers):
        namespace = self._namespace(headers)
        evaluations = [msgpack.unpackb(entry) for entry in namespace.tape]
        return {"Ok_": {"blob": msgpack.packb({"variables": namespace.variables, "evaluations": evaluations})}}

    def import_(self, arguments, headers):
        try:
            variables, evaluations = self._read_blob(arguments["blob"])
        except ValueError as problem:
            return {"ErrorInvalidBlob": {"reason": str(problem)}}
        entries = [msgpack.packb(evaluation) for evaluation in evaluations[-self.tape_length:]]
        sizes = [ENTRY_BYTES + len(entry) for entry in entries]
        size = sum(VARIABLE_BYTES + len(name.encode()) for name in variables)
        if len(variables) > self.max_variables or size > self.namespace_bytes:
            raise Full(self.full)
        size, oldest = size + sum(sizes), 0
        while size > self.namespace_bytes:  # the oldest evaluations give way, as on any tape
            size, oldest = size - sizes[oldest], oldest + 1
        namespace = self._namespace(headers, write=True)
        self._keep(namespace, size - namespace.size)
        namespace.variables, namespace.tape = variables, entries[oldest:]
        return {"Ok_": {}}

    def _read_blob(self, blob):
        """The variables and tape in an exported blob; ValueError says what is wrong."""
        try:
            data = msgpack.unpackb(blob)
        except Exception:
            raise ValueError("the blob is not MessagePack") from None
        if type(data) is not dict or set(data) != {"variables", "evaluations"}:
            raise ValueError("the blob is not a map with exactly the keys variables and evaluations")
        variables, evaluations = data["variables"], data["evaluations"]
        if type(variables) is not dict or not all(type(name) is str and representable(value)
                                                  for name, value in variables.items()):
            raise ValueError("variables is not a map of names to numbers")
        if type(evaluations) is not list:
            raise ValueError("evaluations is not an array")
        for index, evaluation in enumerate(evaluations):
            for case in check(evaluation, self.evaluation, at("evaluations", index)):
                [(reason, details)] = case["reason"].items()
                raise ValueError(f"{json.dumps(case['path'])}: {reason} {json.dumps(details)}")
        return variables, evaluations

    def login(self, arguments, headers):
        username = arguments["username"]
        if any(username == name for name, _ in self.sessions.values()):
            return {"ErrorUsernameAlreadyInUse": {}}
        self._make_room(SESSION_BYTES + len(username.encode()), sessions=1)
        token = secrets.token_urlsafe(16)  # 128 random bits
        self.sessions[token] = [username, time.monotonic()]
        self.size += SESSION_BYTES + len(username.encode())
        return {"Ok_": {"token": token}}

    def logout(self, arguments, headers):
        session = headers["@auth_"].get("Session")
        username = self.sessions.get(session["token"], [None])[0] if session else None
        if username is None:
            return UNAUTHENTICATED
        if username != arguments["username"]:
            return {"ErrorUnauthorized_": {
                "message!": "Session authentication must match the requested username."}}
        del self.sessions[session["token"]]
        self.size -= SESSION_BYTES + len(username.encode())
        if username in self.namespaces and username != SHARED:
            self._forget(username)
        return {"Ok_": {}}


def unknown_variables(expression, variables):
    """Yield the names of the variables an expression uses that are not stored, left to right."""
    [(tag, fields)] = expression.items()
    if tag == "Variable":
        if fields["name"] not in variables:
            yield fields["name"]
    elif tag != "Constant":
        yield from unknown_variables(fields["left"], variables)
        yield from unknown_variables(fields["right"], variables)


OPERATIONS = {"Add": operator.add, "Sub": operator.sub, "Mul": operator.mul,
              "Div": operator.truediv}  # which raises ZeroDivisionError for 0 and 0.0


def compute(expression, variables):
    """The value of an expression whose variables are all stored."""
    [(tag, fields)] = expression.items()
    if tag == "Constant":
        return fields["value"]
    if tag == "Variable":
        return variables[fields["name"]]
    return OPERATIONS[tag](compute(fields["left"], variables), compute(fields["right"], variables))


def representable(number):
    """Whether the protocol can carry `number`, as the validator judges a number field."""
    return not any(check(number, NUMBER))
