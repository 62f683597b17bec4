"""`python -m reference.mock`: serve a mock of a live server's schema.

How this works
--------------
The schema comes from a live server (`--schema-url`, fetched with `fn.api_`
and saved in a cache file, which is used, with a line saying so, whenever
that server cannot be reached), or from a saved copy (`--schema-file`,
`--schema-dir`). `--stubs DIR` loads stubs from the JSON files of a folder
before the first request, each checked as `fn.createStub_` checks one. The
mock itself is mocking.py's; cli.py serves it as it serves every server.
"""

import argparse
import json
import os
import sys
import time
import urllib.parse
from datetime import datetime
from pathlib import Path

from . import mocking
from . import sources
from .sources import load, parse_json, read_file
from .cli import (Parser, add_server_options, check_server_options, core_only, interruptible, positive, seconds,
                  serve)
from .http_client import Client, TimedOut, TransportError, Unreachable
from .protocol.documents import SchemaError


@interruptible
def main(argv=None):
    """Serve a mock of a live server's schema until interrupted."""
    parser = Parser(
        prog="python -m reference.mock",
        description="Serve a mock built from a live server's schema (or a saved copy): it "
                    "validates like the server and answers with stubs or generated values.")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--schema-url", metavar="URL", type=_http_url, help="fetch the schema from this "
                        "live server (fn.api_, over http:// or https://) and save a copy in the cache file, "
                        "which is used when the server cannot be reached")
    source.add_argument("--schema-file", metavar="FILE", help="read the schema from a saved JSON file")
    source.add_argument("--schema-dir", metavar="DIR", help="read the schema from a directory of JSON files")
    parser.add_argument("--wait", type=seconds, default=10, metavar="SECONDS",
                        help="how long --schema-url waits for the server to answer (default %(default)s)")
    parser.add_argument("--cafile", metavar="FILE", help="trust the certificate authority in this PEM file "
                        "for an https:// --schema-url (by default, the system's authorities)")
    parser.add_argument("--cache", metavar="FILE", help="where --schema-url saves the schema, replaced only by "
                        "one that loads (default $XDG_CACHE_HOME/sdms-reference/HOST-PORT_PATH.json, where "
                        "$XDG_CACHE_HOME is ~/.cache unless set)")
    parser.add_argument("--stubs", metavar="DIR", help="load the stubs in the *.json files of DIR at start: "
                        "each holds a stub, {\"fn.name\": arguments, \"->\": result}, what fn.createStub_ takes "
                        "(with strictMatch! and count!), or an array of those")
    add_server_options(parser, port=8080)
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated values (default %(default)s)")
    parser.add_argument("--collection-length", type=int, nargs=2, default=mocking.LENGTH, metavar=("MIN", "MAX"),
                        help="generated arrays and maps have at least MIN and fewer than MAX elements, or "
                             "exactly MIN if MAX is MIN (default %s %s)" % mocking.LENGTH)
    optional = parser.add_mutually_exclusive_group()
    optional.add_argument("--no-optional-fields", dest="optional", action="store_const", const="none",
                          default="random", help="never generate optional fields")
    optional.add_argument("--all-optional-fields", dest="optional", action="store_const", const="all",
                          help="always generate optional fields (default: a coin decides each)")
    parser.add_argument("--no-generation", action="store_true",
                        help="answer unstubbed calls with ErrorNoMatchingStub_ instead of generated values")
    parser.add_argument("--max-stubs", type=positive, default=mocking.MAX_STUBS, metavar="N",
                        help="stubs kept; the oldest is dropped (default %(default)s)")
    parser.add_argument("--max-calls", type=positive, default=mocking.MAX_CALLS, metavar="N",
                        help="calls recorded; the oldest is forgotten (default %(default)s)")
    parser.add_argument("--max-state", type=positive, default=mocking.MAX_STATE, metavar="BYTES",
                        help="bytes of state kept in all: stubs and recorded calls, half each; beyond, the "
                             "oldest give way (default %(default)s)")
    options = parser.parse_args(argv)
    low, high = options.collection_length
    if not 0 <= low <= high:
        parser.error("--collection-length needs 0 <= MIN <= MAX")
    check_server_options(parser, options)
    if options.cafile and not options.schema_url:
        parser.error("--cafile is for an https:// --schema-url")
    try:
        source = _schema_source(options)
        service = mocking.service(source, core_only(options), seed=options.seed, optional=options.optional,
                                  length=(low, max(high, low)), generation=not options.no_generation,
                                  max_stubs=options.max_stubs, max_calls=options.max_calls,
                                  max_state=options.max_state)
        if options.stubs:
            count = load_stubs(service, Path(options.stubs))
            print(f"Loaded {count} stub{'s' * (count != 1)} from {options.stubs}", flush=True)
    except (TransportError, OSError, SchemaError, ValueError) as error:
        return parser.fail(str(error))
    return serve(service, options, f"a mock of {options.schema_url or source}", parser)


