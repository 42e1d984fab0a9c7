"""Learner HTML never runs: what a submission displays is sanitized before nbgrader shows it as HTML.

nbgrader renders a learner's notebook as HTML in two places, and sanitizes neither: the formgrader shows the
autograded notebook on the instructor's own origin (where a script reads the ``_xsrf`` cookie and calls the course's
APIs: the contents of the course, the gradebook), and ``generate_feedback`` writes it as a page the learner and the
instructor open. An answer cell that displays HTML, a markdown cell added to the notebook's JSON, an
``application/javascript`` output would run in both. :class:`SanitizeLearnerHTML` is an nbconvert preprocessor that
removes every way such content could run code or reach beyond its own box, and keeps what a lab shows:

- code cell outputs keep only text (``text/plain``, ``text/latex``), PNG and JPEG images (base64 data only) and
  sanitized HTML (``text/html``; ``text/markdown`` is rendered and kept as sanitized HTML). Everything else goes:
  ``application/javascript``, widget views, ``image/svg+xml`` (an SVG may hold a script), any other type, and the
  ``filenames`` metadata that would make an image load a path. Streams and errors (the grader's one-line reason a
  test failed among them) are text, escaped by the page, and are kept as they are.
- HTML (outputs, raw cells, and the HTML a markdown cell renders to) keeps only the elements of text, lists and
  tables (:data:`ALLOWED_TAGS`). ``script``, ``iframe`` (``srcdoc``), ``object``, ``embed``, ``form``, ``button``,
  ``svg``, ``math``, ``base``, ``meta``, ``link`` and every other element is shown as text instead. Attributes are
  kept from a short list only, so event handlers (``onerror``, ``onload``, ...) go, and class names only those of
  pandas' tables, highlighted code and heading anchors (not the page's own, which could lay a box over it). Links
  keep absolute ``http``, ``https`` and ``mailto`` targets and in-page ones: no ``javascript:``, no ``data:``, and
  no relative link (the formgrader serves a submission's own files, an HTML page among them, beside its view).
  Images keep inline PNG, JPEG, GIF or WebP data only (no URL that the instructor's browser would fetch with their
  cookies). Every ``id`` kept (a heading's, a Styler's) is prefixed ``learner-``
  (:data:`~.sanitize_css.LEARNER_ID_PREFIX`), so that no learner element takes a grade id, which the feedback
  page's contents links and the formgrader's ``$("#" + grade_id)`` score boxes look up; the lab's own read-only
  cells keep theirs. CSS keeps a few properties of text and tables, without ``url()`` or positioning, and a
  ``<style>`` sheet keeps only rules that apply inside a pandas table (selectors under ``.dataframe``, or a
  Styler's ``#T_`` ids, prefixed alike).
- a markdown cell whose rendered HTML needs none of this is left as written; one that does is replaced by its
  rendered HTML, sanitized (what the instructor sees is the same, less what was removed).
- HTML too large to sanitize in good time (:data:`MAX_TAGS` in one output or cell, :data:`MAX_NOTEBOOK_TAGS` in
  the notebook), and anything the sanitizer cannot read, is shown as text: it never stops the grading.

It runs as the last autograde step but one (after the scores are saved, so sanitizing changes no grade) so that the
autograded notebook on disk is clean, and in every HTML export of the course (``HTMLExporter``: the feedback pages
and the formgrader's view), which covers an autograded notebook written before it existed
(:func:`~.course.autograde_steps`).
"""

from __future__ import annotations

import html
import re

from bleach import html5lib_shim
from bleach.sanitizer import BleachSanitizerFilter
from nbconvert.preprocessors import Preprocessor
from traitlets import Bool

from gpucost_lab.grading.sanitize_css import LEARNER_ID_PREFIX, LearnerCSS, StyleSheetFilter

