"""Seeded mutation testing: does the conformance suite notice a one-line change to the reference?

    python tests/tools/mutants.py [--count N] [--seed S] [--root DIR] [--json FILE]

Each mutant is a copy of reference/ with one small change made by a seeded
generator at a place drawn from all of reference/ (every module, in
proportion to the places it has): a comparison turned round, `and` for `or`,
a constant nudged, a condition negated, a statement dropped; never inside a
log line, which is for people, not peers (PIT, Java's mutation tester, leaves
calls to logging alone by default too). The suites whose
behaviour the module's belongs to run first (OWNED): the server cases against
the calculator and the testbed (with `--plain` for the teaching core and the
plain transport, whose code the engine room would step around), a mock of
each, the client cases through the reference's client driver, the schema
cases through its loader's. A mutant one of them fails is caught; one all
pass survived: the change is invisible to a peer (an equivalent mutant), or
the suite has a blind spot. Survivors are printed with their diff, to read.

Modules whose behaviour no suite can see (command lines, ASGI and WSGI
adapters, the guard's and turns' hardening, and where a schema's problems
are placed, which the schema suite reports as diagnostics but never fails
on) are drawn too, and counted apart, with the tests that check them
instead: their mirror in tests/ (reference/X/Y.py is tested by
tests/reference/X/test_Y.py). `--root` measures another checkout (an older one, for a before and
after).

This is a tool, not a test: it takes minutes (from five to twenty seconds a mutant).
"""

import argparse
import ast
import difflib
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # (run as a script: the repository)
from tests.support.peer import free_port  # noqa: E402

OWNED = {  # module -> the suite that owns its behaviour
    **dict.fromkeys(["protocol/service", "protocol/validate", "protocol/codec", "protocol/blobs", "protocol/select",
                     "protocol/generate", "protocol/types", "protocol/limits", "engine/service", "engine/checks",
                     "engine/scans", "engine/trims", "engine/heads", "transports/http_server", "services/calculator",
                     "services/memory", "services/testbed"], "server"),
    **dict.fromkeys(["mocking/handlers", "mocking/stubs", "mocking/matching"], "mock"),
    **dict.fromkeys(["transports/http_client", "cli/drivers"], "client"),
    **dict.fromkeys(["protocol/loader"], "loader"),
}
CORE_ONLY = {"transports/http_server", "mocking/stubs"}  # besides protocol/: what the engine room steps around, served with --plain
ORDER = ["server", "mock", "client", "loader"]  # the suites a mutant of a module of each kind meets, in turn
LIMITS = ["--limit", "body=1048576", "--limit", "depth=1024", "--limit", "cases=100"]  # what the reference keeps
LOGS = {"debug", "info", "warning", "error", "exception"}  # the levels of the reference's log lines
SWAPS = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE,
         ast.GtE: ast.Gt, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}


def candidates(tree):
    """Every place a mutation can be made: (node, what to do), outside docstrings and log lines."""
    found, logged = [], _logged(tree)
    for node in ast.walk(tree):
        if id(node) in logged:
            continue
        if isinstance(node, ast.Compare):
            found += [(node, ("compare", i)) for i, op in enumerate(node.ops) if type(op) in SWAPS]
        elif isinstance(node, ast.BoolOp):
            found.append((node, ("boolop",)))
        elif isinstance(node, ast.Constant) and type(node.value) in (int, bool):
            found.append((node, ("constant",)))
        elif isinstance(node, (ast.If, ast.While)):
            found.append((node, ("negate",)))
        if isinstance(node, (ast.FunctionDef, ast.For, ast.If, ast.With, ast.Try)):
            body = [s for s in node.body if not (isinstance(s, ast.Expr) and (isinstance(s.value, ast.Constant)
                                                                            or id(s.value) in logged))]
            if len(body) > 1:
                found += [(node, ("drop", node.body.index(s))) for s in body]
    return found


