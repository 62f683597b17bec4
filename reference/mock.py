"""The mock server: any live server's schema, answered with stubs or generated values.

How this works
--------------
A mock is an ordinary `Service`: the public schema of a live server (fetched
with `fn.api_`, or read from a saved copy) plus the mock's control functions
from `schemas/mock.json`, which `fn.api_` shows only with `includeInternal!`.
It validates requests exactly like the live server, because it is the same
core. Every function of the schema gets the same handler, `Mock.answer`:

1. record the call, `{"fn.name": arguments}`;
2. answer with the result of the newest stub that matches and has uses left,
   its missing required fields generated;
3. otherwise generate a result (or, with generation off and no `@gen_: true`
   header, answer `ErrorNoMatchingStub_`).

How a stub matches a call is in stubs.py. `fn.verify_` counts the recorded
calls that match in the same way and marks them verified, which is what
`fn.verifyNoMoreInteractions_` looks at.

Values come from the seeded generator of `generate.py`: a mock answers the
same calls with the same values every time it starts, or after
`fn.setRandomSeed_`.
"""

import argparse
import functools
import json
import os
import sys
import threading
import time
import urllib.parse
from pathlib import Path

import msgpack

from . import server
from .client import Client, NotAMessage, TransportError, Unreachable
from .generate import Context, Random, generate_fields
from .schema import SchemaError, bundled, load
from .types import Type
from .service import Service
from .stubs import fill, matches

NO_MATCHING_STUB = {"ErrorNoMatchingStub_": {}}