#: The elements a learner's HTML may keep: text, lists, tables. Any other element is shown as text.
ALLOWED_TAGS = frozenset(
    {
        "a", "abbr", "b", "blockquote", "br", "caption", "cite", "code", "col", "colgroup", "dd", "del", "details",
        "dfn", "div", "dl", "dt", "em", "figcaption", "figure", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i",
        "img", "input", "ins", "kbd", "li", "mark", "ol", "p", "pre", "q", "s", "samp", "small", "span", "strong",
        "style", "sub", "summary", "sup", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "u", "ul", "var",
    }
)  # fmt: skip
_CELL_ATTRIBUTES = frozenset({"colspan", "rowspan", "align", "valign", "scope"})
_ATTRIBUTES = {
    "a": {"href"},
    "img": {"src", "alt", "width", "height"},
    "table": {"border", "cellpadding", "cellspacing"},  # pandas writes border="1"
    "td": _CELL_ATTRIBUTES,
    "th": _CELL_ATTRIBUTES,
    "col": {"span", "width"},
    "colgroup": {"span", "width"},
    "ol": {"start", "type"},
    "li": {"value"},
    "details": {"open"},
    "input": {"type", "checked", "disabled"},  # a markdown task list's box: _Sanitizer refuses any other input
    "style": {"type", "scoped"},  # pandas writes <style scoped>, a Styler type="text/css"
}
_EVERYWHERE = frozenset({"class", "title", "style", "align", "lang", "dir"})
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_STYLER_ID = re.compile(r"T_[\w-]+")  # the ids pandas' Styler gives its table and cells
# the class names of what a lab shows: pandas' tables and Styler, code highlighted in markdown (Pygments), nbconvert's
# heading anchors; not the page's own (Bootstrap's navbar-fixed-top or modal would lay a box over the page)
_CLASS = re.compile(
    r"[a-z]{1,3}\d?|highlight|hl-[\w+-]+|language-[\w+-]+|anchor-link|dataframe|data|blank|index_name"
    r"|(?:row|col)_(?:heading|trim)|(?:row|col|level)\d+|task-list-item(?:-checkbox)?|gpucost-sanitized|T_[\w-]+"
)
_HEADING_ID = re.compile(r"[^\s\"'<>`&]+")  # nbconvert's anchors: the heading's text
_IMAGE_DATA = re.compile(r"data:image/(?:png|jpeg|gif|webp);base64,[A-Za-z0-9+/=\s]*", re.IGNORECASE)
_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*")
_LINK = re.compile(r"(?:https?://|mailto:|#)")
# bleach checks every URL attribute against these; "data" only for the inline images that _allowed_attribute lets by
_PROTOCOLS = frozenset({"http", "https", "mailto", "data"})

#: At most this many tags (start and end) in one output or cell, and in one notebook, are sanitized: html5lib's
#: time grows with their number times their depth. HTML beyond either is shown as text.
MAX_TAGS = 5_000
MAX_NOTEBOOK_TAGS = 50_000
_TAG = re.compile(r"</?[A-Za-z]")
#: What an output that had nothing left to show says instead.
REMOVED_NOTE = "[output not shown in the graded notebook: {}]"


def _uri(value: str) -> str:
    """A URL as bleach compares it: entities decoded, blanks and control characters dropped, lower case."""
    value = html5lib_shim.convert_entities(value)
    return re.sub(r"[`\000-\040\177-\240\s]+", "", value).lower()


def _allowed_attribute(tag: str, name: str, value: str) -> bool:
    if name == "class":
        return all(_CLASS.fullmatch(token) for token in value.split())
    if name == "id":
        return bool(_STYLER_ID.fullmatch(value) or (tag in _HEADINGS and _HEADING_ID.fullmatch(value)))
    if name not in _EVERYWHERE and name not in _ATTRIBUTES.get(tag, ()):
        return False
    if tag == "input" and name == "type":
        return value.lower() == "checkbox"
    if tag == "img" and name == "src":
        return bool(_IMAGE_DATA.fullmatch(value))
    if tag == "a" and name == "href":  # absolute, or in the page: a relative link would reach the instructor's
        return bool(_LINK.match(_uri(value)))  # origin (the formgrader serves a submission's files beside its view)
    return True


def _namespaced(token):
    """A tag's ``id`` as :data:`LEARNER_ID_PREFIX` + the id, and a heading's own anchor link (nbconvert's ``¶``) to
    it alike: no id of a learner's HTML is one of the page's (a grade id, which the contents links and the
    formgrader's score boxes look up). Other in-page links keep their target, the page's."""
    if token is None or token.get("type") not in ("StartTag", "EmptyTag") or not token.get("data"):
        return token
    data = token["data"]
    own = lambda name: name if name.startswith(LEARNER_ID_PREFIX) else LEARNER_ID_PREFIX + name  # noqa: E731
    if (None, "id") in data:  # once: HTML sanitized before (the autograded notebook's) keeps its ids
        data[(None, "id")] = own(data[(None, "id")])
    href, classes = data.get((None, "href")), str(data.get((None, "class"), "")).split()
    if isinstance(href, str) and href.startswith("#") and "anchor-link" in classes:
        data[(None, "href")] = "#" + own(href[1:])
    return token


