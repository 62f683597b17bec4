#!/bin/sh
# The conformance suite in any CI, in one step: check a server, a client and a
# schema loader, and keep the reports.
#
# How this works
# --------------
# Each suite named by its variable is run, with the known-failures file if one
# is given (one file serves the three; an entry of it that passes is stale and
# fails the job, as a new failure does):
#
#   SDMS_TARGET           the server's API URL (waited for, up to SDMS_WAIT seconds: 60)
#   SDMS_CLIENT           the command of a driver for the client under test
#   SDMS_SCHEMA           the command of a driver for the schema loader under test
#   SDMS_KNOWN_FAILURES   a known-failures file (conformance/README.md, Known failures)
#   SDMS_IMPLEMENTATION   the implementation's name, as the reports and the matrix say it
#   SDMS_REPORTS          where the reports go (conformance-reports)
#   SDMS_PYTHON           the Python that has the suite installed (python)
#
# Each suite writes NAME.xml (JUnit), NAME.json and NAME.html in SDMS_REPORTS
# (server, client, schema), and the matrix of them all is matrix.html and
# matrix.md. The exit status is the highest of the suites': 0 when every case
# passed or failed as known, 1 for a new failure or a stale entry, 2 when a
# suite could not be run (a target that never answered, a driver that is not
# there), 5 when a suite had no case to run, 130 when interrupted.

set -u
python=${SDMS_PYTHON:-python}
reports=${SDMS_REPORTS:-conformance-reports}
status=0
merged=""

suite() {  # NAME, then the command and its options: run one suite, its reports named NAME
    name=$1
    shift
    echo "== the $name suite: python -m conformance $*"
    "$python" -m conformance "$@" ${SDMS_KNOWN_FAILURES:+--known-failures "$SDMS_KNOWN_FAILURES"} \
        ${SDMS_IMPLEMENTATION:+--implementation "$SDMS_IMPLEMENTATION"} \
        --junit "$reports/$name.xml" --json "$reports/$name.json" --html "$reports/$name.html"
    code=$?
    if [ "$code" -gt "$status" ]; then
        status=$code
    fi
    if [ -s "$reports/$name.json" ]; then
        merged="$merged --report $reports/$name.json"
    fi
}

if [ -z "${SDMS_TARGET:-}${SDMS_CLIENT:-}${SDMS_SCHEMA:-}" ]; then
    echo "check.sh: nothing to check: set SDMS_TARGET, SDMS_CLIENT or SDMS_SCHEMA" >&2
    exit 2
fi
mkdir -p "$reports" || exit 2
if [ -n "${SDMS_TARGET:-}" ]; then
    suite server run --target "$SDMS_TARGET" --wait "${SDMS_WAIT:-60}"
fi
if [ -n "${SDMS_CLIENT:-}" ]; then
    suite client client --command "$SDMS_CLIENT"
fi
if [ -n "${SDMS_SCHEMA:-}" ]; then
    suite schema schema --command "$SDMS_SCHEMA"
fi
if [ -n "$merged" ]; then  # (word splitting of $merged is meant: --report FILE, once for each suite run)
    # shellcheck disable=SC2086
    "$python" -m conformance matrix $merged --html "$reports/matrix.html" --markdown "$reports/matrix.md" >/dev/null
fi
echo "== the reports are in $reports/ (exit status $status)"
exit "$status"
