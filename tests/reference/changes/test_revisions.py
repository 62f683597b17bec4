"""A schema as a git revision has it, read from the repository without checking it out."""

import json
import subprocess

import pytest

from reference.changes import revisions


def git(where, *args):
    """Run git in `where` as a user with a name would."""
    subprocess.run(["git", "-C", str(where), "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
                   check=True, capture_output=True)


@pytest.fixture
def repository(tmp_path):
    """A repository whose first commit (tagged v1) has schema/a.json and schema/b.json, and whose working
    tree has changed them since."""
    (tmp_path / "schema").mkdir()
    (tmp_path / "schema" / "a.json").write_text('[{"fn.a": {}, "->": [{"Ok_": {}}]}]')
    (tmp_path / "schema" / "b.json").write_text('[{"fn.b": {}, "->": [{"Ok_": {}}]}]')
    (tmp_path / "schema" / "notes.txt").write_text("not a schema")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "v1")
    git(tmp_path, "tag", "v1")
    (tmp_path / "schema" / "a.json").write_text('[{"fn.a": {"x": "integer"}, "->": [{"Ok_": {}}]}]')
    return tmp_path


def names_and_entries(documents):
    return [(document.name, document.entries) for document in documents]


def test_a_file_is_read_as_the_revision_has_it(repository):
    documents, problems = revisions.read("v1", repository / "schema" / "a.json")
    assert problems == [] and names_and_entries(documents) == [("v1:schema/a.json", [{"fn.a": {}, "->": [{"Ok_": {}}]}])]


def test_a_directory_is_its_json_files_in_name_order(repository):
    documents, _ = revisions.read("HEAD", repository / "schema")
    assert [name for name, _ in names_and_entries(documents)] == ["HEAD:schema/a.json", "HEAD:schema/b.json"]
    assert json.loads(documents[0].text) == [{"fn.a": {}, "->": [{"Ok_": {}}]}]


def test_a_file_that_does_not_parse_at_the_revision_is_a_problem_placed_there(repository):
    (repository / "schema" / "a.json").write_text("[{")
    git(repository, "commit", "-qam", "broken")
    _, [problem] = revisions.read("HEAD", repository / "schema")
    assert str(problem).startswith("HEAD:schema/a.json:1:3: not valid JSON")


@pytest.mark.parametrize("revision, path, said", [
    ("nosuch", "schema/a.json", "'nosuch' is no revision of the repository (a branch, a tag or a commit"),
    ("v1", "schema/c.json", "does not exist (--against reads the same path at the revision)"),
])
def test_what_git_cannot_give_is_one_line(repository, revision, path, said):
    with pytest.raises(ValueError) as raised:
        revisions.read(revision, repository / path)
    assert said in str(raised.value) and "\n" not in str(raised.value)


def test_a_file_added_since_the_revision_is_not_in_it(repository):
    (repository / "schema" / "c.json").write_text("[]")
    with pytest.raises(ValueError, match="^schema/c.json is not in v1$"):
        revisions.read("v1", repository / "schema" / "c.json")


def test_a_path_outside_any_repository_is_said(tmp_path_factory):
    outside = tmp_path_factory.mktemp("plain") / "a.json"
    outside.write_text("[]")
    with pytest.raises(ValueError, match="not in a git repository"):
        revisions.read("HEAD", outside)
