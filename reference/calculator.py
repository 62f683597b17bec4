"""The demo service: a calculator with variables, a paper tape, export/import and sessions.

How this works
--------------
State lives in memory, under one lock, in namespaces. A call without `@auth_`
uses the shared namespace; `Ephemeral {username}` uses that user's namespace,
no questions asked; `Session {token}` uses the namespace of the user who logged
in with `fn.login` and got that token (an unknown token is refused). Each
namespace holds variables and a paper tape of every evaluation, failed ones
included (with result 0.0 and successful false).

`Calculator().handlers()` maps every function of `schemas/calculator.json` to
a method, ready for `Service`.
"""

import math
import random
import secrets
import threading
import time
from collections import OrderedDict

import msgpack

from .schema import bundled, load
from .types import Type
from .service import UNAUTHENTICATED, Service
from .validate import MAX_INT64, MIN_INT64, at, check

SHARED = None  # the namespace of calls without @auth_


class Unauthenticated(Exception):
    """The `@auth_` header names a session that does not exist."""


class Namespace:
    """One user's variables and paper tape (oldest evaluation first)."""

    def __init__(self):
        self.variables = {}
        self.tape = []


def service(**options):
    """A Service answering with a new Calculator; `options` go to Calculator()."""
    schema = load(bundled("calculator"))
    return Service(schema, Calculator(schema, **options).handlers())


