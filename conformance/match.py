"""The matching language: how an expected value in a fixture is compared with an answer.

Values compare exactly (`3` equals `3.0`, `true` is not `1`); an object whose keys
are all matcher words (`WORDS`) is a matcher instead, as conformance/README.md's
table says: `$type`, `$capture`, `$var`, `$unordered`, `$includes`, `$startsWith`,
`$partial`, `$oneOf`, `$not`, `$absent`, `$literal`, `$each` and `$length` (every
element, "$index" standing for its place, and how many), `$limit` (a limit the
target declared, or any count from 1), and `$encodingOf` and `$checksumOf`, the
binary encoding of a schema captured before (language.py). Requests use `{"$var":
name}` too, and "$user" (anywhere in a string) stands for a username unique to the case.
MessagePack values are written `{"$bin": "<base64>"}` for bytes, `{"$ext": [type,
"<base64>"]}` for extension types, and `"#12"` for the map key 12.
"""

import base64
import json

import msgpack

from .language import Schema

PACKED, UNDEFINED = msgpack.ExtType(17, b""), msgpack.ExtType(18, b"")

WORDS = {"$type", "$capture", "$var", "$unordered", "$includes", "$startsWith", "$partial", "$oneOf", "$not",
         "$absent", "$literal", "$encodingOf", "$checksumOf", "$limit", "$each", "$length"}
TYPES = {
    "string": lambda v: type(v) is str,
    "integer": lambda v: type(v) is int,  # written without a fraction or exponent: 5, never 5.0
    "number": lambda v: type(v) in (int, float),
    "boolean": lambda v: type(v) is bool,
    "array": lambda v: type(v) is list,
    "object": lambda v: type(v) is dict,
    "null": lambda v: v is None,
    "bytes": lambda v: type(v) is dict and list(v) == ["$bin"],
    "any": lambda v: True,
}


def is_matcher(value):
    """Whether a fixture value is a matcher object rather than a literal."""
    return type(value) is dict and bool(value) and all(key in WORDS for key in value)


def compare(expected, actual, captured, path=()):
    """Yield (path, explanation) for every way `actual` differs from `expected`; $capture adds to `captured`."""
    if is_matcher(expected):
        yield from _matcher(expected, actual, captured, path)
    elif type(expected) is dict:
        if list(expected) == ["$bin"] and actual != expected:
            yield path, f"expected the bytes {_show(expected)}, got {_show(actual)}"
            return
        if type(actual) is not dict:
            yield path, f"expected an object, got {_show(actual)}"
            return
        for key in expected.keys() - actual.keys():
            if expected[key] != {"$absent": True}:
                yield path + (key,), "missing"
        for key in actual.keys() - expected.keys():
            yield path + (key,), f"unexpected key, holding {_show(actual[key])}"
        for key in expected.keys() & actual.keys():
            yield from compare(expected[key], actual[key], captured, path + (key,))
    elif type(expected) is list:
        if type(actual) is not list:
            yield path, f"expected an array, got {_show(actual)}"
        elif len(actual) != len(expected):
            yield path, f"expected {len(expected)} elements, got {len(actual)}: {_show(actual)}"
        else:
            for index, (want, got) in enumerate(zip(expected, actual)):
                yield from compare(want, got, captured, path + (index,))
    elif not _equal(expected, actual):
        yield path, f"expected {_show(expected)}, got {_show(actual)}"


