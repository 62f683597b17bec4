"""The demo service: a calculator with variables, a paper tape, export/import and sessions.

How this works
--------------
Each function of the schema (schemas/calculator.json, the same as the
conformance suite ships for every implementation) has a handler here, `handler(arguments,
headers)` returning a result. Two hooks serve them all: `identify` (before)
turns `@auth_` into the namespace a call uses, and `locked` (wrap) holds the
lock around each call of its memory and answers a limit met with its error.

A call without `@auth_` uses the shared namespace; `Ephemeral {username}`
that user's; `Session {token}` that of the user who got the token from
`fn.login`. A namespace is made by its first write; reading a missing one
reads empty. An evaluation goes on the tape, a failed one as 0.0 and
unsuccessful, newest shown first; one too deep to be sent back on a tape, or
too large for the room its namespace has left, is not kept (the log says
so). What is kept, and within which limits, is memory.py's job.
"""

import json
import logging
import math
import operator
import random
import threading
import time
from importlib import resources

import msgpack

from ..protocol import Refusal
from ..protocol.codec import deeper
from ..protocol.limits import MAX_DEPTH, MAX_INT64, MIN_INT64
from ..protocol.service import UNAUTHENTICATED
from ..protocol.types import Type
from ..protocol.validate import at, check
from ..sources import load
from ..transports import asgi as asgi_, wsgi as wsgi_
from .memory import SHARED, UNAVAILABLE, Full, Memory, evaluations

log = logging.getLogger("reference")

NO_NAMESPACE = ("fn.add", "fn.login")  # which ignore @auth_
PURE = ("fn.add",)  # which touch no state: called without the lock, so that they never wait for it
NUMBER = Type("number")
TAPE_LEVELS = 5  # levels of a tape answer around an evaluation's expression: [{}, {"Ok_": {"tape": [{...
# Each level of an expression takes two of a message's and at least 34 bytes of MessagePack (an
# operation and its other operand): one too deep for a tape takes more than SHALLOW bytes.
SHALLOW = 34 * (MAX_DEPTH - TAPE_LEVELS) // 2


def entries():
    """The calculator's schema entries (the conformance suite ships the same, for every implementation)."""
    return json.loads(resources.files("reference").joinpath("schemas", "calculator.json").read_text(encoding="utf-8"))


def service(kind=None, unavailable_rate=0.0, **limits):
    """A Service answering with a new Calculator: of `kind`, the core's `protocol.Service` or by default
    the engine room's (imported only then); `limits` go to Memory (memory.py)."""
    schema = load(entries())
    calculator = Calculator(schema, Memory(**limits), unavailable_rate)
    if kind is None:
        from ..engine import Service as kind
    return kind(schema, calculator.handlers(), before=calculator.identify, wrap=calculator.locked)


STATE = "variables, tapes and sessions"  # what a calculator keeps in its process


def wsgi():
    """A new calculator as a WSGI application: gunicorn --threads 8 'reference.services.calculator:wsgi()'."""
    return wsgi_.make_application(service(), state=STATE)


def asgi():
    """A new calculator as an ASGI application: uvicorn --factory reference.services.calculator:asgi."""
    return asgi_.make_application(service(), state=STATE)