class _Sanitizer(BleachSanitizerFilter):
    """bleach's sanitizing filter, noting whether it changed a tag: escaped it, or dropped or rewrote an attribute
    (a ``style`` attribute counts only when its CSS lost something: :class:`LearnerCSS` says)."""

    changed = False
    own_ids = False  # True for the lab's own cells (read-only, restored by nbgrader): their ids are the page's

    def sanitize_token(self, token):
        kind = token["type"]
        if kind not in ("StartTag", "EndTag", "EmptyTag"):
            return super().sanitize_token(token)
        before = {k: v for k, v in (token.get("data") or {}).items() if k != (None, "style")}
        had_style = (None, "style") in (token.get("data") or {})
        out = super().sanitize_token(token)
        out = out if self.own_ids else _namespaced(out)
        if (
            out is not None
            and out.get("type") in ("StartTag", "EmptyTag")
            and out["name"] == "input"
            and str((out.get("data") or {}).get((None, "type"), "")).lower() != "checkbox"
        ):
            out = self.disallowed_token(out)  # a text field, a button: shown as text
        if out is None or out.get("type") != kind:
            self.changed = True
        else:
            after = out.get("data") or {}
            if {k: v for k, v in after.items() if k != (None, "style")} != before or had_style != (
                (None, "style") in after
            ):
                self.changed = True
        return out


def _sanitize(text: str, parser_tags, own_ids: bool = False) -> tuple[str, bool]:
    """bleach.Cleaner's steps with this module's rules; the HTML, and whether sanitizing changed more than its
    spelling. With ``parser_tags``, as bleach parses (a tag outside it is text from the start, so the result keeps
    its original spelling); with None, as the browser parses (every element reaches the sanitizer)."""
    css = LearnerCSS()
    parser = html5lib_shim.BleachHTMLParser(
        tags=parser_tags, strip=False, consume_entities=False, namespaceHTMLElements=False
    )
    walker = html5lib_shim.getTreeWalker("etree")
    sanitizer = _Sanitizer(
        source=walker(parser.parseFragment(text)),
        allowed_tags=ALLOWED_TAGS,
        attributes=_allowed_attribute,
        strip_disallowed_tags=False,  # shown as text: the instructor sees what was tried
        strip_html_comments=True,
        css_sanitizer=css,
        allowed_protocols=_PROTOCOLS,
    )
    sanitizer.own_ids = own_ids
    sheets = StyleSheetFilter(source=sanitizer)
    serializer = html5lib_shim.BleachHTMLSerializer(  # as bleach.Cleaner's
        quote_attr_values="always",
        omit_optional_tags=False,
        escape_lt_in_attrs=True,
        resolve_entities=False,
        sanitize=False,
        alphabetical_attributes=False,
    )
    out = serializer.render(sheets)
    return out, sanitizer.changed or sheets.changed or css.dropped


def clean_html(text: str, own_ids: bool = False) -> tuple[str, bool]:
    """``text`` (HTML) sanitized as the module docstring says; and whether sanitizing changed more than its spelling
    (an element shown as text, an attribute or a CSS declaration dropped): False means ``text`` is safe as it is."""
    if not text:
        return "", False
    return _sanitize(text, ALLOWED_TAGS, own_ids)[0], _sanitize(text, None, own_ids)[1]


def render_markdown(source: str, attachments: dict | None = None) -> str:
    """``source`` as nbconvert's HTML export renders a markdown cell (its raw HTML and links as written)."""
    from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

    renderer = IPythonRenderer(escape=False, attachments=dict(attachments or {}))
    return MarkdownWithMath(renderer=renderer).render(source)


def _as_markdown(html_text: str) -> str:
    """Sanitized HTML as a markdown cell's source that renders to it unchanged: one HTML block on one line."""
    one_line = html_text.strip().replace("\r\n", "\n").replace("\r", "\n").replace("\n", "&#10;")
    return f'<div class="gpucost-sanitized">{one_line}</div>'


def _as_text(text: str) -> str:
    return f"<pre>{html.escape(text, quote=False)}</pre>"


