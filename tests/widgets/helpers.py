"""Helpers of the tests in tests/widgets/: what a reader sees in a widget's HTML (its text, a table's rows, a
figure after a label)."""

import re
from html.parser import HTMLParser


class _Cells(HTMLParser):
    """Collect the text of every <tr>'s cells (th and td)."""

    def __init__(self):
        super().__init__()
        self.rows, self._row, self._cell = [], None, None

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._row.append(self._cell.strip())
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            self._row = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


def rows(html_text):
    parser = _Cells()
    parser.feed(html_text)
    header, *body = parser.rows
    return [dict(zip(header, r)) for r in body]


def text(html_text):
    """What a reader sees: tags dropped, whitespace collapsed, no space before punctuation."""
    plain = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html_text)).replace("&gt;", ">").strip()
    return re.sub(r" ([:;,.])", r"\1", plain)


def gb_after(label, s):
    """The number of GB printed right after ``label`` in ``s``."""
    return float(re.search(re.escape(label) + r"\s*([-\d.]+) GB", s).group(1))


def oom_block(s):
    m = re.search(r"out of memory at block (\d+)", s)
    return int(m.group(1)) if m else None
