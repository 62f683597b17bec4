"""`python -m reference.mock`: serve a mock of a live server's schema.

How this works
--------------
The schema comes from a live server (`--schema-url`, fetched with `fn.api_`
and saved in a cache file, which is used, with a line saying so, whenever
that server cannot be reached), or from a saved copy (`--schema-file`,
`--schema-dir`). `--stubs DIR` loads stubs from the JSON files of a folder
before the first request, each checked as `fn.createStub_` checks one.

Two more sources make the mock a relay (mocking/relay.py): `--record URL` passes each
call on to the server at URL and saves its answer in `--stubs DIR` as a stub
file, with the headers that tell one caller from another, for a later mock
to answer with; `--proxy URL` passes on each call no stub of `--stubs DIR`
matches (stubs win, as in WireMock) and logs every answer outside the
server's own schema. The mock itself is
mocking/'s; cli/serving.py serves it as it serves every server, and `wsgi()` and
`asgi()` make it for a WSGI or ASGI server, from the files $MOCK_SCHEMA and
$MOCK_STUBS name.
"""

import argparse
import json
import os
import sys
from datetime import datetime
from pathlib import Path

from .cli.options import Parser, interruptible, loading, positive, program, rate, said_problems, seconds

with loading():  # (Ctrl-C while the command loads its parts: status 130, no traceback)
    from . import mocking, sources
    from .cli.fetched import default_cache, fetch, own
    from .cli.serving import add_server_options, check_server_options, kind, serve
    from .mocking import relay
    from .mocking.stub_files import StubProblems, export_stubs, load_stubs
    from .protocol.documents import SchemaError
    from .sources import load
    from .transports import asgi as asgi_, wsgi as wsgi_
    from .transports.http_client import Client, TimedOut, TransportError, Unreachable


@interruptible
def main(argv=None):
    """Serve a mock of a live server's schema until interrupted."""
    parser = _parser()
    options = parser.parse_args(argv)
    low, high = options.collection_length
    if not 0 <= low <= high:
        parser.error("--collection-length needs 0 <= MIN <= MAX")
    check_server_options(parser, options)
    url = options.schema_url or options.record or options.proxy
    if options.cafile and not (url or "").startswith("https://"):
        parser.error("--cafile is for an https:// --schema-url, --record or --proxy")
    if options.record and not options.stubs:
        parser.error("--record needs --stubs DIR, where the answers are saved")
    exported = Path(options.export_stubs or ".")
    if options.export_stubs and (exported.exists() and (not exported.is_dir() or any(exported.iterdir()))):
        parser.error(f"--export-stubs {exported}: give a folder that is empty or not there yet (its stub files "
                     "would mix with what is there)")
    if options.record and options.no_generation:
        parser.error("--no-generation is for a mock that answers from stubs; --record answers every call from "
                     "the server")
    relayed = None
    try:
        if options.stubs:  # (before the schema is fetched: a wrong folder is told at once)
            _check_folder(Path(options.stubs), create=bool(options.record))
        source = _schema_source(options, url)
        if url and not options.schema_url:
            relayed = relay.Relay(url, Path(options.stubs) if options.record else None, options.wait, options.cafile,
                                  (options.max_stubs, options.max_state))
        answering = mocking.Options(options.seed, options.optional, (low, max(high, low)), not options.no_generation,
                                    options.delay, options.fault_rate, options.max_stubs, options.max_calls,
                                    options.max_state)
        service = mocking.service(source, kind(options), bool(options.proxy), answering, relayed)
        if options.stubs and not options.record:
            count = load_stubs(service, Path(options.stubs))
            print(f"Loaded {count} stub{'s' * (count != 1)} from {options.stubs}", flush=True)
    except SchemaError as error:  # each problem a line, as the schema checker writes them, then what it means
        print("\n".join(said_problems(error.problems, error.count)), file=sys.stderr)
        return parser.fail(f"the schema of {url or options.schema_file or options.schema_dir} does not load: "
                           f"{error.count:,} problem{'s' * (error.count != 1)}")
    except StubProblems as error:  # the same way (one problem alone: its line)
        if len(error.problems) == 1:
            return parser.fail(error.problems[0])
        print("\n".join(said_problems(error.problems)), file=sys.stderr)
        return parser.fail(f"the stubs of {options.stubs} do not load: {len(error.problems)} problems")
    except (TransportError, OSError, ValueError) as error:
        return parser.fail(str(error))
    what = (f"a recorder of {url}, saving to {options.stubs}" if options.record else
            f"a validating proxy of {url}" if options.proxy else f"a mock of {url or source}")
    status = serve(service, options, what, parser)
    if options.export_stubs:  # (the stubs it held when it stopped, fn.createStub_'s at run time too)
        written, omitted = export_stubs(service, Path(options.export_stubs))
        print(f"Wrote {written} stub{'s' * (written != 1)} to {options.export_stubs}" + (
            f" ({omitted} older ones were past what fn.listStubs_ lists, and are not written)" if omitted else ""),
            flush=True)
    return status



