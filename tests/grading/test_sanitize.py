"""Tests of gpucost_lab.grading.sanitize: learner HTML never runs (issue 25), against a check of our own that reads
pages with the standard library's parser. What a submission displays is sanitized in the autograded notebook, the
feedback page and the formgrader's view; the CSS it may keep: tests/grading/test_sanitize_css.py.

Each hostile vector (tests/grading/helpers.py), once run, pushes its name onto ``window.__pwned``: a ``<script>``, an
``<img>``'s ``onerror``, an ``<iframe srcdoc>``, an SVG's script and ``onload``, a ``<details ontoggle>``,
``javascript:`` links and a form's ``javascript:`` action, in an HTML output and in a markdown cell, and an
``application/javascript`` output. :func:`active` (tests/grading/helpers.py) is the check: what in a page could run a
vector (a script or a URL attribute that names ``__pwned``, an event handler that does, an element that runs or
embeds content), read with the standard library's parser, not the sanitizer's. Every test of a vector first shows
that :func:`active` finds it in the unsanitized HTML, but for the mutation-XSS vectors, which only a browser's own
parse can show: tests/browser loads those.

Here the preprocessor on notebooks built in the test; a real grade of a submission showing every vector is
tests/grading/test_sanitize_graded.py.
"""

from __future__ import annotations

import copy
import re

import nbformat
import pytest
from labtools import ROOT, release_path
from nbformat.v4 import new_code_cell, new_markdown_cell, new_output

from gpucost_lab.grading import sanitize
from gpucost_lab.grading.sanitize import SanitizeLearnerHTML, clean_html, render_markdown

from .helpers import (
    HTML_VECTORS,
    JAVASCRIPT,
    MARKDOWN_VECTORS,
    MXSS_VECTORS,
    PARAGRAPH,
    PNG,
    SVG_WITH_SCRIPT,
    active,
    flag,
)


def html_output(html: str):
    return new_output("display_data", data={"text/html": html, "text/plain": "<IPython.core.display.HTML object>"})


def sanitized(nb):
    nb = copy.deepcopy(nb)
    SanitizeLearnerHTML().preprocess(nb, {})
    return nb


def one_cell_notebook(cell):
    nb = nbformat.v4.new_notebook()
    nb.cells.append(cell)
    return nb


# --------------------------------------------------------------------------------------- the preprocessor


@pytest.mark.parametrize("name", sorted([*HTML_VECTORS, *MXSS_VECTORS]))
def test_each_html_vector_is_removed_from_an_html_output(name):
    raw = {**HTML_VECTORS, **MXSS_VECTORS}[name]
    if name in HTML_VECTORS:  # the standard library reads mutation XSS as the browser would not: Chromium checks it
        assert active(raw), "the check must see the vector in the unsanitized HTML"
    nb = sanitized(one_cell_notebook(new_code_cell("display(HTML(...))", outputs=[html_output(raw)])))
    (out,) = nb.cells[0].outputs
    assert active(out.data["text/html"]) == []
    assert out.data["text/plain"] == "<IPython.core.display.HTML object>"


def test_what_a_vector_said_stays_visible_as_text():
    nb = sanitized(one_cell_notebook(new_code_cell("", outputs=[html_output(HTML_VECTORS["javascript-link"])])))
    shown = nb.cells[0].outputs[0].data["text/html"]
    assert shown == "<a>PWN-LINK-HTML</a>"  # the link's text, no target
    nb = sanitized(one_cell_notebook(new_code_cell("", outputs=[html_output(HTML_VECTORS["script"])])))
    assert nb.cells[0].outputs[0].data["text/html"] == f"&lt;script&gt;{flag('script')}&lt;/script&gt;"


@pytest.mark.parametrize("name", sorted(MARKDOWN_VECTORS))
def test_each_markdown_vector_is_removed_from_a_markdown_cell(name):
    source = MARKDOWN_VECTORS[name]
    assert active(render_markdown(source)), "nbconvert renders the vector as written"
    nb = sanitized(one_cell_notebook(new_markdown_cell(source)))
    assert nb.cells[0].source != source
    assert active(render_markdown(nb.cells[0].source)) == []


