"""gpucost_lab.formatting: one format per quantity (chapter 06) and the chapters' tables and figures, against strings
formatted by hand."""

import math
import re

import pandas as pd
import pytest

from gpucost_lab._validate import InputError
from gpucost_lab.formatting import (
    column_kind,
    describe,
    figure,
    format_bytes,
    format_estimate,
    format_estimates,
    format_hours,
    format_memory,
    format_number,
    format_pair,
    format_ratio,
    format_seconds,
    format_size,
    format_steps,
    format_usd,
    table,
    tidy_tables,
)
from gpucost_lab.stats import Estimate, Interval


def spread(centre: float, a: float) -> list[float]:
    """Three repeats centre x e^(-a, 0, a): geometric mean ``centre``, log std ``a``."""
    return [centre * math.exp(-a), centre, centre * math.exp(a)]


# Every Estimate below has 3 repeats: geometric mean g, log std a, interval g x exp(-+ t(0.975, 2) x a / sqrt(3)),
# t(0.975, 2) = 4.302653 (t table): a = 0.1 -> exp(-+0.248414) = x0.780037 / x1.281990 ; a = 0.05 -> exp(-+0.124207)
# = x0.883197 / x1.132250 ; a = 0.01 -> exp(-+0.0248414) = x0.975465 / x1.025152.
BASE_THROUGHPUT = spread(10_000.0, 0.1)  # 7,800 to 12,820
BASE_PER_SAMPLE = spread(1.1e-7, 0.1)  # 8.580e-08 to 1.410e-07
BASE_TO_TARGET = spread(1.0, 0.05)  # 0.8832 to 1.1323 (to the candidate's 4 decimals)
CAND_TO_TARGET = spread(0.8, 0.01)  # 0.7804 to 0.8201 (4 significant digits: 0.8000)


def test_formats_by_hand():
    assert format_number(12_345.6) == "12,346"
    assert format_number(2.1) == "2.100"
    assert format_number(0.01234) == "0.01234"
    assert format_number(1.1e-7) == "1.100e-07"
    assert format_estimate(Estimate.of(BASE_THROUGHPUT), "samples/s") == "10,000 samples/s (95% CI 7,800 to 12,820)"
    assert format_estimate(Estimate.of(BASE_TO_TARGET), "USD") == "1.000 USD (95% CI 0.883 to 1.132)"
    # a price never in scientific notation: 1.1e-7 has 10 decimals at 4 significant digits; bounds 8.5804e-8 and
    # 1.41019e-7 to the same decimals
    assert (
        format_estimate(Estimate.of(BASE_PER_SAMPLE), "USD") == "0.0000001100 USD (95% CI 0.0000000858 to 0.0000001410)"
    )
    # a row shares one format: 4 significant digits for its smallest mean (0.8 -> 4 decimals)
    assert format_estimates([Estimate.of(BASE_TO_TARGET), Estimate.of(CAND_TO_TARGET)], "USD") == [
        "1.0000 USD (95% CI 0.8832 to 1.1323)",
        "0.8000 USD (95% CI 0.7804 to 0.8201)",
    ]
    # one mean below 0.001: both in scientific notation ; [0.0019, 0.002, 0.0021]: s = 1e-4, half 2.4841e-4
    assert format_estimates([Estimate.of(spread(0.002, 0.05)), Estimate.of([9e-4, 9e-4])]) == [
        "2.000e-03 (95% CI 1.766e-03 to 2.265e-03)",
        "9.000e-04 (95% CI 9.000e-04 to 9.000e-04)",
    ]


@pytest.mark.parametrize(
    "x, text",
    [
        (0, "0.000"),  # zero is fixed, with 3 decimals
        (-0.5, "-0.5000"),  # 4 significant digits on either side of zero
        (999_999_999, "999,999,999"),  # the largest fixed value: no decimals
        (1e9, "1.000e+09"),  # from 10^9 up, scientific
        (0.001, "0.001000"),  # from 0.001 up, fixed
        (0.000999, "9.990e-04"),
    ],
)
def test_numbers_switch_to_scientific_notation_at_the_stated_bounds(x, text):
    assert format_number(x) == text


def test_an_interval_takes_the_value_s_decimals():
    assert format_estimate(Interval(0.8, 0.7, 0.9)) == "0.8000 (95% CI 0.7000 to 0.9000)"


