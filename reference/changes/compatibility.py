"""Compatibility: which changes of a schema break the clients of the old one, by the protocol's rules.

How this works
--------------
`compare(old, new)` walks two loaded schemas side by side from each public
function of the old one, as `validate.check` walks a value against a type:
`types()` compares two type expressions, and `WALKS` has one function for
each kind of definition (the fields of a struct, the tags of a union), the
place passed down. What clients send and what they read obey opposite rules,
so the walk carries a *side*:

- request (arguments, request headers, all inside them): the new type must
  accept every value the old one did. A new optional field, a new union tag,
  integer -> number, T -> T? are compatible; a field removed, a required one
  added, the reverse widenings, a tag removed break.
- response (results, response headers): the new type must stay within the
  old. Clients ignore result fields they do not know, never tags: a field
  added, number -> integer, T? -> T, a tag removed are compatible; a required
  field removed, a new tag (a function's own, or an `errors.*` one, which
  every function gets), integer -> number, T -> T? break.

`!` is part of a field's name on the wire, so `id` -> `id!` is a rename. Names
of definitions never travel, so definitions are compared by their shapes,
each pair of them once for each side it is reached from (a `Pair`, which
remembers what led to it): a finding inside a shared struct is shown with the
path to it from every function it reaches, and which clients it breaks
(findings.py: pairs, findings and where each is written). RULES is the
catalogue; reference/README.md states it as a table.
"""

from typing import NamedTuple

from ..protocol import codec
from ..protocol.select import options
from ..protocol.types import Struct, Union
from .findings import Finding, Pair, Places, Reach, Root, element_of

