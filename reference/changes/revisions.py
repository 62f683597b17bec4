"""A schema as a git revision has it: what `compare --against REV NEW` compares NEW with.

How this works
--------------
NEW is a schema file or a directory of them in a git working tree. The same
path at REV (a branch, a tag, a commit: anything `git rev-parse` reads) is
read straight from the repository, never checked out: `git cat-file` says
whether the path is a file or a directory there and gives each file's
bytes, read as `sources.read` reads files on disk (the directory's *.json
files, in name order, each at most `sources.MAX_FILE`). Each document is
named `REV:PATH`, PATH from the top of the repository, so every place a
finding is shown at says which revision it is in.
"""

import subprocess
from pathlib import Path

from .. import sources


def read(revision, path):
    """The documents at `path` as `revision` has it, and the problems of those that do not parse (as
    `sources.read` gives them); ValueError, in one line, if git cannot say."""
    path = Path(path)
    if not path.exists():
        raise ValueError(f"{path}: does not exist (--against reads the same path at the revision)")
    folder = path if path.is_dir() else path.parent
    top = Path(_git(folder, "rev-parse", "--show-toplevel", said=f"{path}: not in a git repository (--against "
                    "reads the revisions of the repository it is in)").strip())
    inside = "" if path.resolve() == top.resolve() else path.resolve().relative_to(top.resolve()).as_posix()
    _git(top, "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}", said=f"{revision!r} is no revision "
         "of the repository (a branch, a tag or a commit; a shallow clone may lack it: git fetch it first)")
    kind = _git(top, "cat-file", "-t", f"{revision}:{inside}", said=f"{inside or '.'} is not in {revision}").strip()
    names = ([name for name in _git(top, "ls-tree", "--name-only", f"{revision}:{inside}").splitlines()
              if name.endswith(".json")] if kind == "tree" else [None])
    if not names:
        raise ValueError(f"{revision}:{inside}: holds no .json files")
    documents, problems = [], []
    for name in sorted(names, key=str):
        file = f"{inside}/{name}".lstrip("/") if name else inside
        size = int(_git(top, "cat-file", "-s", f"{revision}:{file}"))
        if size > sources.MAX_FILE:
            raise ValueError(f"{revision}:{file}: {size:,} bytes, more than the {sources.MAX_FILE:,} a schema file "
                             "may have")
        data = _git(top, "cat-file", "blob", f"{revision}:{file}", text=False)
        found, trouble = sources.parse(f"{revision}:{file}", sources.text_of(data, f"{revision}:{file}"))
        documents, problems = documents + found, problems + trouble
    return documents, problems


def _git(where, *args, said=None, text=True):
    """The output of a git command run in `where`; ValueError with `said` (or git's own words) if it fails."""
    try:
        done = subprocess.run(["git", "-C", str(where), *args], capture_output=True, timeout=60)
    except FileNotFoundError:
        raise ValueError("--against needs git, which is not installed") from None
    except subprocess.TimeoutExpired:
        raise ValueError(f"git {args[0]} took more than 60 s") from None
    if done.returncode:
        words = done.stderr.decode(errors="replace").strip().splitlines()
        raise ValueError(said or (words[-1] if words else f"git {args[0]} failed")) from None
    return done.stdout.decode(errors="replace") if text else done.stdout
