"""A failure made as small as it can be, and sent again: what a fuzzer reports of each kind of failure.

How this works
--------------
`shrink` tries calls simpler than a failing one (`simpler`: a header made
for it left out, its arguments made smaller as values.smaller makes them, a wrong call's valid part made
smaller with the same thing wrong at the same place, a `@select_` with an
entry fewer) and keeps the first that fails the same way (the same `kind`),
until none does or MAX_SHRINKS calls are spent. `confirm` then sends the
call REPEATS times more: a failure that does not come back each time is
flaky, and its rate shows (verdicts.py). The earlier calls a failure needs
are found by its reproduction (reproduction.py).
"""

import itertools

from . import rejections, selections, values
from .answers import Call

MAX_SHRINKS = 300  # calls one finding may spend on being made smaller (2**53 to a bound at 101: about 180)
REPEATS = 4  # times the call of a finding is sent again, to tell a steady failure from a flaky one


def judge(fuzzer, function, finding):
    """The call of a finding sent again (with new texts and integers, to a function that makes something of
    each: fuzzer.creating): its Finding, or None (a MessagePack call goes after the same call on JSON,
    which its answer is compared with)."""
    if finding.check == "rejected":
        return rejections.judge_wrong(fuzzer, function, finding.call, finding.path, finding.reason)
    headers, body = finding.call
    if function.name in fuzzer.creating:  # (the same call again would be refused: one like it, new, is sent)
        body = {function.name: values.unique(body[function.name], fuzzer.rng)}
    call = Call(function, [headers, body])
    if finding.binary and function.name in fuzzer.creating:
        return fuzzer.check(call._replace(binary=True))[0]
    if finding.binary:
        found, answered = fuzzer.check(call)
        call = call._replace(binary=True, before=None if found else answered)
    return fuzzer.check(call)[0]


def confirm(fuzzer, function, finding, times=REPEATS):
    """The finding, with how many of `times` sends of its call failed the same way again."""
    failed = sent = 0
    while sent < times and not fuzzer.late():
        again, sent = judge(fuzzer, function, finding), sent + 1
        failed += bool(again) and again.check == finding.check
    return finding._replace(again=(failed, sent))


def shrink(fuzzer, function, finding):
    """The finding, with its call made as small as it can be while it fails the same check the same way."""
    budget = MAX_SHRINKS
    while budget > 0 and not fuzzer.late() and finding.check != "message":
        for call, valid in itertools.islice(simpler(fuzzer, function, finding), budget):
            budget -= 1
            again = judge(fuzzer, function, finding._replace(call=call))
            if again and again.kind == finding.kind:  # (its place stays the first call's: what came before it)
                finding = again._replace(valid=valid, at=finding.at)
                break
        else:  # (none simpler fails so, or the budget is spent)
            return finding
    return finding


def simpler(fuzzer, function, finding):
    """Yield calls simpler than a finding's, each with the valid arguments a rejected one is made of: a
    header it was made with left out, simpler arguments (for a rejected call, simpler valid ones with the same thing wrong at the same
    place), then a @select_ with an entry fewer."""
    (headers, body), name = finding.call, function.name
    yield from (([{k: v for k, v in headers.items() if k != made}, body], finding.valid) for made in headers
                if made not in values.OWN and made not in fuzzer.settings.headers)  # (a header made, left out)
    if finding.check != "rejected":
        yield from (([headers, {name: smaller}], None)
                    for smaller in values.smaller_fields(fuzzer.schema, body[name], function.arguments))
    elif finding.valid is not None:
        for valid in values.smaller_fields(fuzzer.schema, finding.valid, function.arguments):
            yield from (([headers, {name: wrong}], valid) for wrong, path, reason in values.object_wrongs(
                fuzzer.schema, valid, function.arguments, (name,)) if path == finding.path and reason == finding.reason)
    yield from (([{**headers, "@select_": selection}, body], finding.valid)
                for selection in selections.fewer(headers.get("@select_")))