def _http_url(text):
    try:
        Client(text)  # which knows what URL it can call
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def _schema_source(options):
    """The schema to mock: fetched (and saved), the path of a saved copy, or the cache of a server
    that cannot be reached."""
    if options.schema_file or options.schema_dir:
        path = Path(options.schema_file or options.schema_dir)
        sources.read(path)  # (ValueError, in one line, if it cannot be read at all)
        return path
    cache = Path(options.cache) if options.cache else default_cache(options.schema_url)
    try:
        api = fetch(options.schema_url, options.wait, options.cafile)
    except (Unreachable, TimedOut) as error:  # the server is down: what it said before will do
        if not cache.is_file():
            raise TransportError(f"{error}; and no schema of it was saved before in {cache}") from None
        saved = datetime.fromtimestamp(cache.stat().st_mtime).strftime("%Y-%m-%d %H:%M")
        print(f"{error}: using the schema saved in {cache} on {saved}", flush=True)
        return cache
    load(api)  # checked before it is kept (SchemaError): a copy saved before stays as it was
    sources.write_file(cache, json.dumps(api, indent=2) + "\n")
    print(f"Saved the schema of {options.schema_url} to {cache}; without the server, "
          f"start with --schema-file {cache}", flush=True)
    return api


def fetch(url, wait, cafile=None, pause=0.2):
    """The public schema of the live server at `url`, retried for `wait` seconds while it starts."""
    deadline, tries = time.monotonic() + wait, 0
    with Client(url, timeout=max(wait, 1), cafile=cafile) as client:
        while True:
            try:
                return client.schema()
            except Unreachable as error:
                if time.monotonic() + pause > deadline:
                    raise Unreachable(f"{error} (waited {wait:g} s)") from None
                tries += 1
                if tries == 1:
                    print(f"Waiting up to {wait:g} s for {url} to answer (see --wait)...", flush=True)
                time.sleep(pause)


def default_cache(url):
    """Where the schema fetched from `url` is saved unless --cache says otherwise."""
    parts = urllib.parse.urlsplit(url)
    name = f"{parts.hostname}-{parts.port or 80}{parts.path}".replace("/", "_")
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root / "sdms-reference" / f"{name}.json"


def load_stubs(service, folder):
    """Give `service` the stubs of every *.json file in `folder`, in name order, each checked as
    fn.createStub_ checks it; the number loaded, or ValueError naming the file and what is wrong."""
    if not folder.is_dir():
        raise ValueError(f"--stubs {folder} is not a directory")
    count = 0
    for path in sorted(folder.glob("*.json")):
        found = parse_json(read_file(path), path)
        for index, stub in enumerate(found if type(found) is list else [found]):
            arguments = stub if type(stub) is dict and "stub" in stub else {"stub": stub}
            reply = service.handle(json.dumps([{}, {"fn.createStub_": arguments}]).encode())
            body = json.loads(reply.data)[1]
            if "Ok_" not in body:
                where = f"{path}, stub {index + 1}" if type(found) is list else str(path)
                raise ValueError(f"{where}: {json.dumps(body, ensure_ascii=False)[:500]}")
            count += 1
    return count


if __name__ == "__main__":
    sys.exit(main())