@pytest.mark.parametrize(
    "n_bytes, text",
    [
        (25_100_000_000, "25.1 GB"),
        (2 * 10**12, "2.0 TB"),
        (1_234_567, "1.2 MB"),
        (1000, "1.0 kB"),  # decimal units: a kilobyte is 1,000 bytes
        (999, "999 B"),
        (0, "0 B"),
    ],
)
def test_bytes_in_decimal_units_with_one_decimal(n_bytes, text):
    assert format_bytes(n_bytes) == text


def test_memory_hours_ratios_and_steps():
    assert format_memory(25_100_000_000) == "25.1 GB (25,100,000,000 bytes)"
    assert format_hours(7.5) == "7.50 h" and format_hours(8) == "8.00 h"
    assert format_ratio(0.8) == "0.800x" and format_ratio(1.23456) == "1.235x"
    assert format_steps(1250) == "1,250" and format_steps(1250.0) == "1,250"
    assert format_steps(12.5) == "12.50"  # not whole: 4 significant digits


def test_a_pair_is_shown_exactly_only_where_the_short_forms_would_hide_a_difference():
    def exact(n):
        return f"{n:,} bytes"

    # one byte over a 25.1 GB budget reads "25.1 GB" twice: both exact
    assert format_pair(25_100_000_001, 25_100_000_000, format_bytes, exact) == (
        "25,100,000,001 bytes",
        "25,100,000,000 bytes",
    )
    assert format_pair(25_100_000_000, 25_100_000_000, format_bytes, exact) == ("25.1 GB", "25.1 GB")  # equal
    assert format_pair(30 * 10**9, 21_600_000_000, format_bytes, exact) == ("30.0 GB", "21.6 GB")


def test_no_estimates_format_as_no_lines():
    assert format_estimates([]) == []


# ---- the chapters' tables ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "seconds, text",
    [
        (0.016397542969, "16.40 ms"),  # a gap of 16,397.5 us
        (10_580.0, "2.939 h"),  # 10,580 / 3,600 = 2.9389
        (385.1, "6.418 min"),  # 385.1 / 60 = 6.4183
        (45.97, "45.97 s"),
        (0.99996, "1.000 s"),  # 999.96 ms rounds to 1,000 ms: one second
        (5.246293e-6, "5.246 µs"),
        (4e-7, "400.0 ns"),
        (-0.5, "-500.0 ms"),
        (0, "0 s"),
        (float("nan"), "n/a"),
        (None, "n/a"),
    ],
)
def test_times_take_the_unit_their_magnitude_calls_for(seconds, text):
    assert format_seconds(seconds) == text


@pytest.mark.parametrize(
    "n_bytes, text",
    [
        (244_403_360, "244.4 MB"),
        (92_928, "92.93 kB"),
        (65_536, "65.54 kB"),
        (14.08e9, "14.08 GB"),
        (256, "256 B"),
        (999.6, "999.6 B"),
        (999_960, "1.000 MB"),  # rounds up to the next unit
        (0, "0 B"),
    ],
)
def test_sizes_in_decimal_units_with_4_significant_digits(n_bytes, text):
    assert format_size(n_bytes) == text


@pytest.mark.parametrize(
    "usd, text",
    [
        (14, "$14.00"),
        (6.174, "$6.17"),  # from a dollar up: to the cent
        (1_234_567.891, "$1,234,567.89"),
        (0.2247, "$0.2247"),  # below a dollar: 4 significant digits
        (0.026807, "$0.02681"),
        (4.1333e-9, "$0.000000004133"),
        (9.7083e-8, "$0.00000009708"),
        (0.99996, "$1.00"),
        (-2.5, "-$2.50"),
        (0, "$0"),
    ],
)
def test_money_in_dollars_to_the_cent_or_4_significant_digits(usd, text):
    assert format_usd(usd) == text


@pytest.mark.parametrize(
    "name, kind",
    [
        ("duration_us", ("time", 1e-6)),
        ("span_ms", ("time", 1e-3)),
        ("self_time_s", ("time", 1.0)),
        ("seconds", ("time", 1.0)),
        ("run_hours", ("time", 3600.0)),
        ("saved_if_90%_removed_s", ("time", 1.0)),
        ("samples_per_s_geomean", ("rate", 1.0)),  # "_per_s" is a rate, not a time in seconds
        ("memory_bandwidth_gb_per_s", ("rate", 1.0)),
        ("total_bytes", ("size", 1.0)),
        ("growth bytes/step", ("size", 1.0)),
        ("peak_gb", ("size", 1e9)),
        ("MB", ("size", 1e6)),
        ("cost_per_sample_usd_geomean", ("money", 1.0)),
        ("saved_usd_per_run", ("money", 1.0)),
        ("$2.10/h", ("money", 1.0)),
        ("share", ("number", 1.0)),
        ("time_ratio", ("number", 1.0)),
        (3, ("number", 1.0)),
    ],
)
def test_a_column_s_kind_is_read_from_the_unit_in_its_name(name, kind):
    assert column_kind(name) == kind


