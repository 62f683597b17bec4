"""The calculator's memory: namespaces of variables and tapes, and sessions, bounded in count and bytes.

How this works
--------------
A `Namespace` holds one user's variables and paper tape (oldest evaluation
first, each kept as MessagePack, which is compact). `Memory` holds them all,
and the sessions `fn.login` opens, and keeps them within bounds: a variable
counts as its name plus VARIABLE_BYTES, an evaluation as its MessagePack form
plus ENTRY_BYTES, a namespace and a session as their names plus their own
overhead. No limit takes away data someone else is using:

- a namespace full in count or bytes gives up its oldest evaluations, and then
  refuses what does not fit (`Full`, with ErrorNamespaceFull);
- beyond the counts of namespaces and sessions, or `max_state` bytes in all,
  what nobody has used for `idle` seconds is forgotten, else the newcomer is
  refused (`Full`, with ErrorUnavailable);
- the shared namespace has its room from the start and is never forgotten, so
  calls without `@auth_` always work.

The defaults keep a namespace's export (`fn.export`) small enough that, as
base64 text in a JSON request, it can be imported again (`fn.import`) within
the 1 MiB a request may hold. Callers hold the calculator's lock.
"""

import secrets
import time

import msgpack

SHARED = ""  # the namespace of calls without @auth_
VARIABLE_BYTES, ENTRY_BYTES, NAMESPACE_BYTES, SESSION_BYTES = 200, 80, 700, 300  # beside the text each holds
UNAVAILABLE: dict = {"ErrorUnavailable": {}}
LIMITS = {  # name -> (what it bounds, its default): what Memory keeps at most
    "max_namespaces": ("namespaces kept, besides the shared one", 1000),
    "max_sessions": ("sessions kept", 1000),
    "max_variables": ("variables in a namespace", 1000),
    "tape_length": ("evaluations on a tape; the oldest give way", 1000),
    "namespace_bytes": ("bytes of variables and tape in a namespace", 640 * 1024),
    "max_state": ("bytes of state kept in all", 64 * 1024 * 1024),
    "idle": ("seconds after which unused namespaces and sessions may give way to newcomers", 3600),
}


def evaluations(entries):
    """The evaluations kept as MessagePack, one after another, read back at once: behind an array's
    header they are one MessagePack array."""
    return msgpack.unpackb(b"\xdd" + len(entries).to_bytes(4, "big") + b"".join(entries))


class Full(Exception):
    """There is no room for what a call would keep; `result` says which limit it met."""

    def __init__(self, result):
        super().__init__(result)
        self.result = result


class Namespace:
    """One user's variables and paper tape."""

    def __init__(self, name):
        self.variables = {}
        self.tape = []  # MessagePack, oldest first
        self.size = 0  # bytes of its variables and tape
        self.overhead = NAMESPACE_BYTES + len(name.encode())  # of the namespace itself
        self.used = time.monotonic()


