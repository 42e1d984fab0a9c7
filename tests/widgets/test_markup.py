"""gpucost_lab.widgets.markup (the number formats, header cells, invalid-input alert and CSS classes both widgets
share) against values written by hand."""

from html.parser import HTMLParser

import ipywidgets
import pytest

from gpucost_lab.widgets.markup import expose, gb, invalid_input_html, num, pct, th


@pytest.mark.parametrize(
    "x,digits,shown",
    [
        (14.08, 3, "14.08"),  # trailing zeros dropped
        (7.0761, 3, "7.076"),  # rounded to 3 decimals
        (2.0, 3, "2"),  # no decimal point left
        (10.0, 3, "10"),  # the integer part keeps its zeros
        (100, 3, "100"),
        (33.33, 0, "33"),
        (1.26, 1, "1.3"),
        (-0.0001, 3, "0"),  # rounds to zero: no "-0"
        (0.0, 3, "0"),
    ],
)
def test_num_writes_at_most_the_digits_asked_without_trailing_zeros(x, digits, shown):
    assert num(x, digits) == shown


def test_gb_is_num_with_its_unit():
    assert gb(14.08) == "14.08 GB" and gb(24) == "24 GB" and gb(21.5464) == "21.546 GB"


@pytest.mark.parametrize(
    "fraction,shown", [(0.2, "+20%"), (-0.5, "-50%"), (1.0, "+100%"), (0.0, "0%"), (0.004, "0%"), (-0.004, "0%")]
)
def test_pct_is_a_signed_whole_percentage_and_zero_has_no_sign(fraction, shown):
    assert pct(fraction) == shown


def test_the_invalid_input_alert_names_the_error_escaped_and_what_it_replaces():
    alert = invalid_input_html(ValueError("device_gb must be > 0 & finite, got <0>"), "ledger")
    assert alert.startswith('<div role="alert"') and "<b>Invalid input</b>" in alert
    assert "device_gb must be &gt; 0 &amp; finite, got &lt;0&gt;" in alert  # the message cannot inject markup
    assert alert.endswith("Change it to see the ledger.</div>")


class _Headers(HTMLParser):
    def __init__(self):
        super().__init__()
        self.cells = []

    def handle_starttag(self, tag, attrs):
        self.cells.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.cells[-1] += (data,)


def header(html_text):
    parser = _Headers()
    parser.feed(html_text)
    (cell,) = parser.cells
    return cell


def test_th_is_a_column_header_or_a_rows_label():
    tag, attrs, label = header(th("resident (GB)"))
    assert (tag, attrs["scope"], label) == ("th", "col", "resident (GB)")
    assert "border-bottom:2px" in attrs["style"]  # a column header is underlined twice as thick as a row
    tag, attrs, label = header(th("block 3", "row"))
    assert (tag, attrs["scope"], label) == ("th", "row", "block 3")
    assert "border-bottom:1px" in attrs["style"]


def test_expose_names_every_part_and_input_for_python_and_for_a_browser():
    box, verdict, device = ipywidgets.VBox(), ipywidgets.HTML(), ipywidgets.FloatText()
    inputs = {"device_gb": device}
    expose(box, "gpucost-demo", inputs, verdict=("verdict", verdict))
    assert box.inputs is inputs and box.verdict is verdict
    assert "gpucost-demo" in box._dom_classes
    assert "gpucost-demo-verdict" in verdict._dom_classes
    assert "gpucost-demo-input-device-gb" in device._dom_classes  # underscores become hyphens


def test_num_keeps_a_whole_number_s_own_zeros():
    # 30 written with no decimals is "30"; only zeros after the point are dropped: 2.50 -> "2.5", 100.000 -> "100"
    assert (num(30, 0), num(2.5, 2), num(100.0, 3), num(-0.0001, 2)) == (
        "30",
        "2.5",
        "100",
        "0",
    )
