"""A run's settings: one record, made once, which every run and report reads.

How this works
--------------
A command makes its Settings from its command line, where [tool.conformance]
gave the defaults (commands/options.py, `settings`); the matrix makes one for
each implementation of its manifest (manifest.py). From there on nothing reads
the command line: the runs of the suites (server_suite.py, client_suite.py,
schema_suite.py), the fuzzer (fuzz/) and what a run says (reports/) take the
Settings, each reading what it needs. Only what travels past the command that
made it is here: a target's URL, a driver's command or a file to write
fixtures to are the command's own.
"""

from dataclasses import dataclass, field

from ..language.suite import matches


@dataclass(frozen=True)
class Settings:
    """What a run is asked to check, how, and what it says; the defaults are the command line's."""

    # What is checked, and what is known of it
    implementation: dict = field(default_factory=dict)  # name, version and language, as declared
    level: str = "MAY"  # the level checked: MUST, SHOULD (and MUST) or MAY (all of them)
    ids: tuple = ()  # id globs of the cases selected (none: all of them)
    exclude: tuple = ()  # id globs of the cases left out
    keyword: str = ""  # an expression of words the ids selected hold (pytest's -k)
    last_failed: bool = False  # only what failed last time
    known: frozenset = frozenset()  # id globs of the verdicts expected to fail
    without: frozenset = frozenset()  # protocol features the target lacks
    limits: dict = field(default_factory=dict)  # limits the target declares: name -> value
    # How cases run
    workers: int = 4  # cases (or, fuzzing, functions) at once
    repeat: int = 1  # runs of every case, to tell flaky ones
    maxfail: int | None = None  # failures after which no case starts
    # What is said
    verbose: bool = False  # a line for every case, or every call
    quiet: bool = False  # a line for every failure, and the summary: no diffs, causes or ways to reproduce
    durations: int | None = None  # the slowest cases shown (0: all of them)
    reports: dict = field(default_factory=dict)  # the files written: "junit", "json" or "html" -> path
    # How a fuzzing run calls
    seed: int | None = None  # of the calls made (None: a new one, chosen when the run starts)
    max_examples: int = 50  # calls of each function
    functions: tuple = ()  # the functions called (none: every public one)
    skip: tuple = ()  # functions left uncalled
    headers: dict = field(default_factory=dict)  # request headers every call carries
    time_limit: float = 600.0  # seconds after which no call is made
    deterministic: bool = False  # the service answers the same call the same way
    binary: bool = True  # calls on MessagePack too, once negotiated
    checks: tuple = ()  # the fuzzing checks judged (none: every one; time only with a response_time)
    response_time: float | None = None  # seconds past which an answer fails the time check (None: not judged)

    def known_failure(self, case_id):
        """Whether the case (or fuzzing verdict) `case_id` is listed as a known failure."""
        return matches(self.known, case_id)
