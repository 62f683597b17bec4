"""python -m conformance matrix: implementations started from a manifest, checked, and shown side by side."""

import json
import re
import signal
import subprocess
import sys
import time

import pytest

from conformance.__main__ import main
from conformance.language import suite as cases
from conformance.reports import grid, readback
from reference.services import calculator, testbed
from tests.support.servers import Mutated, serving
from tests.support.variants import hostile

SERVER = "{python} -m reference.server --service testbed --port {port}"


def matrix(capsys, tmp_path, manifest=None):
    """Run the matrix (of `manifest`, else the shipped one); return (status, output lines, the HTML page)."""
    arguments = ["matrix", "--html", str(tmp_path / "matrix.html")]
    if manifest is not None:
        (tmp_path / "manifest.json").write_text(json.dumps(manifest if type(manifest) is dict else {"implementations": manifest}))
        arguments += ["--manifest", str(tmp_path / "manifest.json")]
    status = main(arguments)
    return status, capsys.readouterr().out.splitlines(), (tmp_path / "matrix.html").read_text()


def test_the_shipped_manifest_shows_every_way_of_serving_the_reference_passing(capsys, tmp_path):
    status, lines, page = matrix(capsys, tmp_path)
    ways = ["bundled server, engine room", "bundled server, teaching core alone (--plain)", "ASGI, under uvicorn",
            "WSGI, under uvicorn"]
    assert status == 0
    for number, way in enumerate(ways, 1):
        assert f"[{number}] reference (Python), {way}: " in "\n".join(lines)
        assert f"<th>reference (Python), {way}</th>" in page
    rows = [line for line in lines if line.startswith(("MUST ", "SHOULD "))]
    assert len(rows) > 15 and not any("✗" in row for row in rows)
    assert "class='cell bad'" not in page and page.count("class='cell ok'") > 60


def test_failures_lead_to_their_answers_and_alike_failures_of_independent_implementations_stand_out(capsys,
                                                                                                   tmp_path):
    """Two implementations (two names) that keep a larger body limit than they declare fail the same case
    the same way: the suite may be wrong, and the matrix says so; one that cannot start is errored."""
    wrong = {"start": SERVER + " --max-body 2097152", "target": "http://127.0.0.1:{port}/api",
             "limits": {"body": 1048576}}
    manifest = [{"name": "alpha", "version": "1.0", "language": "Go", **wrong,
                 "known": [{"id": "testbed/parse/nan", "category": "convention", "why": "an example",
                            "link": "https://example.org/1"}]},
                {"name": "beta", "language": "TypeScript", **wrong},
                {"name": "gamma", "start": "/nonexistent/server {port}", "target": "http://127.0.0.1:{port}/api"}]
    status, lines, page = matrix(capsys, tmp_path, manifest)
    text = "\n".join(lines)
    assert status == 1
    testbed = sum(case.applies({"testbed", "live"}) for case in cases.load())
    assert f"[1] alpha 1.0 (Go): {testbed - 2} passed, 1 failed (1 SHOULD), 1 stale; " in text
    assert "[3] gamma: errored: cannot start '/nonexistent/server {port}': No such file or directory" in text
    assert "  http/length/too-large: expected HTTP 413 (alpha 1.0 (Go), beta (TypeScript))" in lines
    [row] = [line for line in lines if line.startswith("SHOULD Limits")]
    assert row.split()[2:5] == ["9/10", "✗", "9/10"]
    link = re.search(r"<td class='cell bad'><a href='#(c0-limits-SHOULD)'>9/10 ✗</a></td>", page)
    failures = page[page.index(f"id='{link[1]}'"):]
    assert "http/length/too-large" in failures and "The answer received:" in failures
    assert "curl -s -i -X POST http://127.0.0.1:" in failures
    assert "<td>testbed/parse/nan</td><td>convention</td><td>an example (<a href='https://example.org/1'>" in page


