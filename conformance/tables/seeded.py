"""Families of cases about what the seeded generator makes, on the testbed: the examples and
entries of fn.api_, and a mock of the testbed (seeded values, stubs, verification).
"""

import json
from pathlib import Path

from .testbed import (
    AUTH,
    DISALLOWED,
    REQUIREMENTS,
    STRICT,
    TYPES,
    UNAUTHENTICATED,
    VALUES,
    case,
    cases_of,
    echo,
    error,
    missing,
    name_of,
    plain,
    public_api,
    schema,
    step,
    unwrap,
)

# A tree 21 levels deep: the walk goes past where a generator that stops early would.
TREE = json.loads((Path(__file__).parent / "tree.json").read_text(encoding="utf-8"))
# Examples both implementations draw for the testbed (from the same seeded generator as the mock).
EXAMPLES = {
    "info.Testbed": ("example", {}),
    "errors.Testbed": ("example", {"ErrorTestbed": {"code": 3178529, "note!": "kappa"}}),
    "struct.Point": ("example", {"title!": "sigma", "x": 3178529, "y": 35766321}),
    "struct.Chain": ("example", {"next": {"next": {"next": {"next": None, "value": 954081041}, "value": 1598503090},
                                          "value": 415302837}, "value": 326552725}),
    "union.Shape": ("example", {"Square": {"side": 0.0014801179065742148, "title!": "kappa"}}),
    "union.Auth_": ("example", {"Token": {"token": "sigma"}}),
    "union.Tree": ("example", TREE),
    "headers.Auth_": ("inputExample", {"@auth_": {"Token": {"token": "sigma"}}}),
    "fn.greet": ("inputExample", {"fn.greet": {"name": "sigma"}}),
    "fn.secret": ("inputExample", {"fn.secret": {"hint!": "sigma"}}),
    "fn.strict": ("inputExample", {"fn.strict": {
        "bool": False, "boolNull": True, "ints": [954081041, 1598503090], "names": {"chi": "xi", "phi": "kappa"},
        "note!": "sigma", "noteNull!": "beta", "point": {"title!": "gamma", "x": 1387367461, "y": 225740852},
        "pointNull": {"title!": "beta", "x": 772162768, "y": 834198808}, "shape": {"Dot": {}}}}),
}


def api_cases():
    """fn.api_ on the testbed: the public entries in order, the internal ones, and examples."""
    ask = lambda arguments, api: [step([{}, {"fn.api_": arguments}], [{}, {"Ok_": {"api": api}}])]
    public = ask({}, public_api())
    public[0]["response"]["spec"] = {"message": [{"$type": "object"}, {"Ok_": {"api": {"$includes": schema()}}}]}
    yield case("testbed/api/public", "fn.api_ answers the testbed's entries as written, comments and annotations "
               "included, with info first and the rest ordered by name.",
               ["schema.api", "internal.api", "internal.hidden", "conv.api"], public, requires=["testbed"])
    yield case("testbed/api/internal", "With includeInternal! true, the stock entries come too, in the same order.",
               ["internal.api", "conv.internal-schema"],
               ask({"includeInternal!": True}, {"$includes": [*schema(), {"$partial": {"fn.ping_": {}, "->": [{"Ok_": {}}]}}]}),
               requires=["testbed"])
    yield case("testbed/api/examples", "With includeExamples! true, every entry carries example values, drawn like "
               "the mock's values from the seeded generator.", ["internal.api", "conv.mock-generator"],
               ask({"includeExamples!": True}, {"$includes": [
                   {"$partial": {key: plain(next(e for e in public_api() if name_of(plain(e)) == key))[key], word: value}}
                   for key, (word, value) in EXAMPLES.items()]}), requires=["testbed"], spec=False)