def test_only_text_images_and_sanitized_html_outputs_are_kept():
    outputs = [
        new_output("display_data", data={"application/javascript": JAVASCRIPT, "text/plain": "<Javascript>"}),
        new_output("display_data", data={"application/javascript": JAVASCRIPT}),
        new_output("display_data", data={"image/svg+xml": SVG_WITH_SCRIPT, "text/plain": "<SVG>"}),
        new_output(
            "display_data",
            data={"application/vnd.jupyter.widget-view+json": {"model_id": "abc"}, "text/plain": "IntSlider(5)"},
        ),
        new_output("display_data", data={"text/markdown": MARKDOWN_VECTORS["markdown-img-onerror"]}),
        new_output("execute_result", data={"image/png": PNG, "text/latex": "$x^2$"}, execution_count=3),
        new_output("display_data", data={"image/png": '"><script>1</script>'}),
    ]
    outputs[5].metadata = {"filenames": {"image/png": "/hub/logout"}, "image/png": {"width": 40}}
    nb = sanitized(one_cell_notebook(new_code_cell("", outputs=outputs)))
    kept = [dict(o.data) for o in nb.cells[0].outputs]
    assert kept[0] == {"text/plain": "<Javascript>"}
    assert kept[1] == {"text/plain": "[output not shown in the graded notebook: application/javascript]"}
    assert kept[2] == {"text/plain": "<SVG>"}
    assert kept[3] == {"text/plain": "IntSlider(5)"}
    assert list(kept[4]) == ["text/html"] and active(kept[4]["text/html"]) == []
    assert "Inline" in kept[4]["text/html"]
    assert kept[5] == {"image/png": PNG, "text/latex": "$x^2$"}
    assert nb.cells[0].outputs[5].metadata == {"image/png": {"width": 40}}  # no path to load instead of the data
    assert kept[6] == {"text/plain": "[output not shown in the graded notebook: image/png]"}


def test_a_plot_a_pandas_table_and_a_paragraph_still_show():
    pd = pytest.importorskip("pandas")
    table = pd.DataFrame({"gpu": ["A100", "H100"], "usd_per_hour": [1.5, 3.25]})._repr_html_()
    png = new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure size 640x480 with 1 Axes>"})
    nb = sanitized(one_cell_notebook(new_code_cell("", outputs=[png, html_output(table), html_output(PARAGRAPH)])))
    plot, shown_table, paragraph = nb.cells[0].outputs
    assert plot == png
    assert paragraph.data["text/html"] == PARAGRAPH
    html = shown_table.data["text/html"]
    assert '<table border="1" class="dataframe">' in html
    assert '<tr style="text-align: right">' in html  # pandas' header alignment
    assert "<td>A100</td>" in html and "<td>3.25</td>" in html
    # pandas' own sheet, every rule kept (they apply inside the table only)
    assert (
        "<style scoped>.dataframe tbody tr th:only-of-type { vertical-align: middle } "
        ".dataframe tbody tr th { vertical-align: top } .dataframe thead th { text-align: right }</style>"
    ) in html


@pytest.mark.parametrize(
    "href, kept",
    [
        ("https://docs.nvidia.com/cuda/", True),
        ("mailto:ta@example.org", True),
        ("#3.-Where-does-the-time-go?", True),
        ("notes.html", False),  # beside the formgrader's view, the formgrader serves the submission's own files
        ("/hub/logout", False),
        ("//evil.example.org/x", False),
        ("data:text/html;base64,PHNjcmlwdD4xPC9zY3JpcHQ+", False),
        ("JaVaScRiPt:alert(1)", False),
    ],
)
def test_links_keep_absolute_and_in_page_targets_only(href, kept):
    cleaned, changed = clean_html(f'<a href="{href}">t</a>')
    assert (cleaned, changed) == ((f'<a href="{href}">t</a>', False) if kept else ("<a>t</a>", True))


