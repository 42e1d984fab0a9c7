"""The tiers of `make test` (tests/labtools.py ``tier_of``, applied by tests/conftest.py): every kind of test lands
in exactly one, as the Makefile says: the chapters, Chromium and the hub in e2e; the grader and other slow work in
integration; the rest unit. A test's kind markers are its file's ``pytestmark`` alone, read from the files' source and
from what this run collected."""

import ast
from types import SimpleNamespace

import pytest
from labtools import ROOT, TIERS, tier_of


def _item(*kinds):
    return SimpleNamespace(iter_markers=lambda: [SimpleNamespace(name=kind) for kind in kinds])


@pytest.mark.parametrize(
    ("kinds", "tier"),
    [
        ((), "unit"),
        (("gpu",), "unit"),  # skipped without a device: its own script runs it on one
        (("parametrize", "skipif"), "unit"),
        (("slow",), "integration"),
        (("grading",), "integration"),
        (("grading", "slow"), "integration"),
        (("notebook",), "e2e"),
        (("browser",), "e2e"),
        (("grading", "browser"), "e2e"),  # a feedback page opened in Chromium
        (("hub", "grading", "slow"), "e2e"),  # a class on the hub
        (("binder", "slow"), "e2e"),  # the Binder environment built: its chapter runs are e2e, and it is built once
    ],
)
def test_each_kind_of_test_has_one_tier(kinds, tier):
    assert tier_of(_item(*kinds)) == tier


def test_the_makefile_runs_every_tier():
    makefile = (ROOT / "Makefile").read_text()
    assert all(f"--tier {name}" in makefile for name in TIERS)
    # make test: the unit tier, then the other two in one run
    assert "test-unit test-integration-e2e" in makefile and "--tier integration --tier e2e" in makefile


# ------------------------------------------------------------------ the kind markers come from each file's pytestmark
KINDS = frozenset({"notebook", "browser", "grading", "slow", "hub", "binder"})  # the markers tier_of reads


def _kind_of(node: ast.AST) -> str | None:
    """The kind ``node`` names, for ``pytest.mark.<kind>`` or ``mark.<kind>`` (called or not); else None."""
    if isinstance(node, ast.Attribute) and node.attr in KINDS:
        owner = node.value
        if (isinstance(owner, ast.Attribute) and owner.attr == "mark") or (
            isinstance(owner, ast.Name) and owner.id == "mark"
        ):
            return node.attr
    return None


def kind_marks_outside_pytestmark(source: str) -> list[str]:
    """Every kind marker the module ``source`` applies elsewhere than in its module-level ``pytestmark``: a decorator
    of a function or class, a parameter's ``marks=``, or ``add_marker``/``applymarker`` with a kind's name."""
    tree = ast.parse(source)
    allowed = {
        id(node)
        for statement in tree.body
        if isinstance(statement, ast.Assign) and any(getattr(t, "id", None) == "pytestmark" for t in statement.targets)
        for node in ast.walk(statement.value)
    }
    found = []
    for node in ast.walk(tree):
        kind = _kind_of(node) if id(node) not in allowed else None
        if kind is not None:
            found.append(f"line {node.lineno}: pytest.mark.{kind}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("add_marker", "applymarker")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value in KINDS
        ):
            found.append(f"line {node.lineno}: {node.func.attr}({node.args[0].value!r})")
    return sorted(set(found))


def _test_sources() -> dict[str, str]:
    tests = ROOT / "tests"
    return {p.relative_to(tests).as_posix(): p.read_text(encoding="utf-8") for p in sorted(tests.rglob("*.py"))}


def test_no_test_or_class_carries_a_kind_marker_of_its_own():
    marked = {
        path: found for path, source in _test_sources().items() if (found := kind_marks_outside_pytestmark(source))
    }
    assert marked == {}


def test_the_scan_finds_a_kind_marker_wherever_a_test_puts_it():
    kept = 'import pytest\n\npytestmark = [pytest.mark.slow, pytest.mark.skipif(True, reason="x")]\n\n\n'
    kept += '@pytest.mark.skipif(False, reason="y")\n@pytest.mark.parametrize("x", [1])\ndef test_x(x):\n    pass\n'
    assert kind_marks_outside_pytestmark(kept) == []
    for source in (
        "import pytest\n\n@pytest.mark.slow\ndef test_x():\n    pass\n",
        "import pytest\n\nclass TestX:\n    @pytest.mark.grading\n    def test_x(self):\n        pass\n",
        "from pytest import mark\n\n@mark.browser(reason='a call')\nclass TestX:\n    pass\n",
        'import pytest\n\n@pytest.mark.parametrize("x", [pytest.param(1, marks=pytest.mark.hub)])\n'
        "def test_x(x):\n    pass\n",
        'def test_x(request):\n    request.applymarker("notebook")\n',
    ):
        assert len(kind_marks_outside_pytestmark(source)) == 1, source


def _module_kinds(module) -> set[str]:
    marks = getattr(module, "pytestmark", [])
    return {mark.name for mark in (marks if isinstance(marks, list) else [marks])} & KINDS


def test_every_collected_test_has_the_kinds_of_its_files_pytestmark(request):
    """Over the tests this run collected (all of them in a full run, one tier's under --tier): each test's kind
    markers, however it got them, are its module's pytestmark's."""
    tests = ROOT / "tests"
    differ = {}
    for item in request.session.items:
        module = getattr(item, "module", None)
        if module is None or not item.path.is_relative_to(tests):
            continue
        kinds = {mark.name for mark in item.iter_markers()} & KINDS
        if kinds != _module_kinds(module):
            differ[item.nodeid] = (sorted(kinds), sorted(_module_kinds(module)))
    assert differ == {}