GREET = {0: "sigma", 1: "sigma", 2: "lambda", 3: "delta", 4: "phi", 5: "xi"}
SEEDED = {  # seed -> what fn.echo answers right after it, with the @select_ of SELECTED
    11: {"any!": False, "int!": 382806820, "num!": 0.6527920359060131, "point!": {"x": 434362405, "y": 2014510910}},
    20: {"point!": {"title!": "delta", "x": 72839663, "y": 1131289281}, "sel!": {"union.Shape": {"Square": ["title!"]}},
         "shape!": {"Dot": {}}},
    47: {"int!": 1995108469, "sel!": {"struct.Point": ["title!", "y"], "union.Shape": {"Circle": []}}},
    57: {"bool!": True, "num!": 0.43419181761992715, "shape!": {"Circle": {"radius": 0.2813677588856629}}},
    69: {"any!": False, "bool!": False, "call!": {"fn.greet": {"name": "tau"}}, "num!": 0.3206568860079427,
         "point!": {"title!": "delta", "x": 403763224, "y": 1766576582}, "sel!": {"struct.Point": ["title!"]}},
    106: {"any!": 1928667454, "bool!": True, "call!": {"fn.greet": {"name": "lambda"}}, "num!": 0.9294432410641775,
          "point!": {"title!": "sigma", "x": 988813812, "y": 1124030359}, "sel!": {"struct.Point": ["title!", "x"],
          "union.Shape": {"Circle": [], "Square": ["side", "title!"]}}, "shape!": {"Circle": {"radius": 0.3218710712724696}},
          "str!": "lambda"},
}
MOCK_EXAMPLES = {  # calls and stubs drawn well into the sequence, where a different draw shows (a few fields of a large one)
    "fn.createStub_": {"count!": 3178529, "strictMatch!": False, "stub": {
        "fn.echo": {"$partial": {"any!": "lambda", "int!": 1635388412, "str!": "gamma"}},
        "->": {"Ok_": {"$partial": {"int!": 358827277, "str!": "xi"}}}}},
    "fn.verify_": {"call": {"fn.strict": {"note!": "xi", "noteNull!": "kappa", "pointNull": None, "shape": {"Dot": {}}}},
                   "count!": {"Exact": {"times": 759440517}}, "strictMatch!": False}}
SELECTED = {"->": {"Ok_": ["bool!", "int!", "num!", "str!", "any!", "point!", "shape!", "call!", "sel!", "bytes!"]}}
OK = [{}, {"Ok_": {}}]


def _mock(name, description, requirements, steps, spec=True):
    """A mock case: it starts with no stubs and no recorded calls, and runs alone."""
    clear = [step([{}, {"fn.clearStubs_": {}}], OK), step([{}, {"fn.clearCalls_": {}}], OK)]
    return case(f"testbed/mock/{name}", description, requirements, clear + steps, requires=["testbed", "mock"],
                exclusive=True, spec=spec)


def _unwrapped(values):
    """Values of VALUES without their Ours marks, and the conventions that judge any of them."""
    pairs = [unwrap(value) for value in values]
    return [value for value, _ in pairs], sorted({r for _, judged in pairs for r in judged})


def _seed(seed):
    return step([{}, {"fn.setRandomSeed_": {"seed": seed}}], OK)


def _stub(result, call=None):
    return step([{}, {"fn.createStub_": {"stub": {**(call or {"fn.echo": {}}), "->": result}}}], OK)


