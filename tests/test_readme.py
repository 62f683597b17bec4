"""The README's quick start is what CI runs."""

from pathlib import Path

ROOT = Path(__file__).parent.parent


def test_ci_runs_exactly_the_readme_test_command():
    """The last line of .ci/run is the README's test command, word for word."""
    command = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert "pytest" in command and f"```sh\n{command}\n```" in (ROOT / "README.md").read_text()


def test_the_quick_start_starts_the_calculator_server():
    readme = (ROOT / "README.md").read_text()
    quick_start = readme.split("## Quick start")[1].split("\n## ")[0]
    assert quick_start.count("```sh\n") == 2 + 1  # the two commands, and the curl example
    assert "-m reference.server\n```" in quick_start