class Memory:
    """Every namespace and session, within the limits of LIMITS (see the module's story)."""

    def __init__(self, **limits):
        """`limits`, by name, change those of LIMITS from their defaults."""
        unknown = limits.keys() - LIMITS.keys()
        if unknown:
            raise TypeError(f"not limits of the calculator's memory: {', '.join(sorted(unknown))}")
        self.limits = {name: limits.get(name, default) for name, (_, default) in LIMITS.items()}
        if self.limits["max_state"] < self.limits["namespace_bytes"] + NAMESPACE_BYTES:
            raise ValueError(f"max_state {self.limits['max_state']} cannot hold the shared namespace: it needs namespace_"
                             f"bytes and {NAMESPACE_BYTES} more, {self.limits['namespace_bytes'] + NAMESPACE_BYTES}")
        self.shared = Namespace(SHARED)
        self.namespaces = {SHARED: self.shared}  # username (or SHARED) -> Namespace
        self.sessions = {}  # token -> [username, when last used]
        self.size = self.shared.overhead + self.limits["namespace_bytes"]  # kept, the shared namespace's room included
        self.full = {"ErrorNamespaceFull": {"variables": self.limits["max_variables"],
                                            "bytes": self.limits["namespace_bytes"]}}

    def namespace(self, name, write=False):
        """The namespace `name`, kept (made if need be) for a write; an empty one to read otherwise."""
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

    def save(self, namespace, variables):
        """Keep `variables` in the namespace, or raise Full."""
        new = [name for name in variables if name not in namespace.variables]
        if len(namespace.variables) + len(new) > self.limits["max_variables"]:
            raise Full(self.full)
        self._grow(namespace, sum(VARIABLE_BYTES + len(name.encode()) for name in new))
        namespace.variables.update(variables)

    def delete(self, namespace, names):
        for name in names:
            if namespace.variables.pop(name, None) is not None:
                self._count(namespace, -(VARIABLE_BYTES + len(name.encode())))

    def record(self, namespace, entry):
        """Keep an evaluation (as MessagePack) on the namespace's tape, if it fits; whether it did."""
        try:
            self._grow(namespace, ENTRY_BYTES + len(entry))
        except Full:
            return False
        namespace.tape.append(entry)
        while len(namespace.tape) > self.limits["tape_length"]:
            self._drop_oldest(namespace)
        return True

    def replace(self, namespace, variables, evaluations):
        """Put `variables` and the newest `evaluations` that fit in place of the namespace's, or raise Full."""
        entries = [msgpack.packb(evaluation) for evaluation in evaluations[-self.limits["tape_length"]:]]
        sizes = [ENTRY_BYTES + len(entry) for entry in entries]
        size = sum(VARIABLE_BYTES + len(name.encode()) for name in variables)
        if len(variables) > self.limits["max_variables"] or size > self.limits["namespace_bytes"]:
            raise Full(self.full)
        size, oldest = size + sum(sizes), 0
        while size > self.limits["namespace_bytes"]:  # the oldest evaluations give way, as on any tape
            size, oldest = size - sizes[oldest], oldest + 1
        self._keep(namespace, size - namespace.size)
        namespace.variables, namespace.tape = variables, entries[oldest:]

    def open_session(self, username):
        """A new session's token for `username`, or raise Full."""
        self._make_room(SESSION_BYTES + len(username.encode()), sessions=1)
        token = secrets.token_urlsafe(16)  # 128 random bits
        self.sessions[token] = [username, time.monotonic()]
        self.size += SESSION_BYTES + len(username.encode())
        return token

    def user(self, token):
        """The user whose session `token` is, or None; the session counts as used."""
        session = self.sessions.get(token)
        if session is None:
            return None
        session[1] = time.monotonic()
        return session[0]

    def close_session(self, token):
        """End a session, and forget its user's namespace."""
        username = self.sessions.pop(token)[0]
        self.size -= SESSION_BYTES + len(username.encode())
        if username in self.namespaces and username != SHARED:
            self._forget(username)

    def _make_room(self, size, namespaces=0, sessions=0):
        """Make room for `size` bytes and that many namespaces and sessions, or raise Full."""
        def fits():
            return (self.size + size <= self.limits["max_state"]
                    and len(self.namespaces) - 1 + namespaces <= self.limits["max_namespaces"]  # the shared one aside
                    and len(self.sessions) + sessions <= self.limits["max_sessions"])
        if not fits():
            self._forget_idle()
        if not fits():
            raise Full(UNAVAILABLE)

    def _forget_idle(self):
        """Forget the namespaces and sessions nobody has used for `idle` seconds."""
        now = time.monotonic()
        for name, namespace in list(self.namespaces.items()):
            if namespace is not self.shared and now - namespace.used > self.limits["idle"]:
                self._forget(name)
        for token, (username, used) in list(self.sessions.items()):
            if now - used > self.limits["idle"]:
                del self.sessions[token]
                self.size -= SESSION_BYTES + len(username.encode())

    def _forget(self, name):
        namespace = self.namespaces.pop(name)
        self.size -= namespace.overhead + namespace.size

    def _grow(self, namespace, size):
        """Count `size` more bytes in a namespace, its oldest evaluations giving way, or raise Full."""
        while namespace.tape and namespace.size + size > self.limits["namespace_bytes"]:
            self._drop_oldest(namespace)
        if namespace.size + size > self.limits["namespace_bytes"]:
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