def mock_cases():
    """A mock of the testbed: seeded values, stubs of every type, verification."""
    for seed, greeting in GREET.items():
        yield _mock(f"seeded/greet-{seed}", f"After fn.setRandomSeed_ {seed}, a generated result is always the same.",
                    ["mock.rule1", "conv.mock-generator"], [_seed(seed), step([{}, {"fn.greet": {"name": "a"}}],
                                                                    [{}, {"Ok_": {"greeting": greeting}}])], spec=False)
    for seed, answer in SEEDED.items():
        yield _mock(f"seeded/echo-{seed}", "Seeded values of every type come out the same, draw for draw.",
                    ["mock.rule1", "conv.mock-generator", "header.select"],
                    [_seed(seed), step([{"@select_": SELECTED}, {"fn.echo": {}}], [{}, {"Ok_": answer}])], spec=False)
    for kind, (valid, invalid) in VALUES.items():
        valid, judged = ([{}], []) if kind == "sel" else _unwrapped(valid)  # a selection: see selection-scope
        fields = {f"{kind}!": valid[-1], f"{kind}Arr!": valid, f"{kind}MapNull!": {"k": valid[0], "n": None}}
        marks = {f"{kind}!": True, f"{kind}Arr!": {"*": True}, f"{kind}MapNull!": {"*": True}} if kind == "bytes" else None
        yield _mock(f"stub/{kind}", f"A stub's {TYPES[kind]} values come back as they were given.",
                    ["mock.rule3", "mock.createStub", *REQUIREMENTS[kind], *judged, *["conv.base64"] * (kind == "bytes")],
                    [_stub({"Ok_": fields}), step([{}, {"fn.echo": {"int!": 1}}], echo(fields, marks))])
        if not invalid:
            continue
        (value, ours), problem = unwrap(invalid[0][0]), invalid[0][1]
        found = [(["fn.createStub_", "stub", "->", "Ok_", f"{kind}!", *path], reason)
                 for path, reason in cases_of(kind, value, problem)]
        yield _mock(f"stub/{kind}-invalid", f"A stub whose result is not {TYPES[kind]} is refused, with its path.",
                    ["mock.createStub", "case.path", *REQUIREMENTS[kind], "conv.mock", *ours],
                    [step([{}, {"fn.createStub_": {"stub": {"fn.echo": {}, "->": {"Ok_": {f"{kind}!": value}}}}}],
                          error("ErrorInvalidRequestBody_", *found))], spec=False)
    yield _mock("stub/selection-scope", "A selection inside a stub is checked against the function of the request "
                "that carries it, fn.createStub_, which holds no struct or union to select.",
                ["mock.createStub", "conv.select-rules"],
                [step([{}, {"fn.createStub_": {"stub": {"fn.echo": {}, "->": {"Ok_": {"sel!": {"struct.Point": ["x"]}}}}}}],
                      error("ErrorInvalidRequestBody_",
                             (["fn.createStub_", "stub", "->", "Ok_", "sel!", "struct.Point"], DISALLOWED)))], spec=False)
    greet = {"fn.greet": {"name": "a"}}
    refused = [  # (name, stub, the case, what it shows)
        ("extra-key", {**greet, "->": {"Ok_": {"greeting": "x"}}, "extra": 1}, (["extra"], DISALLOWED),
         "A stub holds a call and -> only."),
        ("no-result", greet, ([], missing("->")), "A stub needs its result."),
        ("unknown-result", {**greet, "->": {"Nope": {}}}, (["->", "Nope"], DISALLOWED), "A stub's result is one of the function's."),
        ("other-functions-error", {**greet, "->": {"ErrorEcho": {"reason": "r"}}}, (["->", "ErrorEcho"], DISALLOWED),
         "Another function's error is not a result of this one."),
        ("stock-function", {"fn.ping_": {}, "->": {"Ok_": {}}}, (["fn.ping_"], DISALLOWED),
         "A stub of a function whose calls never reach the stubs (a stock one, or the mock's own) is refused."),
    ]
    for name, stub, (path, reason), description in refused:
        yield _mock(f"stub/refused/{name}", description, ["mock.createStub", "case.path", "conv.mock"],
                    [step([{}, {"fn.createStub_": {"stub": stub}}],
                          error("ErrorInvalidRequestBody_", (["fn.createStub_", "stub", *path], reason)))], spec=False)
    yield _mock("stub/group-error", "A stub may answer with a tag of an errors.* group; other calls are generated.",
                ["mock.rule3", "fn.errors-added"],
                [_stub({"ErrorTestbed": {"code": 1}}, greet), step([{}, greet], [{}, {"ErrorTestbed": {"code": 1}}]),
                 step([{}, {"fn.greet": {"name": "b"}}], [{}, {"Ok_": {"greeting": {"$type": "string"}}}])])
    yield _mock("stub/filled", "Required result fields a stub leaves out are generated, draw for draw after a seed.",
                ["mock.rule3", "conv.mock", "conv.mock-generator"],
                [_stub({"Ok_": {"bool": True}}, {"fn.strict": {"bool": True}}), _seed(3),
                 step([{}, {"fn.strict": STRICT}], [{}, {"Ok_": {
                     "bool": True, "boolNull": None, "ints": [40092786, 80334602], "names": {},
                     "point": {"x": 633391608, "y": 1788646081}, "pointNull": None,
                     "shape": {"Square": {"side": 0.1516263569479931}}}}])], spec=False)
    strict = {"fn.createStub_": {"stub": {"fn.echo": {"intArr!": [1]}, "->": {"Ok_": {"int!": 7}}}, "strictMatch!": True}}
    yield _mock("stub/strict-arrays", "A strict stub matches an array of the same elements only, not a longer one.",
                ["mock.rule3", "conv.mock"],
                [step([{}, strict], OK), step([{}, {"fn.echo": {"intArr!": [1]}}], [{}, {"Ok_": {"int!": 7}}]),
                 step([{}, {"fn.echo": {"intArr!": [1, 2]}}], [{"$type": "object"}, {"$not": {"Ok_": {"int!": 7}}}])], spec=False)
    seven, other = [{}, {"Ok_": {"int!": 7}}], [{"$type": "object"}, {"$not": {"Ok_": {"int!": 7}}}]
    points = {"fn.echo": {"pointArr!": [{"x": 2, "y": 9}, {"x": 1, "y": 5, "title!": "a"}]}}
    yield _mock("stub/array-of-objects", "Each object a stub's array names matches some object of the call's array "
                "partially, in any order; a call without one gets another answer.", ["mock.rule3", "conv.mock"],
                [_stub({"Ok_": {"int!": 7}}, {"fn.echo": {"pointArr!": [{"x": 1}, {"y": 9}]}}),
                 step([{}, points], seven), step([{}, {"fn.echo": {"pointArr!": [{"x": 1, "y": 5}]}}], other),
                 step([{}, {"fn.echo": {"pointArr!": [{"x": 2, "y": 1}, {"x": 3, "y": 9}]}}], other),
                 step([{}, {"fn.verify_": {"call": {"fn.echo": {"pointArr!": [{"title!": "a"}]}}}}], OK)], spec=False)
    yield _mock("stub/json-equality", "Stubs match by JSON equality: true is not 1, but 1 is 1.0, partially or strictly.",
                ["mock.rule3", "conv.mock"],
                [_stub({"Ok_": {"int!": 7}}, {"fn.echo": {"any!": True}}),
                 step([{}, {"fn.echo": {"any!": 1}}], other), step([{}, {"fn.echo": {"any!": True}}], seven),
                 step([{}, {"fn.createStub_": {"stub": {"fn.echo": {"any!": [1]}, "->": {"Ok_": {"int!": 8}}},
                                               "strictMatch!": True}}], OK),
                 step([{}, {"fn.echo": {"any!": [True]}}], [{"$type": "object"}, {"$not": {"Ok_": {"int!": 8}}}]),
                 step([{}, {"fn.echo": {"any!": [1.0]}}], [{}, {"Ok_": {"int!": 8}}])], spec=False)
    called = {"fn.echo": {"point!": {"x": 1, "y": 2}}}
    yield _mock("verify/partial-and-strict", "A call matches a verification partially, unless strictMatch! is true.",
                ["mock.verify", "mock.rule4", "error.verification", "case.verification-reason", "conv.mock"],
                [step([{}, called], [{"$type": "object"}, {"Ok_": {"$type": "object"}}]),
                 step([{}, {"fn.verify_": {"call": {"fn.echo": {"point!": {"x": 1}}}}}], OK),
                 step([{}, {"fn.verify_": {"call": {"fn.echo": {"point!": {"x": 1}}}, "strictMatch!": True}}],
                      [{}, {"ErrorVerificationFailure": {"reason": {"TooFewMatchingCalls": {
                          "wanted": {"AtLeast": {"times": 1}}, "found": 0, "allCalls": [called]}}}}])])
    yield _mock("verify/count", "count! asks for an exact number of calls; fn.verifyNoMoreInteractions_ passes once "
                "every call was verified.", ["mock.verify", "case.verification-reason", "conv.mock"],
                [step([{}, greet], [{}, {"Ok_": {"greeting": {"$type": "string"}}}]),
                 step([{}, {"fn.verify_": {"call": greet, "count!": {"Exact": {"times": 2}}}}],
                      [{}, {"ErrorVerificationFailure": {"reason": {"TooFewMatchingCalls": {
                          "wanted": {"Exact": {"times": 2}}, "found": 1, "allCalls": [greet]}}}}]),
                 step([{}, {"fn.verify_": {"call": greet}}], OK), step([{}, {"fn.verifyNoMoreInteractions_": {}}], OK)])
    yield _mock("verify/checked", "The call to verify is checked against the function's arguments.",
                ["mock.verify", "case.path", "conv.mock"],
                [step([{}, {"fn.verify_": {"call": {"fn.echo": {"point!": {"x": 1, "y": 2, "z": 3}}}}}],
                      error("ErrorInvalidRequestBody_", (["fn.verify_", "call", "fn.echo", "point!", "z"], DISALLOWED)))],
                spec=False)
    names = {"regex": "^fn\\..*$", "actual": 2, "expected": 1, "keys": ["fn.echo", "fn.greet"]}
    yield _mock("verify/one-function", "The call to verify names exactly one function; two are one case, not more.",
                ["mock.verify", "case.path", "conv.mock"],
                [step([{}, {"fn.verify_": {"call": {"fn.echo": {}, "fn.greet": {"name": "a"}}}}],
                      error("ErrorInvalidRequestBody_", (["fn.verify_", "call"],
                                                          {"ObjectKeyRegexMatchCountUnexpected": names})))], spec=False)
    yield _mock("schema", "The mock's public schema is the testbed's, its own functions hidden.",
                ["mock.same-schema", "mock.internal-hidden", "conv.api"],
                [step([{}, {"fn.api_": {}}], [{}, {"Ok_": {"api": public_api()}}])])
    yield _mock("validates", "The mock refuses an invalid call with the live server's error.",
                ["mock.rule2", "mock.validates", "conv.reasons", "conv.case-order"],
                [step([{}, {"fn.strict": {}}], error("ErrorInvalidRequestBody_",
                                                       *[(["fn.strict"], missing(k)) for k in STRICT]))])
    yield _mock("stub/cleared", "fn.clearStubs_ forgets every stub.", ["mock.clearStubs"],
                [_stub({"ErrorTestbed": {"code": 1}}, greet), step([{}, {"fn.clearStubs_": {}}], OK),
                 step([{}, greet], [{}, {"Ok_": {"greeting": {"$type": "string"}}}])])
    yield _mock("verify/cleared", "fn.clearCalls_ forgets the calls made so far.", ["mock.clearCalls", "mock.rule4"],
                [step([{}, greet], [{}, {"Ok_": {"greeting": {"$type": "string"}}}]), step([{}, {"fn.clearCalls_": {}}], OK),
                 step([{}, {"fn.verify_": {"call": greet}}], [{}, {"ErrorVerificationFailure": {"reason": {
                     "TooFewMatchingCalls": {"wanted": {"AtLeast": {"times": 1}}, "found": 0, "allCalls": []}}}}])])
    yield _mock("examples", "With includeInternal! and includeExamples!, the mock's own calls and stubs have "
                "examples too, of the testbed's functions, drawn like every example.", ["internal.api", "conv.mock-generator"],
                [step([{}, {"fn.api_": {"includeInternal!": True, "includeExamples!": True}}],
                      [{}, {"Ok_": {"api": {"$includes": [
                          {"$partial": {"_ext.Call_": {}, "example": {"fn.secret": {"hint!": "kappa"}}}},
                          {"$partial": {"_ext.Stub_": {}, "example": {"fn.secret": {"hint!": "sigma"},
                                                                      "->": {"Ok_": {"secret!": "kappa"}}}}},
                          *({"$partial": {name: {"$type": "object"}, "inputExample": {name: example}}}
                            for name, example in MOCK_EXAMPLES.items())]}}}])],
                spec=False)
    yield _mock("auth", "The mock protects the functions the schema protects.", ["mock.validates", "conv.auth-presence"],
                [step([{}, {"fn.secret": {}}], [{}, UNAUTHENTICATED]),
                 step([AUTH, {"fn.secret": {}}], [{}, {"Ok_": {"$type": "object"}}])])