class Calculator:
    """The calculator's state and its handlers.

    State is bounded: at most `max_namespaces` namespaces (the least recently
    used one is forgotten to make room), `max_sessions` sessions (the oldest
    ends), `max_variables` variables in a namespace (more are refused) and
    `tape_length` evaluations on its tape (the oldest are dropped)."""

    def __init__(self, schema, unavailable_rate=0.0, max_namespaces=1000, max_sessions=1000,
                 max_variables=1000, tape_length=1000):
        self.lock = threading.Lock()
        self.namespaces = OrderedDict()  # username (or SHARED) -> Namespace, least recently used first
        self.sessions = OrderedDict()  # token -> username, oldest first
        self.unavailable_rate = unavailable_rate
        self.max_namespaces, self.max_sessions = max_namespaces, max_sessions
        self.max_variables, self.tape_length = max_variables, tape_length
        self.evaluation = Type("struct", False, schema.definition("struct.Evaluation"))

    def handlers(self):
        """Every calculator function, wrapped to fail at `unavailable_rate` and to refuse
        unknown session tokens."""
        methods = {
            "fn.add": self.add, "fn.saveVariable": self.save_variable,
            "fn.saveVariables": self.save_variables, "fn.getVariable": self.get_variable,
            "fn.getVariables": self.get_variables, "fn.deleteVariable": self.delete_variable,
            "fn.deleteVariables": self.delete_variables, "fn.evaluate": self.evaluate,
            "fn.getPaperTape": self.get_paper_tape, "fn.export": self.export,
            "fn.import": self.import_, "fn.login": self.login, "fn.logout": self.logout,
        }
        return {name: self._guarded(method) for name, method in methods.items()}

    def _guarded(self, method):
        def handler(arguments, headers):
            if self.unavailable_rate and random.random() < self.unavailable_rate:
                return {"ErrorUnavailable": {}}
            try:
                with self.lock:
                    return method(arguments, headers)
            except Unauthenticated:
                return UNAUTHENTICATED
        return handler

    def _namespace(self, headers):
        """The namespace the `@auth_` header (or its absence) designates."""
        auth = headers.get("@auth_")
        if auth is None:
            name = SHARED
        elif "Ephemeral" in auth:
            name = auth["Ephemeral"]["username"]
        elif auth["Session"]["token"] in self.sessions:
            name = self.sessions[auth["Session"]["token"]]
        else:
            raise Unauthenticated()
        if name in self.namespaces:
            self.namespaces.move_to_end(name)
        else:
            self.namespaces[name] = Namespace()
            if len(self.namespaces) > self.max_namespaces:
                self.namespaces.popitem(last=False)
        return self.namespaces[name]

    def add(self, arguments, headers):
        return {"Ok_": {"result": arguments["x"] + arguments["y"]}}

    def save_variable(self, arguments, headers):
        return self.save_variables({"variables": {arguments["name"]: arguments["value"]}}, headers)

    def save_variables(self, arguments, headers):
        variables = self._namespace(headers).variables
        if len(variables.keys() | arguments["variables"].keys()) > self.max_variables:
            return {"ErrorTooManyVariables": {"limit": self.max_variables}}
        variables.update(arguments["variables"])
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
        self._namespace(headers).variables.pop(arguments["name"], None)
        return {"Ok_": {}}

    def delete_variables(self, arguments, headers):
        variables = self._namespace(headers).variables
        for name in arguments["names"]:
            variables.pop(name, None)
        return {"Ok_": {}}

    def evaluate(self, arguments, headers):
        namespace = self._namespace(headers)
        expression = arguments["expression"]
        unknown = list(dict.fromkeys(unknown_variables(expression, namespace.variables)))
        if unknown:
            result = {"ErrorUnknownVariables": {"unknownVariables": unknown}}
        else:
            try:
                value = compute(expression, namespace.variables)
                result = {"Ok_": {"result": value,
                                  "saveResult": {"fn.saveVariable": {"name": "result", "value": value}}}}
            except ZeroDivisionError:
                result = {"ErrorCannotDivideByZero": {}}
        ok = "Ok_" in result and representable(result["Ok_"]["result"])
        namespace.tape.append({"expression": expression,
                               "result": result["Ok_"]["result"] if ok else 0.0,
                               "timestamp": int(time.time()), "successful": ok})
        del namespace.tape[:-self.tape_length]
        return result

    def get_paper_tape(self, arguments, headers):
        newest_first = self._namespace(headers).tape[::-1]
        if "limit!" in arguments:  # a slice: a negative limit drops that many of the oldest
            newest_first = newest_first[:arguments["limit!"]]
        return {"Ok_": {"tape": newest_first}}

    def export(self, arguments, headers):
        namespace = self._namespace(headers)
        blob = msgpack.packb({"variables": namespace.variables, "evaluations": namespace.tape})
        return {"Ok_": {"blob": blob}}

    def import_(self, arguments, headers):
        namespace = self._namespace(headers)
        try:
            variables, tape = self._read_blob(arguments["blob"])
        except ValueError as problem:
            return {"ErrorInvalidBlob": {"reason": str(problem)}}
        namespace.variables, namespace.tape = variables, tape[-self.tape_length:]
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
        if type(variables) is not dict or not all(
                type(name) is str and type(value) in (int, float) and representable(value)
                for name, value in variables.items()):
            raise ValueError("variables is not a map of names to numbers")
        if len(variables) > self.max_variables:
            raise ValueError(f"the blob holds {len(variables)} variables; a namespace holds at most "
                             f"{self.max_variables}")
        if type(evaluations) is not list:
            raise ValueError("evaluations is not an array")
        for index, evaluation in enumerate(evaluations):
            for case in check(evaluation, self.evaluation, at("evaluations", index)):
                [(reason, details)] = case["reason"].items()
                raise ValueError(f"{'.'.join(map(str, case['path']))}: {reason} {details}".rstrip())
        return {name: float(value) for name, value in variables.items()}, evaluations

    def login(self, arguments, headers):
        username = arguments["username"]
        if username in self.sessions.values():
            return {"ErrorUsernameAlreadyInUse": {}}
        token = secrets.token_urlsafe(16)  # 128 random bits
        self.sessions[token] = username
        if len(self.sessions) > self.max_sessions:
            self.sessions.popitem(last=False)
        return {"Ok_": {"token": token}}

    def logout(self, arguments, headers):
        session = headers["@auth_"].get("Session")
        username = self.sessions.get(session["token"]) if session else None
        if username is None:
            raise Unauthenticated()
        if username != arguments["username"]:
            return {"ErrorUnauthorized_": {
                "message!": "Session authentication must match the requested username."}}
        del self.sessions[session["token"]]
        self.namespaces.pop(username, None)
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


OPERATIONS = {
    "Add": lambda left, right: left + right,
    "Sub": lambda left, right: left - right,
    "Mul": lambda left, right: left * right,
    "Div": lambda left, right: left / right,  # raises ZeroDivisionError for 0 and 0.0
}


def compute(expression, variables):
    """The value of an expression whose variables are all stored."""
    [(tag, fields)] = expression.items()
    if tag == "Constant":
        return fields["value"]
    if tag == "Variable":
        return variables[fields["name"]]
    return OPERATIONS[tag](compute(fields["left"], variables), compute(fields["right"], variables))


def representable(number):
    """Whether the protocol can carry `number`: a finite float or a 64-bit integer."""
    if type(number) is float:
        return math.isfinite(number)
    return MIN_INT64 <= number <= MAX_INT64