def test_a_table_shows_each_column_in_its_unit_and_keeps_the_data():
    frame = pd.DataFrame(
        {
            "span_ms": [63.38724, 23.130833],
            "idle_ms": [40.25641, 6.053597e-12],  # floating-point residue: 1.5e-13 of the column's largest
            "busy_share": [0.364913, 1.0],
            "sync_points": [0, 12],
            "samples_per_s": [10_850.4, 41_430_000.0],
            "cost_per_sample_usd": [9.7083e-8, 1.705e-7],
            "verdict": ["slower", None],
        },
        index=["workers=0", "workers=4"],
    )
    shown = table(frame)
    assert shown.data is frame
    assert shown.cells.loc["workers=0"].tolist() == [
        "63.39 ms",
        "40.26 ms",
        "0.3649",
        "0",
        "10,850",
        "$0.00000009708",
        "slower",
    ]
    assert shown.cells.loc["workers=4"].tolist() == [
        "23.13 ms",
        "0 ms",  # the column's unit: 40.26 ms is its only other value
        "1.000",
        "12",
        "41,430,000",
        "$0.0000001705",
        "n/a",
    ]
    # the text twin, by hand: the index and the text column left, numbers right, two spaces between columns
    assert repr(shown).splitlines() == [
        "            span_ms   idle_ms  busy_share  sync_points  samples_per_s  cost_per_sample_usd  verdict",
        "workers=0  63.39 ms  40.26 ms      0.3649            0         10,850       $0.00000009708  slower",
        "workers=4  23.13 ms      0 ms       1.000           12     41,430,000        $0.0000001705  n/a",
    ]
    page = shown._repr_html_()  # the same cells, the index as row headings, text left and numbers right
    assert '<th scope="col" style="text-align:right">cost_per_sample_usd</th>' in page
    assert '<th scope="row" style="text-align:left">workers=0</th><td style="text-align:right">63.39 ms</td>' in page
    assert '<td style="text-align:left">slower</td>' in page


def test_a_column_s_times_or_sizes_share_a_unit_when_they_span_at_most_100x():
    # 0.204 to 3.876 GB spans 19x: all in GB; 10.03 s to 824.6 ms spans 12x: all in s; 12.86 s to 104 us spans
    # 124,000x: each in its own unit
    frame = pd.DataFrame(
        {
            "activations_gb": [0.204, 1.02, 3.876],
            "duration_us": [10_033_725.0, 1_044_000.0, 824_572.0],
            "idle_us": [12_855_100.0, 104.0, 0.0],
        }
    )
    cells = table(frame).cells
    assert cells["activations_gb"].tolist() == ["0.2040 GB", "1.020 GB", "3.876 GB"]
    assert cells["duration_us"].tolist() == ["10.03 s", "1.044 s", "0.8246 s"]
    assert cells["idle_us"].tolist() == ["12.86 s", "104.0 µs", "0 s"]
    assert format_seconds(0.0025, "ms") == "2.500 ms" and format_size(1500, "kB") == "1.500 kB"
    with pytest.raises(InputError, match="^unit must be one of h, min, s, ms, µs, ns, got 'days'"):
        format_seconds(1.0, "days")


def test_no_time_size_rate_or_price_is_ever_in_scientific_notation():
    frame = pd.DataFrame(
        {"start_us": [5.3252e12], "ts_bytes": [1.5e13], "units_per_s": [4.143e13], "cost_usd": [1e-11]}
    )
    text = repr(table(frame))
    assert not re.search(r"\de[+-]\d", text), text
    assert "1,479 h" in text and "15.00 TB" in text and "41,430,000,000,000" in text and "$0.00000000001000" in text


def test_a_number_without_a_unit_is_scientific_only_below_a_millionth():
    cells = table(pd.DataFrame({"relative difference": [9.43e-8, 0.229, 1.0]})).cells["relative difference"]
    assert cells.tolist() == ["9.430e-08", "0.2290", "1.000"]


