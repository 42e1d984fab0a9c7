"""nbgrader configuration of the gpucost-lab course (instructors; see README "For instructors").

Run nbgrader from the repository root: `solutions/` is the source directory and `labs/` the release directory,
so `nbgrader generate_assignment profile_training_loop --force` writes
`labs/profile_training_loop/profile_training_loop.ipynb` (`make labs` regenerates every lab this way). The
gradebook and the grading folders (`submitted/`, `autograded/`, `feedback/`) live at the root and are ignored
by git: they hold learners' work and never belong in the repository.
"""

import os

c = get_config()  # noqa: F821  (provided by traitlets when nbgrader loads this file)

ROOT = os.path.dirname(os.path.abspath(__file__))

c.CourseDirectory.root = ROOT
c.CourseDirectory.course_id = "gpucost-lab"
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "labs"
# nbgrader's default layout, spelled out: {step}/{student}/{assignment}. generate_assignment uses "." for the
# student, so the release path is labs/<assignment>/<notebook>.ipynb, with no course id in it.
c.CourseDirectory.directory_structure = os.path.join("{nbgrader_step}", "{student_id}", "{assignment_id}")
# The gradebook (learners' scores) stays out of git: .gitignore lists it.
c.CourseDirectory.db_url = "sqlite:///" + os.path.join(ROOT, "gradebook.db")

# Autograding: the learner's cells run in a sandboxed kernel (bubblewrap: no course folder, no gradebook, no
# network), and every test cell runs in nbgrader's own process on the learner's answers read back as plain data,
# so code in an answer cannot change a score (gpucost_lab.grading.execute). Each cell may run 30 s; a cell that
# runs longer (an infinite loop) is interrupted and fails; the later cells still run and are graded, unless the
# kernel no longer answers (code that broke it), and then every test is graded on the answers given before.
from gpucost_lab.grading.course import autograde_steps  # noqa: E402

autograde_steps(c)
c.SandboxedExecute.timeout = 30
# Each learner's lab numbers derive from their student id (gpucost_lab.course.variants), as they did in the learner's
# JupyterLab on the hub (JUPYTERHUB_USER). False grades every submission as the self-study lab.
c.SandboxedExecute.per_learner_variants = True
c.Execute.timeout = 30
c.Execute.interrupt_on_timeout = True
# A learner who deletes a (read-only) test cell gets it back, run and graded, instead of "needs manual grading".
c.OverwriteCells.add_missing_cells = True

# `nbgrader collect` (and the formgrader's Collect) copies learners' submissions out of the exchange with the
# instructor's rights: a submission holding a link (to gradebook.db or solutions/, say), a hard link or a special
# file is not collected, and the log names the learner and the file (gpucost_lab.grading.exchange).
c.ExchangeFactory.collect = "gpucost_lab.grading.exchange.SafeExchangeCollect"

# `nbgrader export` writes grades.csv with a `passed` column: True/False at 80% of the maximum score, or
# "pending" while a submission still needs manual grading.
c.ExportApp.plugin_class = "gpucost_lab.grading.nbgrader_export.PassMarkExportPlugin"

# Where no grading sandbox can be made (bubblewrap missing, user namespaces forbidden), `nbgrader autograde` stops with
# one line saying what to install or change. The pre-convert hook set above does it for every autograde (the
# formgrader's too); for the command itself it is checked here, before nbgrader removes earlier results (--force).
# c.SandboxedExecute.allow_unsandboxed = True runs learners' code WITHOUT a sandbox (trusted notebooks only).
import sys  # noqa: E402

if sys.argv[1:2] == ["autograde"]:
    c.Autograde.pre_convert_hook()
