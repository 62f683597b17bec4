"""What a failure shows (reports/reproduce.py): commands that send its requests again, and its answers in
the suite's own notation."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.language import matchers as match
from reference.services import testbed
from tests.support.servers import Mutated, serving
from tests.support.suite import run
from tests.support.variants import dropping, single_floats


def test_a_messagepack_reproduction_shows_the_message_it_sends(capsys):
    """Base64 piped to curl said nothing to a reader: a line above it shows the message, keys as the ids sent."""
    with serving(Mutated(testbed.service(), single_floats)) as server:
        status, lines = run(capsys, "run", "--target", server.url, "--id", "testbed/binary/number/not-whole")
    shown = [line.strip() for line in lines if line.strip().startswith("# step ")]
    assert status == 1 and any(re.fullmatch(r'# step \d sends MessagePack: \[\{"@bin_": \[.*\]\}, \{.*\}\]', line)
                               for line in shown), "\n".join(lines)


def test_a_failure_s_reproduction_runs_in_a_shell_and_shows_binary_answers_as_json(tmp_path, capsys):
    """The commands a failure gives, run as they are (curl, base64, and python3 with msgpack, as in an
    activated environment), send the case's requests again and show a MessagePack answer as JSON."""
    with serving(Mutated(testbed.service(), dropping("@id_"))) as server:
        status, _ = run(capsys, "run", "--target", server.url, "--id", "binary/negotiate/id-kept",
                        "--json", str(tmp_path / "r.json"))
        [case] = json.loads((tmp_path / "r.json").read_text())["cases"]
        assert status == 1 and sys.executable not in "".join(case["reproduce"])
        shown = subprocess.run(["bash", "-c", "\n".join(case["reproduce"])], capture_output=True, text=True, cwd=tmp_path,
                               env={**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"})
    assert shown.returncode == 0, shown.stderr
    answer = json.loads(shown.stdout.splitlines()[-1])
    assert len(answer) == 2 and "@bin_" in answer[0] and "@id_" not in answer[0] and "b'" not in shown.stdout


@pytest.mark.parametrize("data, shown", [
    (b'{"a": 1}', '"{\\"a\\": 1}"'),
    (b"\x92\x80\xc4\x01\xff", '{"$bin": "koDEAf8="}'),  # MessagePack, in the cases' notation of bytes
    (b"x" * 201, '"' + "x" * 200 + '" ...'),
])
def test_answers_are_shown_in_the_suite_s_own_notation_never_as_python_bytes(data, shown):
    assert match.excerpt(data) == shown