RULES = {  # id -> (side, level, what an old client meets, an example), as reference/README.md's table shows them
    "function-removed": ("request", "breaking", "its calls get `FunctionUnknown`", "`fn.add` removed"),
    "function-protected": ("request", "breaking", "its calls without `@auth_` get `ErrorUnauthenticated_`",
                           '`"$authenticated": false` dropped, or `union.Auth_` defined'),
    "request-field-removed": ("request", "breaking", "a call that sends it is refused (`ObjectKeyDisallowed`)",
                              '`{"note!": "string"}` -> `{}`'),
    "request-field-added": ("request", "breaking", "a call without the new required field is refused "
                            "(`RequiredObjectKeyMissing`)", '`{}` -> `{"id": "string"}`'),
    "request-field-renamed": ("request", "breaking", "the `!` is part of the name: a call that sends the old "
                              "name is refused", "`id` -> `id!`, or `id!` -> `id`"),
    "request-type-narrowed": ("request", "breaking", "a value an old call may send is refused",
                              "`number` -> `integer`, `T?` -> `T`, `any` -> `string`"),
    "request-tag-removed": ("request", "breaking", "a call that sends the tag is refused",
                            "`union.Shape` loses its tag `Circle`"),
    "response-field-removed": ("response", "breaking", "a required field it reads no longer comes",
                               '`{"id": "string"}` -> `{}`'),
    "response-field-renamed": ("response", "breaking", "a required field it reads comes under another name "
                               "(`!` is part of the name)", "`id` -> `id!`"),
    "response-optional-field-removed": ("response", "warning", "an optional field no longer comes (it took its "
                                        "absence already); one no selection can name", "`ErrorBusy`'s "
                                        '`{"note!": "string"}` -> `{}`, or `note!` -> `note`'),
    "response-type-widened": ("response", "breaking", "a value it does not read may come",
                              "`integer` -> `number`, `T` -> `T?`, `string` -> `any`"),
    "response-tag-added": ("response", "breaking", "a union tag it does not know may come",
                           "`union.Shape` gains a tag `Square`, in a result"),
    "result-tag-added": ("response", "breaking", "a result tag it does not know may come",
                         '`"->": [{"Ok_": {}}]` -> `[{"Ok_": {}}, {"ErrorSoldOut": {}}]`'),
    "errors-tag-added": ("response", "breaking", "every function may answer a tag it does not know",
                         "a new `errors.*` entry, or a tag added to one"),
    "selected-field-removed": ("selection", "breaking", "a `@select_` naming the optional field is refused; "
                               "a client that selects nothing took its absence already",
                               '`{"note!": "string"}` -> `{}` in `struct.Item`, which an `Ok_` reaches'),
    "selected-tag-removed": ("selection", "breaking", "a `@select_` naming the tag's fields is refused; a client "
                             "that selects nothing never meets it", "`union.Shape` loses `Circle`, which has "
                             "fields, where only results reach it"),
    "selected-type-renamed": ("selection", "breaking", "a `@select_` naming the old name is refused; a client "
                              "that selects nothing never sees a name", "`struct.Item` -> `struct.Product`, "
                              "which an `Ok_` reaches (a `fn.*` value's arguments too) and no longer reaches by "
                              "its old name"),
    "type-changed": ("both", "breaking", "no value of the old type is one of the new",
                     '`string` -> `integer`, `["T"]` -> `{"string": "T"}`'),
    "recorded-call-refused": ("request", "breaking", "a call an old client made (`--traffic`) is refused by "
                              "the new schema, and no rule above says why", "the rules have a gap; the evidence "
                              "decides"),
    "binary-checksum-changed": ("binary", "note", "a binary client negotiates once more (its next MessagePack "
                                "request is refused, or its JSON one answered with `@enc_`)",
                                "any change of a name the encoding covers"),
}
class Comparison:
    """Two schemas compared: `findings` by (rule, element), and `notes`."""

    def __init__(self, old, new):
        self.old, self.new = old, new
        self.before, self.after = Places(old), Places(new)  # where each element is, in the old and the new
        self.pairs: dict = {}  # (id(old node), id(new node), side) -> Pair
        self.reach = Reach(self.pairs.values())  # who reaches each pair, found once a finding asks
        self.findings: dict = {}  # (rule, element) -> Finding
        self.notes: list = []
        self.waiting: list = []  # Pairs to walk (a list, not recursion: a chain of definitions may be long)
        self.headers: dict = {}  # side -> the old schema's headers of that side, as one struct (Headers)
        self.unselected: list = []  # (Pair, field or tag, detail, where): gone from a result; breaks selections?

    def walk(self):
        """Compare every function of the old schema a client can call (a service's own `fn.x_` and
        `$internal` ones too), then the headers, what selections name, and the encodings."""
        old, new = self.old, self.new
        for name, function in sorted(old.functions.items()):
            now = new.functions.get(name)
            if now is None:
                gone = self.visit(function.arguments, None, "request", Root("call", name))
                self.found("function-removed", name, self.before.where(name, [name]), f"{name} is gone").add(gone)
                continue
            call = self.visit(function.arguments, now.arguments, "request", Root("call", name))
            if now.authenticated and not function.authenticated:
                self.found("function-protected", name, self.after.where(name, [name]),
                           f"{name} now needs @auth_").add(call)
            self.visit(function.result, now.result, "response", Root("read", name))
        for side, root in (("request", "send"), ("response", "receive")):
            before, after = getattr(old, f"{side}_headers"), getattr(new, f"{side}_headers")
            self.headers[side] = Headers(before, side)
            self.visit(self.headers[side], Headers(after, side), side, Root(root, ""))
        while self.waiting:
            pair = self.waiting.pop()
            WALKS[type(pair.old)](self, pair)
        self.selections()
        checksums = codec.encoding(old).checksum, codec.encoding(new).checksum
        if checksums[0] != checksums[1]:
            self.notes.append(("binary-checksum-changed", f"the binary checksum changes from {checksums[0]} to "
                               f"{checksums[1]}: " + RULES["binary-checksum-changed"][2].replace("`", "")))
        return self

    def visit(self, old, new, side, root=None, parent=None, step=None):
        """The Pair of two definitions on `side`, reached from `root` or from `parent` by `step`; to be
        walked, the first time it is reached."""
        key = (id(old), id(new), side)
        pair = self.pairs.get(key)
        if pair is None:
            pair = self.pairs[key] = Pair(old, new, side)
            if new is not None:
                self.waiting.append(pair)
        if root:
            pair.roots.append(root)
        else:
            pair.parents.append((parent, step))
        return pair

    def types(self, old, new, pair, name, whole=None):
        """Compare the type expressions `old` and `new` of the field (or header) `name` of `pair`: one
        verdict for the field, told as the whole change (`whole`: the field's types, when inside them)."""
        change = Change(*(whole or (old, new)))
        request = pair.side == "request"
        if old.kind == new.kind and old.kind in ("array", "map"):
            rule = _nulls(old, new, request)
            if rule:
                return self.changed(rule, pair, name, change)
            return self.types(old.of, new.of, pair, name, whole or (old, new))
        same = old.kind == new.kind and (old.kind not in ("fn", "ext") or old.of.name == new.of.name)
        wider, narrower = (_wider(new, old), _wider(old, new)) if request else (_wider(old, new), _wider(new, old))
        if not same and not wider and not narrower:
            return self.changed("type-changed", pair, name, change)
        rule = _nulls(old, new, request) or (None if same or wider else
                                             "request-type-narrowed" if request else "response-type-widened")
        if rule:
            self.changed(rule, pair, name, change)
        if same and old.kind in ("struct", "union", "fn"):
            self.visit(old.of, new.of, pair.side, parent=pair, step=f"{name}: {written(change.new)}")

    def fields(self, pair):
        """Compare the fields of two structs (WALKS["struct"])."""
        old, new, request = pair.old.fields, pair.new.fields, pair.side == "request"
        bare = {name.rstrip("!"): name for name in new}
        for name, type_ in old.items():
            if name in new:
                self.types(type_, new[name], pair, name)
                continue
            other = bare.get(name.rstrip("!"))
            said = f"{name} -> {other}" if other else f"{name} is gone"
            where = self.before.where(*self.before.field(pair.old, name))
            if not request and name.endswith("!"):  # (a warning, or a break if a selection may name it)
                self.unselected.append((pair, name, said, where))
                continue
            rule = "request-field-" if request else "response-field-"
            self.changed(rule + ("renamed" if other else "removed"), pair, name, said, where)
        for name in new:
            if request and name not in old and not name.endswith("!") and name + "!" not in old:
                self.changed("request-field-added", pair, name, f"{name} is required", site=None)

    def headers(self, pair):
        """Compare the headers both declare (WALKS[Headers]): an undeclared header is allowed, so one
        removed or added breaks no client."""
        for name, type_ in pair.old.fields.items():
            if name in pair.new.fields:
                self.types(type_, pair.new.fields[name], pair, name)

    def tags(self, pair):
        """Compare the tags of two unions, results or calls (WALKS["union"])."""
        old, new = pair.old.tags, pair.new.tags
        for tag, struct in old.items():
            if tag in new:
                self.visit(struct, new[tag], pair.side, parent=pair, step=tag)
            elif pair.side == "request" or struct.fields:
                where = self.before.where(*self.before.node(struct))
                if pair.side == "request":
                    self.changed("request-tag-removed", pair, tag, f"{tag} is gone", where)
                else:  # (a selection may name its fields)
                    self.unselected.append((pair, tag, f"{tag} is gone", where))
        for tag, struct in new.items():
            if tag in old or pair.side == "request" or tag.endswith("_"):  # (the protocol's own: every client's)
                continue
            group = self.new.tag_owners.get(tag)
            rule = "errors-tag-added" if group else "result-tag-added" if pair.new.name.endswith(" ->") else \
                "response-tag-added"
            place = self.after.node(struct)
            self.found(rule, element_of(*place), self.after.where(*place), f"{tag} is new").add(pair, tag)

    def selections(self):
        """Judge what a result lost by what an old client's `@select_` may name (select.py's options):
        `struct.X` and `union.X` wherever an `Ok_` reaches, and the fields of those and of `Ok_`. A name
        gone, or an optional field or a tag with fields gone, breaks clients that select it."""
        below = self.reach.below()
        reached = [pair for pair in self.pairs.values() if _named(pair) == "Ok_"]
        seen = set(reached)
        for pair in reached:  # (which grows as it is walked)
            for inner, _ in below.get(pair, ()):
                if inner not in seen:
                    seen.add(inner)
                    reached.append(inner)
        named = {pair for pair in reached if _named(pair)}
        lost = self.lost()
        for pair in reached:  # (a struct.X or union.X an Ok_ reaches is named by selections)
            old, new = pair.old, pair.new
            if old.name != new.name and old.name in lost:
                self.found("selected-type-renamed", old.name, self.after.where(*self.after.node(new)),
                           f"{old.name} -> {new.name}").add(pair)
        selected = {(id(pair.old), name) for pair, name, _, _ in self.unselected if pair in named}
        for pair, name, said, where in self.unselected:
            field = isinstance(pair.old, Struct)
            if (id(pair.old), name) in selected:
                self.changed(f"selected-{'field' if field else 'tag'}-removed", pair, name, said, where)
            elif field:  # (a tag no selection names, gone from what clients read, breaks nothing)
                self.changed("response-optional-field-removed", pair, name, said, where)

    def lost(self):
        """The `struct.X` and `union.X` a selection of a function's old result may name and its new result
        does not offer (a struct without fields has no name to select; one that is still reached, say
        through a cycle of other lengths, is still selected)."""
        lost = set()
        for name, function in self.old.functions.items():
            if name in self.new.functions:
                lost |= options(function).keys() - options(self.new.functions[name]).keys()
        return lost

    def changed(self, rule, pair, name, detail, where=None, site=""):
        """A finding at the field or tag `name` of `pair` (its site: that name, or with site=None the whole);
        where it is: its type's place for a change of type, else its name's."""
        place = self.after.field(pair.new, name)
        typed = rule.endswith(("-narrowed", "-widened", "-changed"))
        self.found(rule, element_of(*place), where or self.after.where(*place, value=typed), detail).add(
            pair, name, name if site == "" else site)

    def found(self, rule, element, where, detail):
        """The Finding of `rule` at `element`, made when first found (where it is, and how it changed)."""
        return self.findings.setdefault((rule, element), Finding(rule, RULES[rule][1], element, where, detail,
                                                                 self.reach))

    def breaking(self):
        """The breaking findings not accepted on purpose."""
        return [f for f in self.findings.values() if f.level == "breaking" and not f.accepted]


