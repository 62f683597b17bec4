"""Stub files: the stubs a mock is given at start (`--stubs DIR`), each checked as `fn.createStub_` checks
one, and every thing wrong in every file told at its line and column, with "did you mean"."""

import difflib
import json

from .. import sources

OPTIONS = ("strictMatch!", "count!")  # what fn.createStub_ takes beside its stub


class StubProblems(ValueError):
    """Stub files that do not load: `problems`, a line for each thing wrong, saying where."""

    def __init__(self, problems):
        super().__init__("\n".join(problems))
        self.problems = problems


def load_stubs(service, folder):
    """Give `service` the stubs of every *.json file in `folder`, in name order, each checked as
    fn.createStub_ checks it; the number loaded, or ValueError with a line for each thing wrong in every
    file, saying where. A stub is written with its options beside the call ({"fn.X": ..., "->": ...,
    "count!": 2}), or as fn.createStub_ takes it ({"stub": ..., "count!": 2})."""
    count, problems = 0, []
    for path in sorted(folder.glob("*.json")):
        try:
            found = sources.parse_json(text := sources.read_file(path), path)
            placed = sources.Text(text)  # (each problem placed in it: one pass over the file for them all)
        except ValueError as error:
            problems.append(str(error))
            continue
        for index, stub in enumerate(found if type(found) is list else [found]):
            wrapped = type(stub) is not dict or "stub" in stub
            arguments = stub if wrapped else {"stub": {k: v for k, v in stub.items() if k not in OPTIONS},
                                              **{k: v for k, v in stub.items() if k in OPTIONS}}
            reply = service.handle(json.dumps([{}, {"fn.createStub_": arguments}]).encode())
            body = json.loads(reply.data)[1]
            if "Ok_" in body:
                count += 1
                continue
            for case in body.get("ErrorInvalidRequestBody_", {}).get("cases", []):  # located in the file
                inside = case["path"][1 if wrapped or case["path"][1:2] != ["stub"] else 2:]
                problems.append(_wrong(path, placed, [index] * (type(found) is list), inside, case["reason"],
                                       service.schema))
    if problems:
        raise StubProblems(problems)
    return count


SAID = {"ObjectKeyDisallowed": "no such field", "FunctionUnknown": "no such function",
        "RequiredObjectKeyMissing": "missing"}  # what a stub file's common slips are, in words


def _wrong(path, text, steps, inside, reason, schema):
    """One line that says where a stub file (a sources.Text) is wrong, and how: "FILE:LINE:COLUMN: at PATH:
    what"."""
    place = text.position(steps + inside)
    (reason, data), = reason.items()
    said = (f"expected {', '.join(data['expected'])}, found {', '.join(data['actual'])}" if reason == "TypeUnexpected"
            else data["reason"] if reason == "ExtensionValidationFailed"
            else SAID.get(reason) or reason + (f" {json.dumps(data)}" if data else ""))
    if reason in ("ObjectKeyDisallowed", "FunctionUnknown"):  # (near names of its kind, a function's or a field's)
        names = {key for _, entry, _ in schema.entries for key in _keys(entry)
                 if ("." in key) == (reason == "FunctionUnknown") and key != inside[-1]}
        near = difflib.get_close_matches(str(inside[-1]), names, n=1)
        said += f"; did you mean {json.dumps(near[0])}?" if near else ""
    where = ".".join(str(step) for step in inside) or "the stub"
    return f"{path}:{place['line']}:{place['column']}: at {where}: {said}"


def _keys(value):
    """Every key of the objects in `value`."""
    if type(value) is dict:
        return [key for key, element in value.items() for key in (key, *_keys(element))]
    return [key for element in value for key in _keys(element)] if type(value) is list else []


def export_stubs(service, folder):
    """Write the stubs `service` holds, a file each (stub-0001.json, ... oldest first), as load_stubs reads
    them; (how many were written, how many older ones fn.listStubs_ left out past its bound)."""
    listed = json.loads(service.handle(b'[{}, {"fn.listStubs_": {}}]').data)[1]["Ok_"]
    folder.mkdir(parents=True, exist_ok=True)
    for number, stub in enumerate(listed["stubs"], 1):
        sources.write_file(folder / f"stub-{number:04}.json", json.dumps(stub, indent=2) + "\n")
    return len(listed["stubs"]), listed.get("omittedStubs!", 0)