def _joined(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


class _Limited:
    """:func:`clean_html` within :data:`MAX_TAGS` for one piece of HTML and :data:`MAX_NOTEBOOK_TAGS` for all
    (html5lib's time grows with the number of tags times their depth); beyond either, the HTML is shown as text."""

    def __init__(self, tags: int = MAX_NOTEBOOK_TAGS):
        self.left = tags

    def __call__(self, text: str, detect: bool = True, own_ids: bool = False) -> tuple[str, bool]:
        tags = len(_TAG.findall(text))
        if tags > MAX_TAGS or tags > self.left:
            return _as_text(text), True
        self.left -= tags
        return clean_html(text, own_ids) if detect else (_sanitize(text, ALLOWED_TAGS)[0], True)


def sanitize_markdown(source: str, attachments: dict | None = None, clean=None, own_ids: bool = False) -> str | None:
    """The source a markdown cell gets instead of ``source``, or None where its rendered HTML is safe as it is."""
    clean = clean or _Limited()
    try:
        rendered = render_markdown(source, attachments)
    except Exception:  # noqa: BLE001  (a missing attachment, a renderer error: the page could not show it either)
        return _as_markdown(_as_text(source))
    cleaned, changed = clean(rendered, own_ids=own_ids)
    return _as_markdown(cleaned) if changed else None


def sanitize_outputs(outputs: list, clean=None) -> list:
    """A code cell's outputs with only what the module docstring says is kept."""
    clean = clean or _Limited()
    kept = []
    for output in outputs:
        kind = output.get("output_type")
        if kind in ("stream", "error"):
            kept.append(output)
            continue
        if kind not in ("display_data", "execute_result"):
            continue  # not an output nbformat knows: the page might render it any way
        data, shown, removed = output.get("data", {}), {}, []
        for mime, value in data.items():
            if mime in ("text/plain", "text/latex"):
                shown[mime] = value
            elif mime in ("image/png", "image/jpeg") and _BASE64.fullmatch(_joined(value)):
                shown[mime] = value
            elif mime == "text/html":
                shown[mime] = clean(_joined(value), detect=False)[0]
            elif mime == "text/markdown" and "text/html" not in data:
                try:
                    rendered = render_markdown(_joined(value))
                except Exception:  # noqa: BLE001
                    rendered = _as_text(_joined(value))
                shown["text/html"] = clean(rendered, detect=False)[0]
            elif mime != "text/markdown":
                removed.append(mime)
        if not shown:
            shown["text/plain"] = REMOVED_NOTE.format(", ".join(removed) or "nothing to show")
        output["data"] = shown
        if isinstance(output.get("metadata"), dict):
            output["metadata"].pop("filenames", None)  # an image's path in place of its data
        kept.append(output)
    return kept


def _text_only(outputs: list) -> list:
    """What is left of outputs that could not be sanitized: streams, errors and plain text."""
    kept = []
    for output in outputs:
        if output.get("output_type") in ("stream", "error"):
            kept.append(output)
        elif output.get("output_type") in ("display_data", "execute_result"):
            text = output.get("data", {}).get("text/plain")
            output["data"] = {"text/plain": text if text is not None else REMOVED_NOTE.format("could not be read")}
            output["metadata"] = {}
            kept.append(output)
    return kept


class SanitizeLearnerHTML(Preprocessor):
    """Sanitize every cell's outputs and markdown as the module docstring says (an nbconvert preprocessor: in
    ``Autograde.autograde_preprocessors`` and ``HTMLExporter.preprocessors``)."""

    # on wherever it is listed: nbconvert's preprocessors are off unless enabled, and nbgrader's converters
    # register the ones they list without enabling them
    enabled = Bool(True, help="sanitize what the notebook displays (on; off only for a notebook you trust)").tag(
        config=True
    )

    def preprocess(self, nb, resources):
        self._clean = _Limited()  # one budget for the notebook
        if isinstance(nb.get("metadata"), dict):
            nb.metadata.pop("widgets", None)  # widget state: the page would load the widget manager for it
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        clean = getattr(self, "_clean", None) or _Limited()
        kind = cell.get("cell_type")
        try:
            if kind == "code":
                cell.outputs = sanitize_outputs(cell.get("outputs", []), clean)
            elif kind == "markdown":
                own = bool((cell.get("metadata", {}).get("nbgrader") or {}).get("locked"))  # the lab's own text
                replaced = sanitize_markdown(cell.source, cell.get("attachments"), clean, own_ids=own)
                if replaced is not None:
                    cell.source = replaced
                    cell.pop("attachments", None)  # the images it used are in the HTML now
            elif kind == "raw":
                cleaned, changed = clean(cell.source)
                if changed:
                    cell.source = cleaned
        except Exception:  # noqa: BLE001  (input the sanitizer cannot read is shown as text, and grading goes on)
            self.log.warning("cell %s could not be sanitized: shown as text", index)
            if kind == "code":
                cell.outputs = _text_only(cell.get("outputs", []))
            elif kind == "markdown":
                cell.source = _as_markdown(_as_text(cell.source))
                cell.pop("attachments", None)
            elif kind == "raw":
                cell.source = _as_text(cell.source)
        return cell, resources
