"""gpucost_lab.release.report: the release report in Markdown and HTML (chapter 06), against values formatted by
hand."""

import dataclasses
import math
import os
import re
from html.parser import HTMLParser

import pytest

from gpucost_lab import atomic
from gpucost_lab.measure.contract import BenchmarkContract
from gpucost_lab.release import CandidateResult, gate
from gpucost_lab.release.report import ReportData, render_html, render_markdown, write_report
from gpucost_lab.stats import Estimate

GB = 10**9
METHOD = "synchronized timing, 3 repeats x 20 steps, Student-t 95% CI"


def spread(centre: float, a: float) -> list[float]:
    """Three repeats centre x e^(-a, 0, a): geometric mean ``centre``, log std ``a``."""
    return [centre * math.exp(-a), centre, centre * math.exp(a)]


# Every Estimate below has 3 repeats: geometric mean g, log std a, interval g x exp(-+ t(0.975, 2) x a / sqrt(3)),
# t(0.975, 2) = 4.302653 (t table): a = 0.1 -> exp(-+0.248414) = x0.780037 / x1.281990 ; a = 0.05 -> exp(-+0.124207)
# = x0.883197 / x1.132250 ; a = 0.01 -> exp(-+0.0248414) = x0.975465 / x1.025152.
BASE_THROUGHPUT = spread(10_000.0, 0.1)  # 7,800 to 12,820
CAND_THROUGHPUT = spread(12_500.0, 0.01)  # 12,193 to 12,814
BASE_PER_SAMPLE = spread(1.1e-7, 0.1)  # 8.580e-08 to 1.410e-07
CAND_PER_SAMPLE = spread(8.8e-8, 0.01)  # 8.584e-08 to 9.021e-08
BASE_TO_TARGET = spread(1.0, 0.05)  # 0.8832 to 1.1323 (to the candidate's 4 decimals)
CAND_TO_TARGET = spread(0.8, 0.01)  # 0.7804 to 0.8201 (4 significant digits: 0.8000)


@pytest.fixture(scope="module")
def contract():
    return BenchmarkContract.capture(inputs=[(64, 32)], device="cpu", repeats=3, model_name="MLP", seed=7)


def make_report(contract, *, name="mlp-bf16", peak=1_234_567, hours=6.0, candidate_contract=None, **kw):
    candidate_contract = candidate_contract or dataclasses.replace(contract, dtype="bfloat16")
    base = CandidateResult(
        "mlp-fp32",
        contract,
        Estimate.of(BASE_TO_TARGET),
        True,
        (),
        2_500_000,
        7.0,
        samples_per_s=Estimate.of(BASE_THROUGHPUT),
        cost_per_sample_usd=Estimate.of(BASE_PER_SAMPLE),
        steps_to_target=1200,
        parity_summary="reference",
    )
    cand = CandidateResult(
        name,
        candidate_contract,
        Estimate.of(CAND_TO_TARGET),
        True,
        ("accuracy 0.912 vs 0.915, within 0.01",),
        peak,
        hours,
        samples_per_s=Estimate.of(CAND_THROUGHPUT),
        cost_per_sample_usd=Estimate.of(CAND_PER_SAMPLE),
        steps_to_target=1250,
    )
    decision = gate(base, cand, budget_bytes=2_000_000, window_hours=8.0, allow=("dtype",), fallback="v6-last-good")
    args = dict(
        title="Release report: bf16 autocast",
        contract=contract,
        throughput_method=METHOD,
        price_per_hour_usd=2.10,
        baseline=base,
        candidate=cand,
        decision=decision,
        candidate_contract=candidate_contract,
        quality_target="validation accuracy >= 0.90",
    )
    args.update(kw)
    return ReportData(**args)


def visible_text(page: str) -> str:
    """The text an HTML page shows, entities decoded, outside <style>."""

    class Text(HTMLParser):
        def __init__(self):
            super().__init__(convert_charrefs=True)
            self.parts, self.skip = [], False

        def handle_starttag(self, tag, attrs):
            self.skip = tag == "style"

        def handle_endtag(self, tag):
            self.skip = False

        def handle_data(self, data):
            if not self.skip:
                self.parts.append(data)

    parser = Text()
    parser.feed(page)
    return " ".join(" ".join(parser.parts).split())