def _matcher(expected, actual, captured, path):
    if "$literal" in expected:
        if not _equal(expected["$literal"], actual):
            yield path, f"expected {_show(expected['$literal'])}, got {_show(actual)}"
        return
    if "$absent" in expected:
        yield path, f"expected no value, got {_show(actual)}"
        return
    if "$type" in expected and not TYPES[expected["$type"]](actual):
        yield path, f"expected any {expected['$type']}, got {_show(actual)}"
        return
    if "$var" in expected:  # (what comes back as it was captured is the same at once, however large)
        value = expected_value(expected["$var"], captured)
        if json.dumps(value) != json.dumps(actual):
            yield from compare(value, actual, captured, path)
    if "$limit" in expected:  # the runner keeps each declared limit under ("limit", its name)
        declared = captured.get(("limit", expected["$limit"]))
        if declared is not None:
            yield from compare(declared, actual, captured, path)
        elif type(actual) is not int or actual < 1:
            yield path, f"expected a count from 1 (the {expected['$limit']} limit, not declared), got {_show(actual)}"
    if "$length" in expected or "$each" in expected:
        if type(actual) is not list:
            yield path, f"expected an array, got {_show(actual)}"
            return
        if "$length" in expected:
            yield from ((where, f"the number of elements: {why}")
                        for where, why in compare(expected["$length"], len(actual), captured, path))
        for index, element in enumerate(actual if "$each" in expected else ()):
            yield from compare(_indexed(expected["$each"], index), element, captured, path + (index,))
    for word in ("$encodingOf", "$checksumOf"):  # the encoding a server of the captured schema must use
        if word in expected:
            names, checksum = Schema(expected_value(expected[word], captured)).encoding()
            wanted = {name: i for i, name in enumerate(names)} if word == "$encodingOf" else checksum
            yield from compare(wanted, actual, captured, path)
    if "$not" in expected and next(compare(expected["$not"], actual, dict(captured), path), None) is None:
        yield path, f"expected anything but {_show(expected['$not'])}, got {_show(actual)}"
    if "$oneOf" in expected:
        tries = [list(compare(option, actual, dict(captured), path)) for option in expected["$oneOf"]]
        if all(tries):
            yield path, f"matches none of {len(tries)} alternatives: " + " | ".join(
                f"{_where(p)} {why}" for p, why in (t[0] for t in tries))
    if "$partial" in expected:
        if type(actual) is not dict:
            yield path, f"expected an object, got {_show(actual)}"
        else:
            for key, want in expected["$partial"].items():
                if key in actual:
                    yield from compare(want, actual[key], captured, path + (key,))
                elif want != {"$absent": True}:
                    yield path + (key,), "missing"
    for word, exact in (("$unordered", True), ("$includes", False)):
        if word in expected:
            yield from _elements(expected[word], actual, captured, path, exact)
    if "$startsWith" in expected:
        start = expected["$startsWith"]
        if type(actual) is not list or len(actual) < len(start):
            yield path, f"expected an array starting with {_show(start)}, got {_show(actual)}"
        else:
            for index, want in enumerate(start):
                yield from compare(want, actual[index], captured, path + (index,))
    if "$capture" in expected:
        captured[expected["$capture"]] = actual


def _elements(expected, actual, captured, path, exact):
    """Match expected elements to distinct actual elements, in any order."""
    if type(actual) is not list:
        yield path, f"expected an array, got {_show(actual)}"
        return
    if exact and len(actual) != len(expected):
        yield path, f"expected {len(expected)} elements in any order, got {len(actual)}: {_show(actual)}"
        return
    keyed = _keyed(actual)
    if _assign(expected, actual, captured, set(), keyed) is None:
        unmatched = [e for e in expected if not any(not list(compare(e, actual[i], {}, ()))
                                                     for i in _candidates(e, actual, keyed))]
        if not unmatched:
            yield path, f"each expected element matches, but not all at once: {_show(actual)}"
            return
        tries = [list(compare(unmatched[0], actual[i], {}, path + (i,))) for i in _candidates(unmatched[0], actual,
                                                                                               keyed)]
        closest = min(tries, key=len, default=[])
        yield path, f"no element matches {_show(unmatched[0], 100)}" + (
            "; the closest differs at " + "; ".join(f"{_where(p)} {why}" for p, why in closest[:3]) if closest else "")


def _assign(expected, actual, captured, used, keyed):
    """Give each expected element its own matching actual element (backtracking); None if impossible."""
    if not expected:
        return used
    first, rest = expected[0], expected[1:]
    for index in _candidates(first, actual, keyed):
        if index not in used and not list(compare(first, actual[index], scratch := dict(captured), ())):
            found = _assign(rest, actual, scratch, used | {index}, keyed)
            if found is not None:
                captured.update(scratch)
                return found
    return None


def _keyed(actual):
    """For each key, the places in `actual` of the objects that hold it (found once for all elements)."""
    keyed = {}
    for index, element in enumerate(actual):
        if type(element) is dict:
            for key in element:
                keyed.setdefault(key, []).append(index)
    return keyed


def _candidates(expected, actual, keyed):
    """The places in `actual` of the elements an expected one could match, in order: where it needs an
    object holding some key (a literal object, a $partial one, each alternative of a $oneOf), only those;
    without this, a list of 60,000 elements is compared in full for each element expected."""
    keys = _needed(expected)
    if keys is None:
        return range(len(actual))
    return sorted({index for key in keys for index in keyed.get(key, ())})


def _needed(expected):
    """Keys of which a matching object holds at least one, or None when any element might match."""
    if type(expected) is not dict:
        return None
    if is_matcher(expected):
        if list(expected) == ["$partial"] and type(expected["$partial"]) is dict:
            expected = expected["$partial"]
        elif list(expected) == ["$oneOf"] and type(expected["$oneOf"]) is list:
            alternatives = [_needed(option) for option in expected["$oneOf"]]
            return None if None in alternatives else [key for keys in alternatives for key in keys]
        else:
            return None
    present = [key for key, value in expected.items() if value != {"$absent": True}]
    return present[:1] or None


def _indexed(value, index):
    """`value` with the text "$index" replaced by `index` wherever it is a whole value."""
    if value == "$index":
        return index
    if type(value) is dict:
        return {key: _indexed(element, index) for key, element in value.items()}
    return [_indexed(element, index) for element in value] if type(value) is list else value


