"""The schemas the command-line client fetched, kept between its runs.

How this works
--------------
A call written `NAME=TEXT` needs the server's schema to tell text from JSON,
and each run of the client is a new process, so the schema a server answered
`fn.api_` with is kept in a file named after its URL, in the user's cache
folder (`$XDG_CACHE_HOME/sdms-reference`, else `~/.cache/sdms-reference`,
where the mock keeps the schema it fetched too): the
next call needs no extra request. A kept schema may be stale; the client
trusts it until the server refuses a call made with it, then fetches the
schema again (calls.py): a refused call changed nothing, so it may go again.
What the folder holds is read as any file a tool is given (bounded, and a
file that is not what was written is ignored), and kept only for its URL.
"""

import hashlib
import json
import os
from pathlib import Path

from . import sources


def folder():
    """Where the schemas fetched are kept, the client's and the mock's."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sdms-reference"


def _file(url):
    return folder() / ("client-" + hashlib.sha256(url.encode()).hexdigest()[:32] + ".json")


def kept(url):
    """The entries of the schema kept for `url`, or None (none kept, or not one this client wrote)."""
    try:
        record = json.loads(sources.read_file(_file(url)))
    except ValueError:
        return None
    if type(record) is not dict or record.get("url") != url or type(record.get("api")) is not list:
        return None
    return record["api"]


def keep(url, entries):
    """Keep the schema `url` answered with; a cache that cannot be written is no reason to fail a call."""
    try:
        sources.write_file(_file(url), json.dumps({"url": url, "api": entries}))
    except ValueError:
        pass
