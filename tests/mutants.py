"""Seeded mutation testing: does the conformance suite notice a one-line change to the server?

    python tests/mutants.py [--count N] [--seed S] [--modules protocol/service,...] [--json FILE]

Each mutant is a copy of reference/ with one small change made at random, by
a seeded generator, to one function of a server module: a comparison turned
round, `and` for `or`, a constant nudged, a condition negated, a statement
dropped. The mutant serves the calculator, the testbed and a mock of each
(with `--plain` when the module is of the teaching core or the plain
transport, whose code the engine room would otherwise step around), and
the suite runs against all four. A mutant the suite fails is caught; one it
passes has survived: either the change is invisible to clients (an
equivalent mutant), or the suite has a blind spot. Survivors are printed
with their diff, to be read.

This is a tool, not a test: it takes minutes (about five seconds a mutant).
"""

import argparse
import ast
import difflib
import json
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODULES = ["protocol/service", "protocol/validate", "protocol/codec", "protocol/blobs", "protocol/select",
           "protocol/generate", "engine/service", "engine/checks", "mocking", "stubs", "calculator", "http_server"]
SWAPS = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE,
         ast.GtE: ast.Gt, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}


def candidates(tree):
    """Every place a mutation can be made: (node, what to do), outside docstrings."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            found += [(node, ("compare", i)) for i, op in enumerate(node.ops) if type(op) in SWAPS]
        elif isinstance(node, ast.BoolOp):
            found.append((node, ("boolop",)))
        elif isinstance(node, ast.Constant) and type(node.value) in (int, bool) and not isinstance(node.value, str):
            found.append((node, ("constant",)))
        elif isinstance(node, (ast.If, ast.While)):
            found.append((node, ("negate",)))
        elif isinstance(node, (ast.FunctionDef, ast.For, ast.If, ast.With, ast.Try)):
            body = [s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
            if len(body) > 1:
                found += [(node, ("drop", node.body.index(s))) for s in body]
    return found


def mutate(source, rng):
    """`source` with one mutation, and a line saying what it was; None if there is no place."""
    tree = ast.parse(source)
    places = candidates(tree)
    if not places:
        return None
    node, (what, *where) = rng.choice(places)
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


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def serving(package, *args):
    """Start `python -m reference.X ARGS` from `package`'s parent; return (process, url)."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", *args, "--port", str(port), "--log-level", "error"],
                               cwd=package.parent, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return process, f"http://127.0.0.1:{port}/api"


def verdict(package, plain=False):
    """Whether the suite fails the server in `package` (caught), and on which targets."""
    processes, failing, core = [], [], ["--plain"] if plain else []
    try:
        live = [serving(package, "reference.server", *core),
                serving(package, "reference.server", "--service", "testbed", *core)]
        processes += [p for p, _ in live]
        mocks = [serving(package, "reference.mock", *core, "--schema-url", url, "--wait", "5",
                         "--cache", str(package.parent / f"cache-{i}.json")) for i, (_, url) in enumerate(live)]
        processes += [p for p, _ in mocks]
        for _, url in live + mocks:
            try:
                run = subprocess.run([sys.executable, "-m", "conformance", "run", "--target", url, "--wait", "10"],
                                     cwd=ROOT, capture_output=True, text=True, timeout=300)
            except subprocess.TimeoutExpired:  # a mutant that hangs a request is caught too
                failing.append((url, "the suite did not finish within 300 s"))
                continue
            if run.returncode != 0:
                failing.append((url, (run.stdout.strip().splitlines() or run.stderr.strip().splitlines() or ["?"])[-1]))
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=15)  # a graceful stop gives requests in flight 10 s
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    return failing


def main():
    parser = argparse.ArgumentParser(description="Seeded mutation testing of the reference server against the suite.")
    parser.add_argument("--count", type=int, default=40, help="mutants to try (default 40)")
    parser.add_argument("--seed", type=int, default=1, help="the seed of the mutations (default 1)")
    parser.add_argument("--modules", default=",".join(MODULES), help="the reference modules to mutate")
    parser.add_argument("--json", help="write every mutant and its verdict to this file")
    options = parser.parse_args()
    rng = random.Random(options.seed)
    modules = options.modules.split(",")
    results = []
    with tempfile.TemporaryDirectory() as directory:
        package = Path(directory) / "m0" / "reference"
        shutil.copytree(ROOT / "reference", package, ignore=shutil.ignore_patterns("__pycache__"))
        failing = verdict(package)
        if failing:
            sys.exit(f"the unchanged server fails the suite, so no mutant can tell anything: {failing}")
        for number in range(1, options.count + 1):
            module = rng.choice(modules)
            source = (ROOT / "reference" / f"{module}.py").read_text()
            made = mutate(source, rng)
            if made is None:
                continue
            mutated, what = made
            package = Path(directory) / f"m{number}" / "reference"
            shutil.copytree(ROOT / "reference", package, ignore=shutil.ignore_patterns("__pycache__"))
            (package / f"{module}.py").write_text(mutated)
            started = time.monotonic()
            failing = verdict(package, plain=module.startswith("protocol/") or module == "http_server")
            diff = "".join(difflib.unified_diff(ast.unparse(ast.parse(source)).splitlines(True),
                                                mutated.splitlines(True), n=1))
            results.append({"module": module, "what": what, "caught": bool(failing), "failing": failing, "diff": diff})
            print(f"{number:>3} {module}.py {what}: {'caught' if failing else 'SURVIVED'} "
                  f"({time.monotonic() - started:.1f} s)", flush=True)
            if not failing:
                print("    " + diff.replace("\n", "\n    ")[:1500])
            shutil.rmtree(package.parent)
    caught = sum(r["caught"] for r in results)
    print(f"{caught} of {len(results)} mutants caught")
    if options.json:
        Path(options.json).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
