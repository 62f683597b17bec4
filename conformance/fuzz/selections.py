"""Selections (`@select_`) the fuzzer makes, and the fields an answer holds that one left out.

How this works
--------------
A selection names, under `->`, the `Ok_` fields to keep, under a struct's
name the fields of that struct to keep wherever it is in the answer, and
under a union's name, tag by tag, the fields of that tag (PROTOCOL.md,
section 7). `made` picks some of each at random, of the
structs a function's `Ok_` can hold (`reachable`); `unselected` walks an
answer as the selection reads it and yields where it holds a field left out,
and where a required field it selected is missing;
`fewer` makes simpler selections, for a failing call to be shrunk.
"""


def made(schema, rng, function):
    """A @select_ for a call of `function`: a few of its Ok_ fields, of each struct's it returns, and of each
    union's, tag by tag."""
    pick = lambda names: sorted(rng.sample(sorted(names), rng.randint(0, len(names))))
    selection = {"->": {"Ok_": pick(function.results["Ok_"])}}
    for name in sorted(reachable(schema, function.results["Ok_"])):
        if name.startswith("struct.") and schema.structs[name] and rng.random() < 0.5:
            selection[name] = pick(schema.structs[name])
        elif name.startswith("union."):
            tags = {tag: pick(fields) for tag, fields in sorted(schema.unions[name].items())
                    if fields and rng.random() < 0.5}
            if tags:
                selection[name] = tags
    return selection


def fewer(selection):
    """Selections with one entry fewer than `selection` (none if None): a struct's or a union's left out, or
    one tag of a union's; `->` stays, as the checks read it."""
    for name, chosen in (selection or {}).items():
        if name != "->":
            yield {key: value for key, value in selection.items() if key != name}
            if type(chosen) is dict and len(chosen) > 1:
                yield from ({**selection, name: {t: f for t, f in chosen.items() if t != tag}} for tag in chosen)


def reachable(schema, fields):
    """The structs and unions a value of `fields` can hold, at any depth (what a selection may name)."""
    found, waiting = set(), list(fields.values())
    while waiting:
        type_ = waiting.pop()
        if type_.kind in ("array", "map"):
            waiting.append(type_.of)
        elif type_.kind in ("struct", "union", "fn") and (type_.kind, type_.of) not in found:
            found.add((type_.kind, type_.of))
            inner = schema.struct(type_)
            waiting += [t for fields in ([inner] if type_.kind == "struct" else inner.values())
                        for t in fields.values()]
    return {name for kind, name in found if kind in ("struct", "union")}


NOT_SELECTED, DROPPED = "not selected", "selected, yet left out"  # why a field is where it should not be, or not


def unselected(schema, value, fields, chosen, selection, path):
    """Yield (path, why) for each field an object of `fields` (and the structs in it) holds that a selection
    left out (NOT_SELECTED), and for each required field it selected that is missing (DROPPED)."""
    if not isinstance(value, dict):
        return
    yield from (((*path, name), DROPPED) for name in chosen if name in fields and not name.endswith("!")
                and name not in value)
    for name, element in value.items():
        if name not in chosen:
            yield (*path, name), NOT_SELECTED
        elif name in fields:
            yield from _unselected_in(schema, element, fields[name], selection, (*path, name))


def _unselected_in(schema, value, type_, selection, path):
    if value is None:
        return
    if type_.kind in ("array", "map") and isinstance(value, (list, dict)):
        for key, element in (enumerate(value) if isinstance(value, list) else value.items()):
            yield from _unselected_in(schema, element, type_.of, selection, (*path, key))
    elif type_.kind == "struct" and type_.of in selection:
        yield from unselected(schema, value, schema.struct(type_), selection[type_.of], selection, path)
    elif type_.kind == "union" and isinstance(value, dict) and len(value) == 1:  # (a tag it names is trimmed)
        [(tag, fields)] = value.items()
        tags = schema.struct(type_)
        if tag in selection.get(type_.of, {}) and tag in tags:
            yield from unselected(schema, fields, tags[tag], selection[type_.of][tag], selection, (*path, tag))
        elif tag in tags:
            yield from unselected(schema, fields, tags[tag], list(tags[tag]), selection, (*path, tag))