class Change(NamedTuple):
    """A field's type before and after, written out only when a finding shows it."""

    old: object
    new: object

    def __str__(self):
        return f"{written(self.old)} -> {written(self.new)}"


class Headers(Struct):
    """The request or response headers a schema declares, as one struct of fields (the walk's own kind)."""

    def __init__(self, declared, side):
        super().__init__(f"@{side}")
        self.fields = declared


WALKS = {Struct: Comparison.fields, Union: Comparison.tags, Headers: Comparison.headers}


def compare(old, new):
    """How `new` (a Schema) changes `old` for the old one's clients: a Comparison, walked."""
    return Comparison(old, new).walk()


def _named(pair):
    """What a selection calls a result's definition: "Ok_" for a result's `Ok_` fields (`"->"`), its
    name for a struct.X or union.X, "tag" for a union.X tag's fields, else "" (a call's, an error's)."""
    old, parents = pair.old, pair.parents
    if old.name.startswith(("struct.", "union.")):
        return old.name
    if any(step == "Ok_" and parent.old.name.endswith(" ->") for parent, step in parents):
        return "Ok_"
    return "tag" if any(parent.old.name.startswith("union.") for parent, _ in parents) else ""


def _wider(wide, narrow):
    """Whether every value of `narrow`'s kind is one of `wide`'s (null aside): any takes all, number integers."""
    return wide.kind == "any" or (wide.kind, narrow.kind) == ("number", "integer")


def _nulls(old, new, request):
    """The rule null breaks, if it does: refused where an old client may send it, sent where one reads."""
    if request and old.nullable and not new.nullable:
        return "request-type-narrowed"
    if not request and new.nullable and not old.nullable:
        return "response-type-widened"
    return None


def written(type_):
    """A resolved type as the schema writes it: "integer?", ["struct.Item"], {"string": "number"}."""
    if type_.kind == "array":
        text = f"[{written(type_.of)}]"
    elif type_.kind == "map":
        text = f'{{"string": {written(type_.of)}}}'
    else:
        text = type_.of.name if type_.kind in ("struct", "union", "fn", "ext") else type_.kind
    return text + "?" * type_.nullable