EXPECTED = [  # (what, the text the report must show), formatted by hand from the numbers above
    ("hardware", "CPU cores"),
    ("no GPU", "none (CPU only)"),
    ("python", None),  # filled from the contract below
    ("torch", None),
    ("shapes", "64 x 32"),
    ("precision", "float32"),
    ("seed", "7"),
    ("method", METHOD),
    ("price", "2.10 USD: an assumption, not a measurement"),
    ("quality target", "validation accuracy >= 0.90"),
    ("base throughput", "10,000 samples/s (95% CI 7,800 to 12,820)"),
    ("cand throughput", "12,500 samples/s (95% CI 12,193 to 12,814)"),
    # a price never in scientific notation: 4 significant digits for the smaller mean (8.8e-8: 11 decimals)
    ("base cost per sample", "0.00000011000 USD (95% CI 0.00000008580 to 0.00000014102)"),
    ("cand cost per sample", "0.00000008800 USD (95% CI 0.00000008584 to 0.00000009021)"),
    ("base peak memory", "2.5 MB (2,500,000 bytes)"),
    ("cand peak memory", "1.2 MB (1,234,567 bytes)"),
    ("steps to target", "1,250"),
    ("base cost to target", "1.0000 USD (95% CI 0.8832 to 1.1323)"),  # one row, one format
    ("cand cost to target", "0.8000 USD (95% CI 0.7804 to 0.8201)"),
    ("parity", "passed: accuracy 0.912 vs 0.915, within 0.01"),
    ("candidate contract change", "dtype: 'float32' -> 'bfloat16'"),
    ("decision", "promote"),
    ("fallback", "v6-last-good"),
    ("memory check", "memory: 1.2 MB <= 2.0 MB budget"),
    ("window check", "window: run 6.00 h <= 8.00 h window"),
]


def expected_texts(contract):
    texts = []
    for what, text in EXPECTED:
        if what == "python":
            text = contract.python_version
        if what == "torch":
            text = contract.torch_version
        texts.append((what, text))
    texts.append(("cpu", contract.cpu_model))
    return texts


def md_unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def test_markdown_states_every_required_item(contract):
    data = make_report(contract)
    md = render_markdown(data)
    shown = md_unescape(md)
    for what, text in expected_texts(contract):
        assert text in shown, what
    assert md.startswith("# Release report: bf16 autocast\n")
    assert "**Decision: promote mlp-bf16; mlp-bf16 is now in production.**" in md
    # cost to target: 0.8 / 1.0 with a = 0.01^2/(3 x 0.64) = 5.21e-5 and 0.05^2/(3 x 1) = 8.33e-4 -> below 1
    assert "| cost to target, candidate / baseline | 0.800x (95% CI " in md
    assert "$" not in md  # Jupyter would read $...$ as mathematics


def test_html_states_every_required_item_and_is_self_contained(contract):
    page = render_html(make_report(contract))
    shown = visible_text(page)
    for what, text in expected_texts(contract):
        assert " ".join(text.split()) in shown, what
    assert page.startswith("<!DOCTYPE html>") and '<meta charset="utf-8">' in page
    for outside in ("http://", "https://", "<script", "<link", "src=", "@import", "url("):
        assert outside not in page.lower()


def test_both_formats_show_the_same_values(contract):
    data = make_report(contract)
    md_cells = {
        md_unescape(c.strip())
        for line in render_markdown(data).splitlines()
        if line.startswith("|")
        for c in line.strip("|").split(" | ")
    }
    page = render_html(data)
    for value in (
        "0.00000008800 USD (95% CI 0.00000008584 to 0.00000009021)",
        "1.2 MB (1,234,567 bytes)",
        "v6-last-good",
    ):
        assert value in md_cells and f"<td>{value}</td>" in page


def test_a_fallback_report_names_the_failed_check_and_the_fallback(contract):
    data = make_report(contract, peak=3_000_000)  # over the 2.0 MB budget
    md = md_unescape(render_markdown(data))
    assert "Decision: fall back to v6-last-good; mlp-bf16 is not released." in md
    assert "| memory | FAILED | memory: 3.0 MB > 2.0 MB budget |" in md
    assert "| parity | passed | parity: passed (accuracy 0.912 vs 0.915, within 0.01) |" in md
    page = render_html(data)
    assert '<p class="headline fallback">Decision: fall back to v6-last-good; mlp-bf16 is not released.</p>' in page
    assert "<td>memory</td><td>FAILED</td><td>memory: 3.0 MB &gt; 2.0 MB budget</td>" in page