def _logged(tree):
    """id() of every node of a call that writes a log line (`log.debug(...)`, ...): what a log line says is
    for people, not for peers, so it is not mutated (as PIT leaves calls to logging alone by default)."""
    logged = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in LOGS \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "log":
            logged.update(id(inner) for inner in ast.walk(node))
    return logged


def mutate(tree, place, rng):
    """The source of `tree` with the mutation at `place` made, and a line saying what it was."""
    node, (what, *where) = place
    if what == "compare":
        node.ops[where[0]] = SWAPS[type(node.ops[where[0]])]()
    elif what == "boolop":
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    elif what == "constant":
        node.value = (not node.value) if type(node.value) is bool else node.value + rng.choice([-1, 1])
    elif what == "negate":
        node.test = ast.UnaryOp(ast.Not(), node.test)
    else:
        node.body[where[0]] = ast.Pass()
    return ast.unparse(tree), f"{what} at line {getattr(node, 'lineno', '?')}"


class Mutant:
    """A copy of reference/ to check, and the processes serving it."""

    def __init__(self, package, plain):
        self.package, self.plain, self.processes = package, plain, []
        self.limits = LIMITS if "--limit" in subprocess.run(  # (which an older suite may not have)
            [sys.executable, "-m", "conformance", "run", "--help"], cwd=package.parent, capture_output=True,
            text=True).stdout else []

    def serving(self, *args):
        """Start `python -m ARGS` from the copy; its URL."""
        port = free_port()
        self.processes.append(subprocess.Popen(
            [sys.executable, "-m", *args, *(["--plain"] if self.plain else []), "--port", str(port),
             "--log-level", "error"], cwd=self.package.parent, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        return f"http://127.0.0.1:{port}/api"

    def suite(self, *args):
        """Run `python -m conformance ARGS` (the checkout's suite, copied beside); what failed, or None."""
        try:
            run = subprocess.run([sys.executable, "-m", "conformance", *args], cwd=self.package.parent,
                                 capture_output=True, text=True, timeout=300)
        except subprocess.TimeoutExpired:  # a mutant that hangs a request is caught too
            return "the suite did not finish within 300 s"
        if run.returncode != 0:
            return (run.stdout.strip().splitlines() or run.stderr.strip().splitlines() or ["?"])[-1]
        return None

    def servers(self):
        live = [self.serving("reference.server"), self.serving("reference.server", "--service", "testbed")]
        return [(url, self.suite("run", "--target", url, "--wait", "10", *self.limits)) for url in live]

    def mocks(self):
        live = [self.serving("reference.server"), self.serving("reference.server", "--service", "testbed")]
        mocks = [self.serving("reference.mock", "--schema-url", url, "--wait", "10", "--cache",
                              str(self.package.parent / f"cache-{i}.json")) for i, url in enumerate(live)]
        return [(url, self.suite("run", "--target", url, "--wait", "10", *self.limits)) for url in mocks]

    def client(self):
        driver = f"{sys.executable} -m reference.client --driver"
        return [("client", self.suite("client", "--command", driver))]

    def loader(self):
        driver = f"{sys.executable} -m reference.schema --driver"
        return [("loader", self.suite("schema", "--command", driver))]

    def verdict(self, first):
        """What failed, the suite of kind `first` tried first, the others after, until one fails."""
        try:
            for kind in [first] + [k for k in ORDER if k != first]:
                failing = [(where, why) for where, why in getattr(self, KINDS[kind])() if why]
                self.stop()
                if failing:
                    return failing
            return []
        finally:
            self.stop()

    def stop(self):
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=15)  # a graceful stop gives requests in flight 10 s
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.processes = []


KINDS = {"server": "servers", "mock": "mocks", "client": "client", "loader": "loader"}


def places(root):
    """Every mutation place in reference/: (module, index) pairs, modules named as OWNED names them."""
    found = []
    for path in sorted((root / "reference").rglob("*.py")):
        module = path.relative_to(root / "reference").with_suffix("").as_posix()
        found += [(module, index) for index in range(len(candidates(ast.parse(path.read_text()))))]
    return found


def copy(root, folder):
    """reference/ and conformance/ of `root` copied into `folder`; the copy of reference/."""
    for name in ("reference", "conformance"):
        shutil.copytree(root / name, folder / name, ignore=shutil.ignore_patterns("__pycache__"))
    return folder / "reference"


def main():
    parser = argparse.ArgumentParser(description="Seeded mutation testing of the reference against the suites.")
    parser.add_argument("--count", type=int, default=40, help="mutants to try (default 40)")
    parser.add_argument("--seed", type=int, default=1, help="the seed of the mutations (default 1)")
    parser.add_argument("--root", default=str(Path(__file__).resolve().parents[2]),
                        help="the checkout to measure (default this one)")
    parser.add_argument("--json", help="write every mutant and its verdict to this file")
    options = parser.parse_args()
    root, rng, results = Path(options.root).resolve(), random.Random(options.seed), []
    drawn = rng.sample(places(root), options.count)
    with tempfile.TemporaryDirectory() as directory:
        package = copy(root, Path(directory) / "m0")
        for plain in (False, True):
            failing = Mutant(package, plain).verdict("server")
            if failing:
                sys.exit(f"the unchanged reference fails a suite, so no mutant can tell anything: {failing}")
        for number, (module, index) in enumerate(drawn, 1):
            source = (root / "reference" / f"{module}.py").read_text()
            tree = ast.parse(source)
            mutated, what = mutate(tree, candidates(tree)[index], rng)
            kind = OWNED.get(module, "outside")
            package = copy(root, Path(directory) / f"m{number}")
            (package / f"{module}.py").write_text(mutated)
            started, plain = time.monotonic(), module in CORE_ONLY or module.startswith("protocol/")
            failing = Mutant(package, plain).verdict(kind if kind in KINDS else "server")
            diff = "".join(difflib.unified_diff(ast.unparse(ast.parse(source)).splitlines(True),
                                                mutated.splitlines(True), n=1))
            results.append({"module": module, "kind": kind, "what": what, "caught": bool(failing),
                            "failing": failing, "diff": diff})
            print(f"{number:>3} {module}.py ({kind}) {what}: {'caught' if failing else 'SURVIVED'} "
                  f"({time.monotonic() - started:.1f} s)", flush=True)
            if not failing:
                print("    " + diff.replace("\n", "\n    ")[:1500], flush=True)
            shutil.rmtree(package.parent)
    print("\n" + "\n".join(summary(results)))
    if options.json:
        Path(options.json).write_text(json.dumps(results, indent=1) + "\n")


def tested_by(module):
    """The test module that mirrors a module of reference/ (module as OWNED names them), or what stands for one."""
    folder, _, name = module.rpartition("/")
    mirror = Path("tests", "reference", folder, f"test_{name}.py")
    return str(mirror) if (Path(__file__).resolve().parents[2] / mirror).exists() else "every test (imports)"


def summary(results):
    """Lines: caught of drawn, by module and by kind, the owned modules' together first."""
    lines = []
    owned = [r for r in results if r["kind"] in KINDS]
    if owned:
        lines.append(f"The suites' own modules: {_share(owned)}")
    for kind in [*KINDS, "outside"]:
        mine = [r for r in results if r["kind"] == kind]
        if mine:
            lines.append(f"  {kind}: {_share(mine)}")
            for module in sorted({r["module"] for r in mine}):
                lines.append(f"    {module}: {_share([r for r in mine if r['module'] == module])}"
                             + (f"; tested by {tested_by(module)}" if kind == "outside" else ""))
    return lines


def _share(results):
    caught = sum(r["caught"] for r in results)
    return f"{caught} of {len(results)} caught ({100 * caught / len(results):.0f}%)"


if __name__ == "__main__":
    main()
