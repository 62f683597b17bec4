"""What one call gives the calls after it, by the links a schema states: credentials, calls an answer
holds, and the log that tells what a failure may depend on.

How this works
--------------
`Links(schema)` reads from the schema the results that hold a token
`union.Auth_` takes (a tag of one text field, as `Session {token}`): a
function whose `Ok_` has that field gives credentials (`gives`), and once it
answers, they become the `@auth_` of every later call (`learn`, `headers`).
`learn` also returns the calls an answer holds, the values of its `fn.X`
fields, for the fuzzer to send as a client would. `logged` keeps the latest
valid calls, and for a failure met while calls of several functions are
interleaved (`sequencing`), names the other functions' calls made since the
failing one last passed.
"""

from collections import deque

LOG, AFTER = 1000, 5  # valid calls remembered; earlier calls a failure shows, the latest


class Links:
    """The credentials, and the log of valid calls, of one fuzzing run."""

    def __init__(self, schema):
        self.tokens = [(tag, name) for tag, fields in schema.unions.get("union.Auth_", {}).items()
                       for name, type_ in fields.items() if len(fields) == 1 and type_.kind == "string"]
        self.credentials = {}  # the @auth_ an answer gave
        self.log, self.count, self.passed = deque(maxlen=LOG), 0, {}  # valid calls; how many; by function:
        self.sequencing = False  # how many had been logged when its last call passed; whether calls interleave

    def gives(self, function):
        """Whether a result of `function` holds credentials (so that it is called first)."""
        return any(name in function.results["Ok_"] for _, name in self.tokens)

    def headers(self, given):
        """The headers of a call: those `given` (-H), and the credentials an answer gave, unless given."""
        return {**self.credentials, **given}

    def learn(self, function, fields):
        """Keep the credentials an Ok_ of `function` (its `fields`) holds; return the calls it holds, as
        (the field's name, the function called, the call's body)."""
        for tag, name in self.tokens:
            if type(fields.get(name)) is str:
                self.credentials = {"@auth_": {tag: {name: fields[name]}}}
        return [(name, type_.of, fields[name]) for name, type_ in function.results["Ok_"].items()
                if type_.kind == "fn" and type(fields.get(name)) is dict and list(fields[name]) == [type_.of]]

    def logged(self, function, call, found):
        """Log a valid call; return its Finding with the other functions' calls made since `function` last
        passed (what may have made it fail), when calls interleave and it ever passed."""
        first = self.count - len(self.log)  # (the number of the oldest call still in the log)
        if found is None:
            self.passed[function.name] = self.count + 1
        elif self.sequencing and function.name in self.passed and self.passed[function.name] > first:
            since = list(self.log)[self.passed[function.name] - first:]
            found = found._replace(after=tuple(entry for entry in since if entry[0] != function.name)[-AFTER:])
        self.log.append((function.name, call))
        self.count += 1
        return found