@pytest.mark.parametrize("manifest, problems", [
    ([{"version": "1"}], ["implementations[0].name: missing",
                          "implementations[0]: no suite to run: give a target, a client driver or a schema driver"]),
    ([{"name": "x", "target": "t", "limits": {"size": 1}, "without": ["mtls"], "colour": "red"}],
     ["implementations[0]: unknown key 'colour'", "implementations[0].limits.size: not one of body, depth, cases",
      "implementations[0].without: 'mtls' is not one of binary, select, headers, http"]),
    ([{"name": "x", "schema": "d", "known": [{"id": "a", "category": "bug", "why": "w"}, {"id": "b"}]}],
     ["implementations[0].known[0].category: 'bug' is not one of implementation bug, convention, suite problem",
      "implementations[0].known[1]: needs id, category and why, as text"]),
    # a known failure that matches no case is a typo, which would pass silently; a file that cannot be read
    ([{"name": "x", "target": "t", "known": [{"id": "headers/id/strnig", "category": "convention", "why": "w"}]},
      {"name": "y", "target": "t", "known": "no/such/known.txt"}, {"name": "z", "target": "t", "known": 3}],
     ["implementations[0].known[0]: 'headers/id/strnig' matches no case of the suite",
      "implementations[1].known: no/such/known.txt (in the manifest's folder or the suite's) cannot be read: No such "
      "file or directory",
      "implementations[2].known: not a list or text"]),
    # a key of the manifest itself that it does not have, as one of an entry
    ({"implementation": [], "description": "d", "implementations": [{"name": "x", "target": "t"}]},
     ["unknown key 'implementation' (did you mean 'implementations'?)"]),
    # two entries alike would be two columns no one can tell apart
    ([{"name": "x", "version": "1", "target": "t"}, {"name": "x", "version": "1", "target": "u"}],
     ["'x 1' is listed 2 times: give each a \"way\" of its own"]),
])
def test_a_manifest_that_breaks_its_shape_is_refused_with_every_problem(manifest, problems, capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_:
        matrix(capsys, tmp_path, manifest)
    error = capsys.readouterr().err
    assert exit_.value.code == 2 and error.count("\n") == 1
    assert all(f"{tmp_path / 'manifest.json'}: {problem}" in error for problem in problems), error


def test_a_manifest_names_a_known_failures_file_as_run_takes_it(capsys, tmp_path, calculator_url):
    """"known": a file of the suite's known-failures/ (or of the manifest's folder), globs and their reasons:
    the other implementation's failures, which the reference passes, are stale there."""
    (tmp_path / "mine.txt").write_text("calculator/add/overflow  # a reason of my own\n")
    status, lines, page = matrix(capsys, tmp_path, [
        {"name": "shipped", "target": calculator_url, "known": "known-failures/telepact-cli-1.0.0a339.txt"},
        {"name": "own", "target": calculator_url, "known": "mine.txt"}])
    shipped = [glob for glob, _ in cases.known_lines(
        (cases.HERE / "known-failures/telepact-cli-1.0.0a339.txt").read_text())]
    text = "\n".join(lines)
    assert status == 1 and f"[1] shipped: {266 - len(shipped)} passed, 0 failed, {len(shipped)} stale; " in text
    assert "[2] own: 265 passed, 0 failed, 1 stale; " in text
    assert "<td>calculator/add/overflow</td><td></td><td>a reason of my own</td>" in page


def test_a_target_answering_control_characters_and_lone_surrogates_gets_a_page(capsys, tmp_path):
    """What a hostile target answers reaches the matrix page as escapes, as it reaches every report."""
    with serving(Mutated(calculator.service(), hostile)) as server:
        status, lines, page = matrix(capsys, tmp_path, [{"name": "hostile", "target": server.url}])
    assert status == 1 and "[1] hostile: " in "\n".join(lines)
    assert "\\u001b]0;owned\\u0007\\u001b[2J" in page and "\x1b" not in page


def test_a_build_that_writes_without_end_is_kept_on_disk_and_its_last_words_shown(tmp_path):
    """300 MiB of build output cost the matrix no memory (600 MiB did cost 1.2 GiB); its end is shown."""
    build = ("{python} -c \"import os; [os.write(1, b'x' * 1048576) for _ in range(300)]; "
             "os.write(2, b'\\x1b[2Jlast words'); raise SystemExit(3)\"")
    (tmp_path / "manifest.json").write_text(json.dumps({"implementations": [
        {"name": "noisy", "build": build, "target": "http://127.0.0.1:9/api"}]}))
    measured = ("import resource, subprocess, sys; run = subprocess.run([sys.executable, '-m', 'conformance', "
                f"'matrix', '--manifest', {str(tmp_path / 'manifest.json')!r}], capture_output=True, text=True); "
                "print(run.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, run.stdout)")
    status, kilobytes, out = subprocess.run([sys.executable, "-c", measured], capture_output=True, text=True,
                                            timeout=120).stdout.split(" ", 2)
    assert status == "1" and int(kilobytes) < 150_000, (kilobytes, out)
    assert "noisy: errored: the build failed (status 3): " in out and out.count("x") < 2 * 300
    assert "\\u001b[2Jlast words" in out and "\x1b" not in out


def test_a_page_is_the_merge_of_reports_made_anywhere_and_the_same_made_here(capsys, tmp_path, testbed_url):
    """Each implementation checked in a CI job of its own (run --json --implementation), merged into one
    page; matrix --json writes reports that --report reads back into the same table."""
    from tests.support.variants import dropping
    alpha, beta = tmp_path / "alpha.json", tmp_path / "beta.json"
    assert main(["run", "--target", testbed_url, "--json", str(alpha), "--implementation", "alpha",
                 "--implementation-version", "2.0", "--language", "Go"]) == 0
    with serving(Mutated(testbed.service(), dropping("@enc_"))) as server:
        assert main(["run", "--target", server.url, "--json", str(beta), "--implementation", "beta"]) == 1
    capsys.readouterr()
    status = main(["matrix", "--report", str(alpha), "--report", str(beta), "--html", str(tmp_path / "page.html"),
                   "--json", str(tmp_path / "matrix.json")])
    lines = capsys.readouterr().out.splitlines()
    assert status == 1 and any(line.startswith("[1] alpha 2.0 (Go): ") for line in lines), lines
    assert any(line.startswith("[2] beta: ") and " failed" in line for line in lines)
    table = [line for line in lines if line.startswith(("MUST ", "SHOULD "))]
    status = main(["matrix", "--report", str(tmp_path / "matrix.json"), "--markdown", str(tmp_path / "m.md")])
    again = capsys.readouterr().out.splitlines()
    assert status == 1 and [line for line in again if line.startswith(("MUST ", "SHOULD "))] == table
    markdown = (tmp_path / "m.md").read_text().splitlines()
    assert markdown[0] == "| requirements | alpha 2.0 (Go) | beta |" and markdown[1] == "| --- | --- | --- |"
    assert len([line for line in markdown if line.startswith("| MUST ") or line.startswith("| SHOULD ")]) == len(table)
    columns = readback.reports(json.loads(beta.read_text()), "beta")
    for (group, level), cells in grid.rows(columns).items():  # a MUST row fails only for a MUST part failed
        for cell in cells.values():
            assert level == "SHOULD" or all(result.level == "MUST" for result in cell.failed), (group, cell)


def test_an_implementation_that_ends_before_answering_is_told_at_once_with_its_last_words(capsys, tmp_path):
    """(A missing uvicorn was 'Connection refused' after 30 s, twice, and 72 s in all.) A program named by a
    path relative to the manifest is found there."""
    (tmp_path / "bin").mkdir()
    script = tmp_path / "bin" / "serve"
    script.write_text(f"#!/bin/sh\nexec {sys.executable} -m reference.server --service testbed --port \"$1\"\n")
    script.chmod(0o755)
    dying = "{python} -c \"import sys; sys.exit('ModuleNotFoundError: No module named uvicorn')\""
    started = time.monotonic()
    status, lines, page = matrix(capsys, tmp_path, [
        {"name": "dies", "start": dying, "target": "http://127.0.0.1:{port}/api"},
        {"name": "relative", "start": "./bin/serve {port}", "target": "http://127.0.0.1:{port}/api"}])
    text = "\n".join(lines)
    assert "[1] dies: errored: it ended (status 1) before answering: ModuleNotFoundError: No module named " \
           "uvicorn" in text, text
    assert re.search(r"\[2\] relative: \d+ passed, 0 failed; \d+ for other services$", text, re.M)
    assert time.monotonic() - started < 60
    assert "its reproductions need it started again, as it was: <code>" + str(script) in page


def test_an_interrupted_matrix_says_what_it_never_checked_in_every_file(tmp_path):
    """Ctrl-C while the second implementation starts: the first column stands, the second is interrupted and
    the third not run, on the terminal and in the HTML, JSON and Markdown files, never shown as passing."""
    asleep = {"start": "{python} -c \"import time; time.sleep(120)\"", "target": "http://127.0.0.1:{port}/api"}
    (tmp_path / "manifest.json").write_text(json.dumps({"implementations": [
        {"name": "first", "start": SERVER, "target": "http://127.0.0.1:{port}/api"},
        {"name": "second", **asleep}, {"name": "third", **asleep}]}))
    files = {kind: tmp_path / f"matrix.{kind}" for kind in ("html", "json", "md")}
    process = subprocess.Popen([sys.executable, "-m", "conformance", "matrix", "--manifest", str(tmp_path / "manifest.json"),
                                "--html", str(files["html"]), "--json", str(files["json"]), "--markdown", str(files["md"])],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in process.stdout:  # (the second starts once the first's line is out)
        if line.startswith("first: "):
            break
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    said = "The matrix was interrupted: 2 implementations of 3 not checked to the end (second; third)."
    assert (process.returncode, err) == (130, "") and said in out
    assert "[2] second: interrupted: the matrix was interrupted while checking it" in out
    assert "[3] third: not run: the matrix was interrupted before it" in out
    assert said in files["html"].read_text() and f"**{said}**" in files["md"].read_text()
    assert " | interrupted | not run |" in files["md"].read_text()
    document = json.loads(files["json"].read_text())
    assert document["interrupted"] and [report.get("column") for report in document["reports"]] == [
        None, "interrupted", "not run"]


def test_two_reports_of_one_implementation_are_two_columns_told_apart(capsys, tmp_path, testbed_url):
    report = tmp_path / "report.json"
    main(["run", "--target", testbed_url, "--id", "http/**", "--json", str(report), "--implementation", "acme"])
    capsys.readouterr()
    assert main(["matrix", "--report", str(report), "--report", str(report)]) == 0
    out, err = capsys.readouterr()
    assert err == "python -m conformance matrix: warning: 2 reports are of acme; each column says which it is\n"
    assert f"[1] acme, from --report 1, {report}: " in out and f"[2] acme, from --report 2, {report}: " in out
