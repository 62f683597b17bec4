"""conformance/ci/check.sh, the suite in an implementer's CI, run as a CI job runs it: a server of ours started
as theirs would be, the drivers of our client and schema loader, a known-failures file."""

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

import pytest

from tests.support import ROOT
from tests.support.servers import refusing, started

CHECK = ROOT / "conformance" / "ci" / "check.sh"
KINDS = ("server", "client", "schema")


def check(folder, **settings):
    """check.sh run in `folder` with the SDMS_ `settings` (and the suite installed in this Python)."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith("SDMS_")}
    environment |= {"SDMS_PYTHON": sys.executable, **{f"SDMS_{key.upper()}": value for key, value in settings.items()}}
    return subprocess.run(["sh", str(CHECK)], cwd=folder, env=environment, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def server():
    process, _, url = started("server")
    yield url
    process.kill()
    process.wait()


def test_the_three_suites_pass_and_every_report_is_kept(server, tmp_path):
    drivers = {"client": f"{sys.executable} -m reference.client --driver", "schema": f"{sys.executable} -m reference.schema --driver"}
    done = check(tmp_path, target=server, implementation="ours", **drivers)
    assert done.returncode == 0, done.stdout + done.stderr
    reports = tmp_path / "conformance-reports"
    assert sorted(p.name for p in reports.iterdir()) == sorted(
        [f"{kind}.{ending}" for kind in KINDS for ending in ("xml", "json", "html")] + ["matrix.html", "matrix.md"])
    for kind in KINDS:
        summary = json.loads((reports / f"{kind}.json").read_text())["summary"]
        assert summary["pass"] > 0 and summary["fail"] == 0
        assert int(ElementTree.parse(reports / f"{kind}.xml").getroot().get("failures")) == 0
    assert "ours" in (reports / "matrix.md").read_text()
    assert done.stdout.endswith("== the reports are in conformance-reports/ (exit status 0)\n")


def test_a_stale_known_failure_fails_the_job_and_a_failing_one_does_not(server, tmp_path):
    (tmp_path / "known.txt").write_text("calculator/add/integers  # listed, but it passes\n")
    stale = check(tmp_path, target=server, known_failures="known.txt", reports="out")
    assert stale.returncode == 1 and "1 stale" in stale.stdout and (tmp_path / "out" / "server.json").exists()
    (tmp_path / "known.txt").write_text("client/**  # this driver fails every case\n")
    failing = check(tmp_path, client=f"{sys.executable} -c 'import sys; [print(1, flush=True) for line in sys.stdin]'",
                    known_failures="known.txt")
    assert failing.returncode == 0 and "0 passed, 0 failed, 99 known failures" in failing.stdout, failing.stdout


def test_what_cannot_be_checked_is_said_and_is_no_pass(tmp_path):
    nothing = check(tmp_path)
    assert (nothing.returncode, nothing.stderr) == (2, "check.sh: nothing to check: set SDMS_TARGET, SDMS_CLIENT or SDMS_SCHEMA\n")
    with refusing() as url:
        unreachable = check(tmp_path, target=url, wait="0.5")
    assert unreachable.returncode == 2 and f"cannot reach {url}: Connection refused" in unreachable.stderr


def test_the_github_action_hands_each_of_its_inputs_to_check_sh():
    """action.yml (no YAML reader here: its lines as written) sets every variable check.sh reads but the
    Python, each from the input of the same name, and runs check.sh from where it lies."""
    action = (ROOT / "conformance" / "ci" / "action.yml").read_text()
    read = set(re.findall(r"\$\{?(SDMS_[A-Z_]+)", CHECK.read_text())) - {"SDMS_PYTHON"}
    given = dict(re.findall(r"^ +(SDMS_[A-Z_]+): \$\{\{ inputs\.([a-z-]+) \}\}$", action, re.MULTILINE))
    assert set(given) == read and all(given[name] == name[5:].lower().replace("_", "-") for name in given)
    inputs = re.findall(r"^  ([a-z-]+):$", action.split("\ninputs:\n")[1].split("\nruns:\n")[0], re.MULTILINE)
    assert set(inputs) == set(given.values()) | {"python-version"}
    assert 'run: sh "$GITHUB_ACTION_PATH/check.sh"' in action