def test_kinds_and_percent_override_the_name_and_a_caption_goes_above():
    frame = pd.DataFrame({"bytes": [12_689_600, 12_689_408], "share": [0.616, 0.0001]})
    shown = table(frame, kinds={"bytes": "count"}, percent=["share"], caption="static memory")
    assert shown.cells.to_dict("list") == {"bytes": ["12,689,600", "12,689,408"], "share": ["61.6%", "0.0%"]}
    assert repr(shown).splitlines()[0] == "static memory"
    assert (
        '<table class="gpucost-table"><caption style="text-align:left">static memory</caption>' in shown._repr_html_()
    )
    assert "&lt;b&gt;" in table(pd.DataFrame({"name": ["<b>"]}))._repr_html_()  # cells are text, escaped


def test_a_row_label_with_a_unit_sets_the_kind_of_a_column_without_one():
    shown = table(pd.DataFrame({1: [0.013041], 2: [0.010952]}, index=["step_time_s"]))
    assert shown.cells.loc["step_time_s"].tolist() == ["13.04 ms", "10.95 ms"]


def test_bad_tables_name_the_field():
    with pytest.raises(InputError, match="^frame must be a pandas DataFrame"):
        table([1, 2])
    with pytest.raises(InputError, match="^kinds\\['x'\\] must be one of time, size"):
        table(pd.DataFrame({"x": [1]}), kinds={"x": "speed"})


def test_tidy_tables_outside_a_notebook_sets_the_options_alone():
    with pd.option_context("display.max_colwidth", 50, "display.expand_frame_repr", True):
        tidy_tables()
        assert pd.get_option("display.max_colwidth") is None and pd.get_option("display.expand_frame_repr") is False
        assert pd.get_option("display.float_format")(10_850.4) == "10,850"
    pd.reset_option("display.float_format")
    pd.reset_option("display.max_columns")


def test_tidy_tables_in_a_notebook_shows_every_dataframe_through_the_formatter():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        with pd.option_context("display.max_rows", 60, "display.min_rows", 10):
            tidy_tables()
            frame = pd.DataFrame({"span_ms": [63.38724], "cost_usd": [6.174]})
            data, _ = shell.display_formatter.format(frame)
            assert data["text/plain"] == "    span_ms  cost_usd\n0  63.39 ms     $6.17"
            assert data["text/html"] == table(frame)._repr_html_()
            long = pd.DataFrame({"n": range(61)})  # over display.max_rows: the first 5 rows and the last 5
            lines = shell.display_formatter.format(long)[0]["text/plain"].splitlines()
            assert lines[0] == "10 of 61 rows shown: the first 5 and the last 5"
            assert [line.split()[0] for line in lines[2:]] == ["0", "1", "2", "3", "4", "56", "57", "58", "59", "60"]
    finally:
        for kind in ("text/plain", "text/html"):
            shell.display_formatter.formatters[kind].type_printers.pop(pd.DataFrame, None)
        InteractiveShell.clear_instance()
        for option in (
            "display.float_format",
            "display.max_columns",
            "display.max_colwidth",
            "display.expand_frame_repr",
        ):
            pd.reset_option(option)


# ---- figures -------------------------------------------------------------------------------------------------------


def test_a_figure_is_an_image_with_its_alt_text_and_is_closed():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    describe(fig, "A straight line from (0, 0) to (1, 1).")
    shown = figure(ax)  # an Axes stands for its figure
    assert shown.png.startswith(b"\x89PNG") and not plt.fignum_exists(fig.number)
    assert repr(shown) == "figure: A straight line from (0, 0) to (1, 1)."
    page = shown._repr_html_()
    assert page.startswith('<img src="data:image/png;base64,') and page.endswith(
        'alt="A straight line from (0, 0) to (1, 1)."/>'
    )
    quoted = figure(plt.subplots()[0], alt='a "quoted" <word>')._repr_html_()
    assert 'alt="a &quot;quoted&quot; &lt;word&gt;"' in quoted


def test_a_figure_without_alt_text_is_refused():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, _ = plt.subplots()
    with pytest.raises(InputError, match="^alt must be a non-empty string"):
        figure(fig)
    with pytest.raises(InputError, match="^alt must be a non-empty string"):
        figure(fig, alt="  ")
    with pytest.raises(InputError, match="^fig must be a matplotlib Figure or Axes"):
        figure("not a figure", alt="x")
    plt.close(fig)
