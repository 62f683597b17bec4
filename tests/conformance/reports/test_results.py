"""One verdict model (reports/results.py): several runs of a case merged into one Result that says no more
than the runs saw, and the words every command tallies Results with."""

import pytest

from conformance.language.suite import Case
from conformance.reports.results import Result, merged, not_run, tally

CASE = Case("area/topic/name", "A case.", ("header.id",), "MUST")


def tried(*statuses):
    """The Results of one case, a run each: "pass", "fail:why" (a failure, and its problem), "known:why",
    "stale", "errored", "not-run"."""
    results = []
    for status in statuses:
        status, _, why = status.partition(":")
        status = {"known": "known-failure"}.get(status, status)
        results.append([Result(CASE, status, [why] if why else [], 0.1, "MUST" if why else "")])
    return results


@pytest.mark.parametrize("runs, status, tries, problems", [
    (["pass", "pass", "pass"], "pass", (0, 3), []),
    (["fail:[0].@id_: missing", "fail:[0].@id_: missing"], "fail", (2, 2), ["[0].@id_: missing"]),
    # failing every time, each time otherwise: failed (not flaky), and the runs' differences said
    (["fail:[0].@id_: missing", "fail:[1]: unexpected key"], "fail", (2, 2),
     ["[0].@id_: missing", "it failed in each of the 2 runs, not the same way each time: run 1: [0].@id_: "
                           "missing; run 2: [1]: unexpected key"]),
    # values that vary by design (a username, a number) are the same failure
    (["fail:expected 1, got cf-0123456789ab", "fail:expected 2, got cf-ba9876543210"], "fail", (2, 2),
     ["expected 1, got cf-0123456789ab"]),
    (["pass", "fail:[0].@id_: missing", "pass"], "flaky", (1, 3),
     ["run 1: passed", "run 2: [0].@id_: missing", "run 3: passed"]),
    # a run the target did not answer is no evidence: neither a failure nor a pass
    (["pass", "errored:no answer", "not-run"], "pass", (0, 1), []),
    (["errored:no answer", "not-run"], "errored", (), ["no answer"]),
    (["known:[0].@id_: missing", "stale"], "known-failure", (1, 2), ["[0].@id_: missing", "it passed in 1 of 2 runs"]),
    (["stale", "stale"], "stale", (0, 2), []),
])
def test_runs_of_a_case_merge_into_what_they_saw(runs, status, tries, problems):
    [result] = merged(tried(*runs))
    assert (result.status, result.tries, result.problems) == (status, tries, problems)


def test_a_tally_keeps_every_status_apart_and_says_a_shared_reason_once():
    results = [*merged(tried("pass")), *merged(tried("fail:x")), *merged(tried("known:x")), *merged(tried("stale")),
               *merged(tried("pass", "fail:x")), not_run(CASE, "for other services", "needs calculator"),
               not_run(CASE, "for other services", "needs calculator"), not_run(CASE, "not run", "the run was interrupted first"),
               not_run(CASE, "not run", "--maxfail 1 stopped the run first")]
    assert tally(results) == ("1 passed, 1 failed (1 MUST), 1 flaky (failing only some of the times they ran), "
                              "1 known failure, 1 stale; 2 for other services (needs calculator); 2 not run")