def _equal(expected, actual):
    """Equality of JSON values: 3 equals 3.0, and true is not 1 (as Python has it)."""
    numbers = type(expected) in (int, float) and type(actual) in (int, float)  # (a bool's type is bool)
    return (numbers or type(expected) is type(actual)) and expected == actual


def expected_value(name, captured):
    if name not in captured:
        raise KeyError(f"nothing was captured as {name!r} before it was used")
    return captured[name]


def substitute(value, captured, user):
    """A value with "$user" replaced, and (unless `captured` is None) $var references too."""
    if type(value) is str:
        return value.replace("$user", user)
    if captured is not None and is_matcher(value) and "$var" in value:
        return expected_value(value["$var"], captured)
    if type(value) is dict:
        return {substitute(k, captured, user): substitute(v, captured, user) for k, v in value.items()}
    if type(value) is list:
        return [substitute(v, captured, user) for v in value]
    return value


def to_msgpack(value):
    """A JSON-written MessagePack value as Python data msgpack can pack."""
    if type(value) is dict:
        if list(value) == ["$bin"]:
            return base64.b64decode(value["$bin"])
        if list(value) == ["$ext"]:
            return msgpack.ExtType(value["$ext"][0], base64.b64decode(value["$ext"][1]))
        return {_key(k): to_msgpack(v) for k, v in value.items()}
    if type(value) is list:
        return [to_msgpack(v) for v in value]
    return value


def _key(key):
    return int(key[1:]) if key[:1] == "#" and key[1:].lstrip("-").isdigit() else key


def unpacked(value):
    """Unpacked MessagePack with every packed array, [Ext 17, [None, key, ...], row, ...], turned back
    into its maps (a nested header [key, ...] stands for a map value, Ext 18 for a value a map lacks)."""
    if type(value) is dict:
        return {key: unpacked(element) for key, element in value.items()}
    if type(value) is not list:
        return value
    if len(value) > 1 and value[0] == PACKED and type(value[1]) is list:
        return [unpacked(_unrow(row, value[1][1:])) for row in value[2:]]
    return [unpacked(element) for element in value]


def _unrow(row, header):
    value = {}
    for column, cell in zip(header, row):
        if cell != UNDEFINED:
            value[column[0] if type(column) is list else column] = (
                _unrow(cell, column[1:]) if type(column) is list else cell)
    return value


def from_msgpack(value, names=None):
    """Unpacked MessagePack as JSON notation, integer keys named when `names` knows them."""
    if type(value) is dict:
        return {_name(k, names): from_msgpack(v, names) for k, v in value.items()}
    if type(value) is list:
        if len(value) > 1 and value[0] == PACKED and type(value[1]) is list:
            return [from_msgpack(PACKED), _header_names(value[1], names), *(from_msgpack(v, names) for v in value[2:])]
        return [from_msgpack(v, names) for v in value]
    if type(value) is bytes:
        return {"$bin": base64.b64encode(value).decode()}
    if type(value) is msgpack.ExtType:
        return {"$ext": [value.code, base64.b64encode(value.data).decode()]}
    return value


def _header_names(header, names):
    return [_header_names(cell, names) if type(cell) is list else _name(cell, names) if type(cell) is int else cell
            for cell in header]


def _name(key, names):
    if type(key) is int:
        return names.get(key, f"#{key}") if names else f"#{key}"
    return key if type(key) is str else repr(key)


def _where(path):
    return "".join(f"[{p}]" if type(p) is int else f".{p}" for p in path) or "(top)"


def excerpt(data, most=200):
    """An answer's first bytes, to read: as a JSON string if they are text, else in the notation of
    bytes, {"$bin": "<base64>"}; "..." says there is more."""
    try:
        text = json.dumps(data[:most].decode(), ensure_ascii=False)
    except UnicodeDecodeError:
        text = json.dumps(_notation(data[:most]))
    return text + (" ..." if len(data) > most else "")


def _notation(value):  # (bytes, and an extension's value, as the cases write them)
    return from_msgpack(value) if isinstance(value, (bytes, msgpack.ExtType)) else repr(value)


def _show(value, limit=160):
    """A value as JSON, shortened at a word's end if it is long."""
    text = json.dumps(value, ensure_ascii=False, default=_notation)
    try:
        text.encode()
    except UnicodeEncodeError:  # half a surrogate pair cannot be printed as it is: escape it
        text = json.dumps(value, default=_notation)
    if len(text) <= limit:
        return text
    cut = text[:limit]
    return cut[:max(cut.rfind(" "), limit // 2)] + " ..."


def explain(mismatches):
    """Readable lines for a list of (path, explanation) pairs."""
    return [f"{_where(path)}: {why}" for path, why in mismatches]