def test_class_names_keep_those_of_what_a_lab_shows_only():
    assert clean_html('<div class="navbar-fixed-top">over the score</div>') == ("<div>over the score</div>", True)
    assert clean_html('<p class="modal in">x</p>') == ("<p>x</p>", True)
    kept = '<div class="highlight hl-python"><pre><span class="kn">import</span> <span class="nn">x</span></pre></div>'
    assert clean_html(kept) == (kept, False)


def test_an_input_is_kept_only_as_a_task_list_s_checkbox():
    box = '<input class="task-list-item-checkbox" type="checkbox" disabled checked>'
    assert clean_html(box) == (box, False)
    assert clean_html('<input type="password" name="pw">') == ("&lt;input&gt;", True)
    assert clean_html('<input type="image" src="x" formaction="javascript:1">') == ("&lt;input&gt;", True)


def test_ordinary_markdown_is_left_as_written():
    source = (
        "The step costs $t_{step} < 0.5$ s, see [the docs](https://pytorch.org/docs/) and [below](#4.-Next).\n\n"
        "> a quote with `a < b` in it\n\n"
        "```python\nfor step in range(3):\n    loss = model(x) < 1\n```\n\n"
        "| GPU | USD/h |\n|---|---|\n| A100 | 1.50 |\n\n"
        "- [x] done\n- plain item\n"
    )
    nb = sanitized(one_cell_notebook(new_markdown_cell(source)))
    assert nb.cells[0].source == source


def test_a_learner_heading_gets_an_id_of_its_own_and_the_lab_s_heading_keeps_the_page_s():
    # nbconvert gives a heading the id of its text: a learner's "#### lab_run_cost" would be the grade id
    learner = sanitized(one_cell_notebook(new_markdown_cell("#### lab_run_cost\n\nScore 1.0 / 1.0")))
    assert learner.cells[0].source.startswith('<div class="gpucost-sanitized"><h4 id="learner-lab_run_cost">')
    assert 'href="#learner-lab_run_cost"' in learner.cells[0].source  # its own anchor link follows it
    assert ' id="lab_run_cost"' not in learner.cells[0].source
    # the lab's own text (read-only, restored by nbgrader) is left as written, its anchors the page's
    lab = new_markdown_cell("## 3. Where does the time go?\n", metadata={"nbgrader": {"locked": True}})
    assert sanitized(one_cell_notebook(lab)).cells[0].source == "## 3. Where does the time go?\n"


@pytest.mark.parametrize(
    "html",
    [
        '<h4 id="lab_run_cost">Score 1.0 / 1.0</h4>',
        '<a name="lab_run_cost" id="lab_run_cost">x</a>',
        '<span id="lab_run_cost">x</span>',
        '<table id="T_abc"><tr><td id="T_abc_row0_col0">1</td></tr></table>',
    ],
)
def test_no_id_of_learner_html_is_the_page_s(html):
    cleaned, changed = clean_html(html)
    ids = re.findall(r'\b(id|name)="([^"]*)"', cleaned)
    assert changed and all(kind == "id" and value.startswith("learner-") for kind, value in ids), cleaned


@pytest.mark.parametrize(
    "src, kept",
    [
        (f"data:image/png;base64,{PNG}", True),
        ("data:image/jpeg;base64,/9j/4AAQ", True),
        ("data:image/svg+xml;base64,PHN2Zz48L3N2Zz4=", False),
        ("https://example.org/pixel.png", False),  # fetched by the instructor's browser as it opens the page
        ("/hub/logout", False),  # a request with the instructor's cookies
        ("x", False),
    ],
)
def test_images_keep_inline_data_only(src, kept):
    cleaned, _ = clean_html(f'<img src="{src}" alt="a plot">')
    assert cleaned == (f'<img src="{src}" alt="a plot">' if kept else '<img alt="a plot">')