def _parser():
    """The command line of the mock: where its schema comes from, its stubs, and how it generates."""
    parser = Parser(
        prog=program("reference.mock"),
        description="Serve a mock built from a live server's schema (or a saved copy): it "
                    "validates like the server and answers with stubs or generated values.")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--schema-url", metavar="URL", type=_http_url, help="fetch the schema from this "
                        "live server (fn.api_, over http:// or https://) and save a copy in the cache file, "
                        "which is used when the server cannot be reached")
    source.add_argument("--schema-file", metavar="FILE", help="read the schema from a saved JSON file")
    source.add_argument("--schema-dir", metavar="DIR", help="read the schema from a directory of JSON files")
    source.add_argument("--record", metavar="URL", type=_http_url, help="fetch the schema as --schema-url does, "
                        "pass every call on to that server, and save each answer in --stubs DIR as a stub file, "
                        "with the call's headers (the same call in the same file)")
    source.add_argument("--proxy", metavar="URL", type=_http_url, help="fetch the schema as --schema-url does, "
                        "answer with the stubs of --stubs DIR where one matches, pass every other call on to "
                        "that server, and log each answer outside its own schema "
                        "(answered as ErrorInvalidResponseBody_ when the request has the header @check: true)")
    parser.add_argument("--wait", type=seconds, default=10, metavar="SECONDS",
                        help="how long --schema-url waits for the server to answer (default %(default)s)")
    parser.add_argument("--cafile", metavar="FILE", help="trust the certificate authority in this PEM file "
                        "for an https:// --schema-url (by default, the system's authorities)")
    parser.add_argument("--cache", metavar="FILE", help="where --schema-url saves the schema, replaced only by "
                        "one that loads (default $XDG_CACHE_HOME/sdms-reference/HOST-PORT_PATH.json, where "
                        "$XDG_CACHE_HOME is ~/.cache unless set)")
    parser.add_argument("--stubs", metavar="DIR", help="load the stubs in the *.json files of DIR at start: "
                        "each holds a stub, {\"fn.name\": arguments, \"->\": result}, what fn.createStub_ takes "
                        "(with strictMatch! and count!, request headers a call must hold: \"@auth_\": ..., and places "
                        "that match patterns instead: \"match!\": {\"name\": {\"Glob\": {\"pattern\": \"ann*\"}}}), "
                        "or an array of those; with --record, where the answers are saved")
    parser.add_argument("--export-stubs", metavar="DIR", help="when the mock stops, write the stubs it holds "
                        "then (those fn.createStub_ made while it ran too) to DIR, a file each, as --stubs loads them")
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
                        help="answer unstubbed calls with ErrorNoMatchingStub_, which names the nearest stub "
                             "and where it differs, instead of generated values")
    parser.add_argument("--delay", type=seconds, default=0, metavar="SECONDS",
                        help="answer every call of the mocked service this much later (default %(default)s)")
    parser.add_argument("--fault-rate", type=rate, default=0, metavar="RATE",
                        help="answer this fraction of the calls, from 0 to 1, with ErrorUnknown_, as a "
                             "failing handler would (default %(default)s)")
    parser.add_argument("--max-stubs", type=positive, default=mocking.MAX_STUBS, metavar="N",
                        help="stubs kept; the oldest is dropped (default %(default)s)")
    parser.add_argument("--max-calls", type=positive, default=mocking.MAX_CALLS, metavar="N",
                        help="calls recorded; the oldest is forgotten (default %(default)s)")
    parser.add_argument("--max-state", type=positive, default=mocking.MAX_STATE, metavar="BYTES",
                        help="bytes of state kept in all: stubs and recorded calls, half each; beyond, the "
                             "oldest give way (default %(default)s)")
    return parser


