"""Schemas fetched from live servers: the mock's (retried while the server starts), and the client's,
kept between its runs and checked as a schema loader checks one.

How this works
--------------
`fetch` asks a live server for its public schema (`fn.api_`), waiting a
while for one that is starting; the mock saves what it got in the user's
cache folder (`default_cache`), to start from when the server is down.
A call written `NAME=TEXT` needs the server's schema to tell text from JSON,
and each run of the client is a new process, so the schema a server answered
`fn.api_` with is kept in a file named after its URL, in the user's cache
folder (`$XDG_CACHE_HOME/sdms-reference`, else `~/.cache/sdms-reference`,
where the mock keeps the schema it fetched too): the
next call needs no extra request. A kept schema may be stale; the client
trusts it until the server refuses a call made with it, then fetches the
schema again (client.py): a refused call changed nothing, so it may go again.
What the folder holds is read as any file a tool is given (bounded, and a
file that is not what was written is ignored), and kept only for its URL.
"""

import hashlib
import json
import os
import time
import urllib.parse
from pathlib import Path

from .. import sources
from ..mocking import stubs
from ..protocol.documents import Document
from ..transports.http_client import Client, Mismatched, Unreachable


def folder():
    """Where the schemas fetched are kept, the client's and the mock's."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sdms-reference"


def _file(url):
    return folder() / ("client-" + hashlib.sha256(url.encode()).hexdigest()[:32] + ".json")


def kept(url):
    """The entries of the schema kept for `url`, or None (none kept, or not one this client wrote: not the
    user's own file, or not what it writes)."""
    path = _file(url)
    try:
        if not own(path):
            return None
        record = sources.parse_json(sources.read_file(path), path)
    except (OSError, ValueError):
        return None
    if type(record) is not dict or record.get("url") != url or type(record.get("api")) is not list \
            or not all(type(entry) is dict for entry in record["api"]):
        return None
    return record["api"]


def own(path):
    """Whether a cached file is the user's own, which no one else may write: in a shared cache folder,
    another user's file would tell this user's tools what a server's schema is."""
    status = os.stat(path)
    return status.st_uid == os.getuid() and not status.st_mode & 0o002


def keep(url, entries):
    """Keep the schema `url` answered with; a cache that cannot be written is no reason to fail a call."""
    try:
        sources.write_file(_file(url), json.dumps({"url": url, "api": entries}))
    except ValueError:
        pass


def fetch(url, wait, cafile=None, pause=0.2):
    """The public schema of the live server at `url`, retried for `wait` seconds while it starts."""
    deadline, tries = time.monotonic() + wait, 0
    with Client(url, timeout=max(wait, 1), cafile=cafile) as client:
        while True:
            try:
                return client.schema()
            except Unreachable as error:
                if isinstance(error, Mismatched) and tries >= 2:  # (up and speaking otherwise: no use waiting)
                    raise
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
    return folder() / f"{name}.json"


def checked(client, internal=False):
    """The server's schema (fn.api_), checked as a schema loader checks one: ValueError, in one line, if it is
    not sound (entries that are no objects, a function without ->), since what is read of it would be wrong."""
    entries = client.schema(internal)
    found = problems(client.url, entries)
    if found:
        more = f" (and {found.count - 1:,} more)" if found.count > 1 else ""
        raise ValueError(f"the schema {client.url} answers fn.api_ with is not sound: "
                         f"{str(found.problems[0]).removeprefix(client.url + ', ')}{more}")
    return entries


def problems(url, entries):
    """The SchemaError of the schema `url` answered with, as a schema loader finds it (a mock's kinds known),
    or None."""
    return sources.check([Document(url, entries)], extensions=stubs.KINDS)[1]