class Mock:
    """The stubs, recorded calls and random values of one mock server."""

    def __init__(self, schema, seed=0, optional="random", length=(0, 3), generation=True,
                 max_stubs=1000, max_calls=10_000, max_bytes=64 * 1024 * 1024):
        self.schema, self.generation = schema, generation
        self.random, self.optional, self.length = Random(seed), optional, length
        self.max_stubs, self.max_calls, self.max_bytes = max_stubs, max_calls, max_bytes
        self.lock = threading.Lock()
        self.stubs = []  # oldest first: [function, arguments, result (MessagePack), strict, uses left, bytes]
        self.calls = []  # oldest first: [call (MessagePack), verified]
        self.stub_bytes = self.call_bytes = 0

    def handlers(self):
        """A handler for every function: the service's own get `answer`, the mock's own theirs."""
        own = {name: functools.partial(self.answer, name)
               for name in self.schema.functions if not name.endswith("_")}
        return {**own, "fn.createStub_": self.create_stub, "fn.verify_": self.verify,
                "fn.verifyNoMoreInteractions_": self.verify_no_more_interactions,
                "fn.clearStubs_": self.clear_stubs, "fn.clearCalls_": self.clear_calls,
                "fn.setRandomSeed_": self.set_random_seed}

    def answer(self, name, arguments, headers):
        """Answer a call of the mocked service."""
        function = self.schema.functions[name]
        call = msgpack.packb({name: arguments})
        with self.lock:
            self.calls.append([call, False])
            self.call_bytes += len(call)
            while len(self.calls) > self.max_calls or self.call_bytes > self.max_bytes // 2:
                self.call_bytes -= len(self.calls.pop(0)[0])
            stubs = self.stubs[::-1]  # newest first; matched outside the lock
        stub = next((stub for stub in stubs if stub[0] == name and stub[4] != 0
                     and matches(stub[1], arguments, stub[3])), None)
        with self.lock:
            if stub is not None and stub[4] != 0:  # (another call may have used it up meanwhile)
                if stub[4] > 0:
                    stub[4] -= 1
                # A stub's missing required fields are made without optional fields.
                context = Context(self.random, "none", self.length, function)
                return fill(msgpack.unpackb(stub[2]), Type("union", False, function.result), context)
            if not self.generation and headers.get("@gen_") is not True:
                return NO_MATCHING_STUB
            context = Context(self.random, self.optional, self.length, function)
            return {"Ok_": generate_fields(function.result.tags["Ok_"], context)}

    def create_stub(self, arguments, headers):
        stub = arguments["stub"]
        [name] = [key for key in stub if key.startswith("fn.")]
        result = msgpack.packb(stub["->"])
        size = footprint(stub[name]) + len(result)
        with self.lock:
            self.stubs.append([name, stub[name], result, arguments.get("strictMatch!", False),
                               arguments.get("count!", -1), size])
            self.stub_bytes += size
            while len(self.stubs) > self.max_stubs or self.stub_bytes > self.max_bytes // 2:
                self.stub_bytes -= self.stubs.pop(0)[5]
        return {"Ok_": {}}

    def verify(self, arguments, headers):
        [(name, wanted)] = arguments["call"].items()
        strict = arguments.get("strictMatch!", False)
        criteria = arguments.get("count!", {"AtLeast": {"times": 1}})
        [(kind, times)] = [(kind, fields["times"]) for kind, fields in criteria.items()]
        with self.lock:
            records = list(self.calls)  # matched outside the lock
        calls = [msgpack.unpackb(call) for call, _ in records]
        matching = [record for record, call in zip(records, calls)
                    if name in call and matches(wanted, call[name], strict)]
        with self.lock:
            for record in matching:
                record[1] = True  # verified, whether or not this verification passes
        found = len(matching)
        too_many = kind in ("Exact", "AtMost") and found > times
        too_few = kind in ("Exact", "AtLeast") and found < times
        if not (too_many or too_few):
            return {"Ok_": {}}
        reason = "TooManyMatchingCalls" if too_many else "TooFewMatchingCalls"
        return {"ErrorVerificationFailure": {"reason": {reason: {
            "wanted": criteria, "found": found, "allCalls": calls}}}}

    def verify_no_more_interactions(self, arguments, headers):
        with self.lock:
            unverified = [call for call, verified in self.calls if not verified]
        if unverified:
            return {"ErrorVerificationFailure": {"additionalUnverifiedCalls": list(map(msgpack.unpackb, unverified))}}
        return {"Ok_": {}}

    def clear_stubs(self, arguments, headers):
        with self.lock:
            self.stubs.clear()
            self.stub_bytes = 0
        return {"Ok_": {}}

    def clear_calls(self, arguments, headers):
        with self.lock:
            self.calls.clear()
            self.call_bytes = 0
        return {"Ok_": {}}

    def set_random_seed(self, arguments, headers):
        with self.lock:
            self.random.seed(arguments["seed"])
        return {"Ok_": {}}


def footprint(value):
    """About how many bytes of memory `value` takes: every object it holds, counted."""
    size = sys.getsizeof(value)
    if type(value) is dict:
        return size + sum(footprint(key) + footprint(element) for key, element in value.items())
    if type(value) is list:
        return size + sum(map(footprint, value))
    return size


def service(source, **options):
    """A mock Service for the schema `source`: anything `load()` takes, a loaded Schema too."""
    schema = load(source, internal=[bundled("mock")])
    return Service(schema, Mock(schema, **options).handlers())


def fetch(url, attempts=10, pause=0.5):
    """The public schema of the live server at `url`, asked for with `fn.api_`.

    Retries for a while, so that a mock can start beside a server that is starting too."""
    with Client(url, timeout=5) as client:
        for attempt in range(attempts):
            try:
                _, body = client.call("fn.api_")
                break
            except Unreachable as error:
                if attempt == attempts - 1:
                    raise Unreachable(f"{error} (tried {attempts} times in {attempts * pause:g} s)") from None
                time.sleep(pause)
    api = body.get("Ok_", {}).get("api")
    if not isinstance(api, list):
        raise NotAMessage(f"{url} answered fn.api_ with {json.dumps(body)[:200]}, not a schema")
    return api


def default_cache(url):
    """Where the schema fetched from `url` is saved unless --cache says otherwise."""
    parts = urllib.parse.urlsplit(url)
    name = f"{parts.hostname}-{parts.port or 80}{parts.path}".replace("/", "_")
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root / "sdms-reference" / f"{name}.json"


