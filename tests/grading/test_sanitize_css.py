"""Tests of gpucost_lab.grading.sanitize_css: the CSS a learner's HTML keeps, through ``clean_html``, against rules
written out by hand: in ``style`` attributes a few properties of text and tables, and in ``<style>`` sheets only the
rules that apply inside a pandas table (pandas' own Styler sheet kept whole); nothing that places a box elsewhere or
loads a URL.
"""

from __future__ import annotations

import pytest

from gpucost_lab.grading.sanitize import clean_html

from .helpers import active


def test_a_styler_table_keeps_its_colours():
    pd = pytest.importorskip("pandas")
    html = pd.DataFrame({"x": [1, 2]}).style.map(lambda v: "background-color: #ffcc00" if v > 1 else "").to_html()
    cleaned, changed = clean_html(html)
    table_id = html.split('<table id="')[1].split('"')[0]
    assert changed is True  # its ids are the learner's: prefixed, in the sheet's selectors alike
    assert f"#learner-{table_id}_row1_col0 {{ background-color: #ffcc00 }}" in cleaned
    assert f'<td id="learner-{table_id}_row1_col0" class="data row1 col0">2</td>' in cleaned


@pytest.mark.parametrize(
    "css, kept",
    [
        ("color: red; position: fixed; top: 0", "color: red"),  # nothing placed over the page
        ("background-image: url(https://example.org/t.png); color: #333", "color: #333"),
        ("cursor: url(https://example.org/c.cur), auto; width: 10px", "width: 10px"),
        ("margin-top: -900px; font-weight: bold", "font-weight: bold"),
        ("background-color: rgb(1, 2, 3)", "background-color: rgb(1, 2, 3)"),
        ("width: expression(alert(1))", None),
    ],
)
def test_inline_css_keeps_text_and_table_properties_only(css, kept):
    cleaned, changed = clean_html(f'<p style="{css}">s</p>')
    assert changed is True or kept == css
    assert cleaned == (f'<p style="{kept}">s</p>' if kept else '<p style="">s</p>')


@pytest.mark.parametrize(
    "sheet",
    [
        "body { display: none }",
        "* { color: red }",
        ".dataframe ~ p { color: red }",  # a sibling outside the table
        ".dataframe th, .prompt { color: red }",
        "@import url(https://example.org/x.css);",
        ".dataframe th { background: url(https://example.org/x) }",
        ".dataframe th { color: red } </style><script>alert(1)</script>",
    ],
)
def test_a_style_sheet_keeps_no_rule_that_reaches_outside_a_table(sheet):
    cleaned, changed = clean_html(f"<style>{sheet}</style><table class='dataframe'></table>")
    assert changed is True
    assert active(cleaned) == []
    sheet_kept = cleaned.split("<style>")[1].split("</style>")[0]
    assert sheet_kept in ("", ".dataframe th { color: red }")