def _http_url(text):
    try:
        Client(text)  # which knows what URL it can call
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def _check_folder(folder, create):
    """ValueError unless `folder` is a directory (made, if `create` and it does not exist)."""
    if create and not folder.exists():
        folder.mkdir(parents=True)
    if not folder.is_dir():
        raise ValueError(f"--stubs {folder}: not a directory")


def _schema_source(options, url):
    """The schema to mock: fetched from `url` (and saved), the path of a saved copy, or the cache of a
    server that cannot be reached."""
    if options.schema_file:
        path = Path(options.schema_file)
        if path.is_dir():
            raise ValueError(f"--schema-file {path}: a directory (see --schema-dir)")
        sources.read(path)  # (ValueError, in one line, if it cannot be read at all)
        return path
    if options.schema_dir:
        path = Path(options.schema_dir)
        if path.exists() and not path.is_dir():
            raise ValueError(f"--schema-dir {path}: not a directory (see --schema-file)")
        sources.read(path)
        return path
    cache = Path(options.cache) if options.cache else default_cache(url)
    try:
        api = fetch(url, options.wait, options.cafile)
    except (Unreachable, TimedOut) as error:  # the server is down: what it said before will do
        if options.record or options.proxy:
            raise
        if not cache.is_file():
            raise TransportError(f"{error}; and no schema of it was saved before in {cache}") from None
        if not own(cache):
            raise TransportError(f"{error}; and the schema saved in {cache} is not your own file (another user "
                                 "could write it): not used") from None
        saved = datetime.fromtimestamp(cache.stat().st_mtime).strftime("%Y-%m-%d %H:%M")
        print(f"{error}: using the schema saved in {cache} on {saved}", flush=True)
        return cache
    load(api)  # checked before it is kept (SchemaError): a copy saved before stays as it was
    sources.write_file(cache, json.dumps(api, indent=2) + "\n")
    print(f"Saved the schema of {url} to {cache}; without the server, "
          f"start with --schema-file {cache}", flush=True)
    return api


STATE = "stubs and recorded calls"  # what a mock keeps in its process


def wsgi():
    """A mock of the schema at $MOCK_SCHEMA, stubs from $MOCK_STUBS if set, as a WSGI application:
    MOCK_SCHEMA=api.json gunicorn --threads 8 'reference.mock:wsgi()'."""
    return wsgi_.make_application(_from_environment(), state=STATE)


def asgi():
    """The same as an ASGI application: MOCK_SCHEMA=api.json uvicorn --factory reference.mock:asgi."""
    return asgi_.make_application(_from_environment(), state=STATE)


def _from_environment():
    """A mock made as the environment says, or SystemExit with one line saying what is wrong."""
    schema, folder = os.environ.get("MOCK_SCHEMA", ""), os.environ.get("MOCK_STUBS", "")
    try:
        if not schema:
            raise ValueError("set MOCK_SCHEMA to the schema's file or directory (such as one saved by "
                             "python -m reference.client URL --schema > api.json)")
        service = mocking.service(Path(schema))
        if folder:
            _check_folder(Path(folder), create=False)
            load_stubs(service, Path(folder))
        return service
    except (OSError, SchemaError, ValueError) as error:
        raise SystemExit(f"reference.mock: error: {error}") from None


if __name__ == "__main__":
    sys.exit(main())