def test_a_hostile_model_name_is_escaped(contract):
    evil = "<script>alert('x')</script>"
    data = make_report(dataclasses.replace(contract, model_name=evil), name="mlp|<b>bold</b>&amp;*x*")
    page = render_html(data)
    assert "<script" not in page and "<b>" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert "mlp|&lt;b&gt;bold&lt;/b&gt;&amp;amp;*x*" in page
    assert evil in visible_text(page)  # shown as typed
    md = render_markdown(data)
    assert re.search(r"(?<!\\)<(script|/script|b>|/b>)", md) is None  # no tag Markdown would pass through
    assert r"\<script>alert('x')\</script>" in md
    assert r"mlp\|\<b>bold\</b>\&amp;\*x\*" in md  # a table pipe, a tag, an entity, emphasis: all literal
    model_rows = [line for line in md.splitlines() if line.startswith("| workload | model |")]
    assert len(model_rows) == 1 and len(re.findall(r"(?<!\\)\|", model_rows[0])) == 4  # still 3 columns


def test_write_report_by_suffix(tmp_path, contract):
    data = make_report(contract)
    assert write_report(data, tmp_path / "r.md").read_text(encoding="utf-8") == render_markdown(data)
    assert write_report(data, tmp_path / "r.html").read_text(encoding="utf-8") == render_html(data)
    with pytest.raises(ValueError, match=r"path must end with one of \.md, \.html, \.htm, got .*r\.pdf"):
        write_report(data, tmp_path / "r.pdf")
    with pytest.raises(ValueError, match="path must be in an existing folder"):
        write_report(data, tmp_path / "missing" / "r.md")


def test_write_report_is_atomic(tmp_path, monkeypatch, contract):
    path = tmp_path / "report.html"
    path.write_text("the previous report")

    def crash(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(atomic.os, "fsync", crash)
    with pytest.raises(OSError, match="Input/output error"):
        write_report(make_report(contract), path)
    monkeypatch.undo()
    assert path.read_text() == "the previous report"
    assert os.listdir(tmp_path) == ["report.html"]


@pytest.mark.parametrize(
    "kw, message",
    [
        (dict(title=" "), "title must be a non-empty string"),
        (dict(price_per_hour_usd=0), "price_per_hour_usd must be > 0, got 0"),
        (dict(throughput_method=""), "throughput_method must be a non-empty string"),
    ],
)
def test_report_data_rejects_bad_fields(contract, kw, message):
    with pytest.raises(ValueError, match=message):
        make_report(contract, **kw)


def test_report_data_needs_the_decision_about_its_rows(contract):
    data = make_report(contract)
    with pytest.raises(ValueError, match="decision must be about baseline 'mlp-fp32' and candidate 'other'"):
        dataclasses.replace(data, candidate=dataclasses.replace(data.candidate, name="other"))


def test_the_parity_row_shows_each_summary_or_the_parity_check(contract):
    # the baseline names its summary; the candidate gives none, so its parity check speaks: passed + its reason
    md = md_unescape(render_markdown(make_report(contract)))
    assert "| quality parity | reference | passed: accuracy 0.912 vs 0.915, within 0.01 |" in md


def test_a_report_needs_the_fields_the_gate_does_not(contract):
    data = make_report(contract)
    with pytest.raises(ValueError, match="candidate.samples_per_s must be given for a report, got None"):
        dataclasses.replace(data, candidate=dataclasses.replace(data.candidate, samples_per_s=None))
    with pytest.raises(ValueError, match="baseline.steps_to_target must be given for a report, got None"):
        dataclasses.replace(data, baseline=dataclasses.replace(data.baseline, steps_to_target=None))
    with pytest.raises(ValueError, match="baseline must be a CandidateResult, got dict"):
        dataclasses.replace(data, baseline={})


def test_report_is_in_samples(contract):
    tokens = dataclasses.replace(contract, counted_unit="tokens")
    with pytest.raises(ValueError, match="contract.counted_unit must be 'samples'"):
        make_report(tokens, candidate_contract=dataclasses.replace(tokens, dtype="bfloat16"))
