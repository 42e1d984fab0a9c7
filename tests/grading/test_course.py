"""Tests of gpucost_lab.grading.course: the course's nbgrader configuration (``course_config``, ``autograde_steps``)
against the repository's nbgrader_config.py and nbgrader's own step names. nbgrader's own failure to generate a lab
is tests/grading/test_course_nbgrader_failures.py.
"""

from .helpers import ROOT

# --------------------------------------------------------------------------------------- the configuration


def test_repository_nbgrader_config():
    from traitlets.config.loader import PyFileConfigLoader

    c = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    assert c.CourseDirectory.root == str(ROOT)
    assert (c.CourseDirectory.source_directory, c.CourseDirectory.release_directory) == ("solutions", "labs")
    assert c.CourseDirectory.course_id == "gpucost-lab"
    assert c.Execute.timeout == 30 and c.Execute.interrupt_on_timeout is True
    # the learner's code runs sandboxed and the tests run in nbgrader's process: no plain Execute step
    steps = c.Autograde.autograde_preprocessors
    assert steps[0] == "gpucost_lab.grading.execute.SandboxedExecute" and c.SandboxedExecute.timeout == 30
    assert not any(str(s).endswith(".Execute") for s in steps)
    assert c.OverwriteCells.add_missing_cells is True
    assert c.ExportApp.plugin_class == "gpucost_lab.grading.nbgrader_export.PassMarkExportPlugin"
    assert c.CourseDirectory.db_url == f"sqlite:///{ROOT / 'gradebook.db'}"
    ignored = (ROOT / ".gitignore").read_text().split()
    assert {"/gradebook.db", "/submitted/", "/autograded/", "/feedback/", "/grades.csv"} <= set(ignored)


def test_every_path_of_the_course_runs_the_sanitizer():
    """``autograde_steps``: after the scores are saved and before the notebook is written, and in every HTML export
    (the feedback, the formgrader); the repository's nbgrader_config.py uses it."""
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader

    from gpucost_lab.grading.course import autograde_steps

    name = "gpucost_lab.grading.sanitize.SanitizeLearnerHTML"
    c = Config()
    autograde_steps(c)
    steps = list(c.Autograde.autograde_preprocessors)
    assert steps[-3:] == [
        "nbgrader.preprocessors.AssignLatePenalties",
        name,
        "nbgrader.preprocessors.CheckCellMetadata",
    ]
    assert steps.index(name) > steps.index("nbgrader.preprocessors.SaveAutoGrades")
    assert list(c.HTMLExporter.preprocessors) == [name]
    repo = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    assert name in repo.Autograde.autograde_preprocessors and list(repo.HTMLExporter.preprocessors) == [name]