class Calculator:
    """The calculator's handlers and hooks, over its Memory."""

    def __init__(self, schema, memory, unavailable_rate=0.0):
        self.memory, self.unavailable_rate = memory, unavailable_rate
        self.lock = threading.Lock()
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
                name = self.memory.user(auth["Session"]["token"])
            if name is None:
                raise Refusal(UNAUTHENTICATED)
        return {**headers, "namespace": name}

    def locked(self, function, handler, arguments, headers):
        """The `wrap` hook: call the handler holding the lock (a PURE one without); answer a limit met
        with its error."""
        if self.unavailable_rate and random.random() < self.unavailable_rate:
            return UNAVAILABLE
        if function in PURE:
            return handler(arguments, headers)
        try:
            with self.lock:
                return handler(arguments, headers)
        except Full as full:
            log.info("%s refused: %s", function, full.result)
            return full.result

    def add(self, arguments, headers):
        return {"Ok_": {"result": whole(arguments["x"] + arguments["y"])}}

    def save_variable(self, arguments, headers):
        return self.save_variables({"variables": {arguments["name"]: arguments["value"]}}, headers)

    def save_variables(self, arguments, headers):
        self.memory.save(self.memory.namespace(headers["namespace"], write=True), arguments["variables"])
        return {"Ok_": {}}

    def get_variable(self, arguments, headers):
        name, variables = arguments["name"], self.memory.namespace(headers["namespace"]).variables
        if name not in variables:
            return {"Ok_": {}}  # absence is an omitted optional field, not an error
        return {"Ok_": {"variable!": {"name": name, "value": variables[name]}}}

    def get_variables(self, arguments, headers):
        variables = self.memory.namespace(headers["namespace"]).variables
        return {"Ok_": {"variables": [{"name": n, "value": variables[n]} for n in sorted(variables)]}}

    def delete_variable(self, arguments, headers):
        return self.delete_variables({"names": [arguments["name"]]}, headers)

    def delete_variables(self, arguments, headers):
        self.memory.delete(self.memory.namespace(headers["namespace"]), arguments["names"])
        return {"Ok_": {}}

    def evaluate(self, arguments, headers):
        namespace = self.memory.namespace(headers["namespace"], write=True)
        expression = arguments["expression"]
        result = outcome(expression, namespace.variables)
        ok = "Ok_" in result and representable(result["Ok_"]["result"])
        evaluation = {"expression": expression, "result": result["Ok_"]["result"] if ok else 0.0,
                      "timestamp": int(time.time()), "successful": ok}
        entry = msgpack.packb(evaluation, strict_types=True)  # (exact types, as decoded: faster)
        if len(entry) > SHALLOW and not sendable(evaluation):
            log.info("an evaluation too deep to be sent back on a tape is not kept")
        elif not self.memory.record(namespace, entry):
            log.info("an evaluation too large for the tape of its namespace is not kept")
        return result

    def get_paper_tape(self, arguments, headers):
        newest_first = self.memory.namespace(headers["namespace"]).tape[::-1]
        if "limit!" in arguments:  # a slice: a negative limit drops that many of the oldest
            newest_first = newest_first[:arguments["limit!"]]
        return {"Ok_": {"tape": evaluations(newest_first)}}

    def export(self, arguments, headers):
        namespace = self.memory.namespace(headers["namespace"])
        kept = evaluations(namespace.tape)
        return {"Ok_": {"blob": msgpack.packb({"variables": namespace.variables, "evaluations": kept})}}

    def import_(self, arguments, headers):
        try:
            variables, evaluations = self.read_blob(arguments["blob"])
        except ValueError as problem:
            return {"ErrorInvalidBlob": {"reason": str(problem)}}
        self.memory.replace(self.memory.namespace(headers["namespace"], write=True), variables, evaluations)
        return {"Ok_": {}}

    def read_blob(self, blob):
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
            if not sendable(evaluation):
                raise ValueError(f"evaluations[{index}] nests too deeply to be sent back on a tape")
        return variables, evaluations

    def login(self, arguments, headers):
        username = arguments["username"]
        if any(username == name for name, _ in self.memory.sessions.values()):
            return {"ErrorUsernameAlreadyInUse": {}}
        return {"Ok_": {"token": self.memory.open_session(username)}}

    def logout(self, arguments, headers):
        session = headers["@auth_"].get("Session")
        username = self.memory.sessions.get(session["token"], [None])[0] if session else None
        if username is None:
            return UNAUTHENTICATED
        if username != arguments["username"]:
            return {"ErrorUnauthorized_": {"message!": "Session authentication must match the requested username."}}
        self.memory.close_session(session["token"])
        return {"Ok_": {}}


def outcome(expression, variables):
    """The result of evaluating `expression`: unknown variables are named before a division by zero
    is told, wherever each is (computing first, as most expressions are fine)."""
    try:
        value = compute(expression, variables)
    except (KeyError, ZeroDivisionError, OverflowError) as error:
        unknown = list(dict.fromkeys(unknown_variables(expression, variables)))
        if unknown:
            return {"ErrorUnknownVariables": {"unknownVariables": unknown}}
        if isinstance(error, ZeroDivisionError):
            return {"ErrorCannotDivideByZero": {}}
        value = math.inf  # too large for a float: like 1e308 * 10, it is out of range
    return {"Ok_": {"result": value, "saveResult": {"fn.saveVariable": {"name": "result", "value": value}}}}


def unknown_variables(expression, variables):
    """The names of the variables an expression uses that are not stored, left to right."""
    unknown, waiting = [], [expression]
    while waiting:
        [(tag, fields)] = waiting.pop().items()
        if tag == "Variable" and fields["name"] not in variables:
            unknown.append(fields["name"])
        elif tag not in ("Constant", "Variable"):
            waiting += fields["right"], fields["left"]  # the left one next
    return unknown


OPERATIONS = {"Add": operator.add, "Sub": operator.sub, "Mul": operator.mul,
              "Div": operator.truediv}  # which raises ZeroDivisionError for 0 and 0.0


def compute(expression, variables):
    """The value of an expression whose variables are all stored."""
    [tag] = expression
    fields = expression[tag]
    if tag == "Constant":
        return fields["value"]
    if tag == "Variable":
        return variables[fields["name"]]
    value = OPERATIONS[tag](compute(fields["left"], variables), compute(fields["right"], variables))
    return value if MIN_INT64 <= value <= MAX_INT64 else float(value)  # whole(value), inline: once a level


def whole(number):
    """A result as the protocol carries it: a whole number stays whole while 64 bits hold it; past
    them it is the nearest double, as in any calculator of doubles (OverflowError past the largest)."""
    return number if MIN_INT64 <= number <= MAX_INT64 else float(number)  # (a float past them stays as it is)


def representable(number):
    """Whether the protocol can carry `number`, as the validator judges a number field."""
    return not any(check(number, NUMBER))


def sendable(evaluation):
    """Whether an evaluation can go back on a tape: within MAX_DEPTH levels, with those around it."""
    return not deeper(evaluation["expression"], MAX_DEPTH - TAPE_LEVELS)