def test_stream_and_error_outputs_are_kept_as_they_are():
    from gpucost_lab.grading.checks import error_output

    outputs = [
        new_output("stream", name="stdout", text=f"<script>{flag('stream')}</script>\n"),  # escaped by the page
        error_output("the check `assert abs(step_time_s - 0.25) < 1e-9` failed"),  # the grader's reason a test failed
    ]
    nb = sanitized(one_cell_notebook(new_code_cell("", outputs=copy.deepcopy(outputs))))
    assert nb.cells[0].outputs == outputs


def test_the_labs_own_cells_are_left_as_written():
    for lab in ("profile_training_loop", "optimization_plan"):
        for path in (ROOT / "solutions" / lab / f"{lab}.ipynb", release_path(lab)):
            nb = nbformat.read(path, as_version=4)
            assert sanitized(nb).cells == nb.cells, path


def test_sanitizing_twice_changes_nothing_more():
    cells = [new_markdown_cell(md) for md in MARKDOWN_VECTORS.values()]
    cells.append(new_code_cell("", outputs=[html_output(html) for html in HTML_VECTORS.values()]))
    nb = nbformat.v4.new_notebook(cells=cells)
    once = sanitized(nb)
    assert sanitized(once) == once
    for cell in once.cells[:-1]:
        assert clean_html(render_markdown(cell.source))[1] is False  # its HTML is safe as it is


def test_a_markdown_cell_that_cannot_render_shows_its_text():
    source = "See ![plot](attachment:missing.png) and <b>this</b>"
    with pytest.raises(Exception, match="missing attachment"):
        render_markdown(source)  # nbconvert could not show the page at all
    nb = sanitized(one_cell_notebook(new_markdown_cell(source)))
    shown = "<pre>See ![plot](attachment:missing.png) and &lt;b&gt;this&lt;/b&gt;</pre>"
    assert render_markdown(nb.cells[0].source).strip() == f'<div class="gpucost-sanitized">{shown}</div>'


def test_html_too_deep_to_sanitize_in_good_time_is_shown_as_text():
    deep = "<div>" * 3_000 + "x" + "</div>" * 3_000  # 6,000 tags, nested: html5lib would take seconds
    nb = sanitized(one_cell_notebook(new_markdown_cell(deep)))
    assert nb.cells[0].source.startswith('<div class="gpucost-sanitized"><pre>&lt;div&gt;&lt;div&gt;')
    assert active(render_markdown(nb.cells[0].source)) == []


def test_a_notebook_s_html_is_sanitized_up_to_its_budget_then_shown_as_text():
    piece = "<b></b>" * (sanitize.MAX_TAGS // 2 - 50)  # 4,900 tags: under the limit of one piece
    count = sanitize.MAX_NOTEBOOK_TAGS // (sanitize.MAX_TAGS - 100)  # 10 pieces fit the notebook's budget
    nb = sanitized(one_cell_notebook(new_code_cell("", outputs=[html_output(piece) for _ in range(count + 1)])))
    shown = [o.data["text/html"] for o in nb.cells[0].outputs]
    assert shown[:count] == [piece] * count
    assert shown[count] == f"<pre>{piece.replace('<', '&lt;').replace('>', '&gt;')}</pre>"


def test_what_the_sanitizer_cannot_read_is_shown_as_text_and_grading_goes_on(monkeypatch):
    def unreadable(*args, **kwargs):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(sanitize, "_sanitize", unreadable)
    cells = [new_markdown_cell("<b>x</b>"), new_code_cell("", outputs=[html_output(HTML_VECTORS["script"])])]
    done = sanitized(nbformat.v4.new_notebook(cells=cells))
    assert done.cells[0].source == '<div class="gpucost-sanitized"><pre>&lt;b&gt;x&lt;/b&gt;</pre></div>'
    assert [dict(o.data) for o in done.cells[1].outputs] == [{"text/plain": "<IPython.core.display.HTML object>"}]


def test_a_raw_cell_and_the_widget_state_are_sanitized():
    nb = one_cell_notebook(nbformat.v4.new_raw_cell(HTML_VECTORS["img-onerror"], metadata={"format": "text/html"}))
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    done = sanitized(nb)
    assert done.cells[0].source == "<img>"
    assert "widgets" not in done.metadata