def main(argv=None):
    """Serve a mock of a live server's schema until interrupted."""
    parser = server.Parser(
        prog="python -m reference.mock",
        description="Serve a mock built from a live server's schema (or a saved copy): it "
                    "validates like the server and answers with stubs or generated values.")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--schema-url", metavar="URL", type=_http_url, help="fetch the schema from this "
                        "live server (fn.api_, over http://) and save a copy in the cache file")
    source.add_argument("--schema-file", metavar="FILE", help="read the schema from a saved JSON file")
    source.add_argument("--schema-dir", metavar="DIR", help="read the schema from a directory of JSON files")
    parser.add_argument("--cache", metavar="FILE", help="where --schema-url saves the schema (default "
                        "$XDG_CACHE_HOME/sdms-reference/HOST-PORT_PATH.json, where $XDG_CACHE_HOME is "
                        "~/.cache unless set)")
    server.add_options(parser, port=8080)
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated values (default 0)")
    parser.add_argument("--collection-length", type=int, nargs=2, default=(0, 3), metavar=("MIN", "MAX"),
                        help="generated arrays and maps have at least MIN and fewer than MAX elements, "
                             "or exactly MIN if MAX is MIN (default 0 3: 0, 1 or 2)")
    optional = parser.add_mutually_exclusive_group()
    optional.add_argument("--no-optional-fields", dest="optional", action="store_const", const="none",
                          default="random", help="never generate optional fields")
    optional.add_argument("--all-optional-fields", dest="optional", action="store_const", const="all",
                          help="always generate optional fields (default: a coin decides each)")
    parser.add_argument("--no-generation", action="store_true",
                        help="answer unstubbed calls with ErrorNoMatchingStub_ instead of generated values")
    parser.add_argument("--max-stubs", type=server.positive, default=1000, metavar="N",
                        help="stubs kept; the oldest is dropped (default %(default)s)")
    parser.add_argument("--max-calls", type=server.positive, default=10_000, metavar="N",
                        help="calls recorded; the oldest is forgotten (default %(default)s)")
    parser.add_argument("--max-bytes", type=server.positive, default=64 * 1024 * 1024, metavar="N",
                        help="memory for stubs and recorded calls, half each; beyond, the oldest give way "
                             "(default %(default)s)")
    options = parser.parse_args(argv)
    low, high = options.collection_length
    if not 0 <= low <= high:
        parser.error("--collection-length needs 0 <= MIN <= MAX")
    server.check_options(parser, options)
    try:
        source = _source(options)
        mock = service(source, seed=options.seed, optional=options.optional, length=(low, max(high, low)),
                       generation=not options.no_generation, max_stubs=options.max_stubs,
                       max_calls=options.max_calls, max_bytes=options.max_bytes)
    except (TransportError, OSError, SchemaError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return server.run(mock, options, f"a mock of {options.schema_url or source}")


def _http_url(text):
    try:
        Client(text)  # which knows what URL it can call
    except ValueError as error:
        https = "https://" in str(error)
        hint = "; fetch the schema over http://, or save it to a file and use --schema-file" if https else ""
        raise argparse.ArgumentTypeError(f"{error}{hint}") from None
    return text


def _source(options):
    """The schema to mock: fetched (and saved), or the path of a saved copy."""
    if options.schema_file or options.schema_dir:
        path = Path(options.schema_file or options.schema_dir)
        if not path.exists():
            raise OSError(f"cannot read the schema: {path} does not exist")
        return path
    api = fetch(options.schema_url)
    cache = Path(options.cache) if options.cache else default_cache(options.schema_url)
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(api, indent=2) + "\n", encoding="utf-8")
    except OSError as error:
        raise OSError(f"cannot save the schema to {cache}: {error.strerror}") from None
    print(f"Saved the schema of {options.schema_url} to {cache}; without the server, "
          f"start with --schema-file {cache}", flush=True)
    return api


if __name__ == "__main__":
    sys.exit(main())
