"""Tests of gpucost_lab.grading.links: a symbolic link, a hard link, a FIFO or another special file in a submission
folder is found, named and never copied or read, against the links made on purpose here (``submission_with_links``).
Where each entry point refuses them: tests/grading/test_submission.py (a notebook), test_classes_submissions.py and
test_classes.py (a class), test_exchange.py (nbgrader collect), test_sandbox_graded.py (nbgrader autograde),
test_run_submission_files.py (the sandbox's copy).
"""

import pytest

from gpucost_lab import InputError
from gpucost_lab.grading import links


def test_every_link_and_special_file_is_found_and_plain_files_are_not(submission_with_links):
    found = {str(r.path.relative_to(submission_with_links)): r.why for r in links.offending(submission_with_links)}
    gradebook = str(submission_with_links.parent / "course" / "gradebook.db")
    assert found == {
        "copy.db": "a hard link (one file with 2 names; another may lie outside the submission)",
        "data.csv": f"a symbolic link to {gradebook!r} (outside the submission)",
        "inner/escape": "a symbolic link to '../../course/gradebook.db' (outside the submission)",
        "pipe": "a FIFO (named pipe)",
    }
    assert links.refusal(submission_with_links / "answers.txt") is None
    assert links.refusal(submission_with_links / "inner") is None
    assert links.refusal(submission_with_links / "data.csv").path == submission_with_links / "data.csv"
    assert links.offending(submission_with_links / "inner") == [
        links.Refused(submission_with_links / "inner" / "escape", found["inner/escape"])
    ]


def test_a_link_within_the_submission_and_a_linked_folder_are_refused_too(tmp_path):
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "a.txt").write_text("a", encoding="utf-8")
    (sub / "b.txt").symlink_to("a.txt")
    assert [(r.path.name, r.why) for r in links.offending(sub)] == [("b.txt", "a symbolic link to 'a.txt'")]
    (tmp_path / "alias").symlink_to(sub)
    assert [r.why for r in links.offending(tmp_path / "alias")] == [
        f"a symbolic link to {str(sub)!r} (outside the submission)"  # the folder is the link: not entered
    ]


def test_only_plain_files_are_copied_and_read(submission_with_links, tmp_path):
    dest = tmp_path / "copy"
    refused = links.copy_plain(submission_with_links, dest)
    assert sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file()) == ["answers.txt"]
    assert (dest / "answers.txt").read_text(encoding="utf-8") == "my own work"
    assert sorted(r.path.name for r in refused) == ["copy.db", "data.csv", "escape", "pipe"]
    assert links.read_plain(submission_with_links / "answers.txt", "notebook") == b"my own work"
    for name in ("data.csv", "copy.db", "pipe"):  # the FIFO is refused, not waited on
        with pytest.raises(InputError, match=f"^notebook '{submission_with_links / name}' is a ") as err:
            links.read_plain(submission_with_links / name, "notebook")
        assert err.value.field == "notebook"
