"""The CSS a learner's HTML may keep (:mod:`.sanitize`): a few properties of text and tables in ``style`` attributes,
and in ``<style>`` sheets only the rules that apply inside a pandas table; nothing that places a box elsewhere or
loads a URL.
"""

from __future__ import annotations

import re

import tinycss2
from bleach import html5lib_shim
from bleach.css_sanitizer import CSSSanitizer

#: CSS properties kept (in ``style`` attributes and pandas' sheets): colours, borders, spacing inside, text, sizes.
#: Nothing that places a box elsewhere (position, margin, float, transform, z-index), nothing that loads a URL.
CSS_PROPERTIES = frozenset(
    {
        "background-color", "border", "border-bottom", "border-collapse", "border-color", "border-left",
        "border-right", "border-spacing", "border-style", "border-top", "border-width", "color", "font-family",
        "font-size", "font-style", "font-weight", "height", "line-height", "max-width", "min-width", "padding",
        "padding-bottom", "padding-left", "padding-right", "padding-top", "text-align", "text-decoration",
        "vertical-align", "white-space", "width", "word-break",
    }
)  # fmt: skip
_CSS_FUNCTIONS = frozenset({"rgb", "rgba", "hsl", "hsla"})
# a rule of a <style> sheet applies inside a pandas table only: every selector starts at one (no sibling, no escape)
_SELECTOR = re.compile(r"(?:\.dataframe|#T_[\w-]+)(?![\w-])[\w\s.#:>\[\]=\"'()*-]*")


#: What every id of a learner's HTML starts with (and every in-page link of it points to): the page's own ids, the
#: grade ids nbgrader's contents links and the formgrader's score boxes use, are never one of them.
LEARNER_ID_PREFIX = "learner-"


def _safe_value(tokens) -> bool:
    for token in tokens:
        if token.type in ("url", "at-keyword", "error", "() block", "[] block", "{} block"):
            return False
        if token.type == "function" and (token.lower_name not in _CSS_FUNCTIONS or not _safe_value(token.arguments)):
            return False
    return True


def _declarations(css: str) -> tuple[str, bool]:
    """The declarations of ``css`` that :data:`CSS_PROPERTIES` allows, as text; and whether any was dropped."""
    kept, dropped = [], False
    for decl in tinycss2.parse_declaration_list(css, skip_comments=True, skip_whitespace=True):
        if decl.type == "declaration" and decl.lower_name in CSS_PROPERTIES and _safe_value(decl.value):
            value = " ".join(tinycss2.serialize(decl.value).split())
            kept.append(f"{decl.lower_name}: {value}" + (" !important" if decl.important else ""))
        else:
            dropped = True
    return "; ".join(kept), dropped


def _stylesheet(css: str) -> tuple[str, bool]:
    """The rules of a ``<style>`` sheet that apply inside a pandas table, as one line; and whether any was dropped."""
    rules, dropped = [], False
    for rule in tinycss2.parse_stylesheet(css, skip_comments=True, skip_whitespace=True):
        if rule.type != "qualified-rule":  # @import, @font-face, @media, parse errors
            dropped = True
            continue
        selectors = [" ".join(s.split()) for s in tinycss2.serialize(rule.prelude).split(",")]
        if not all(_SELECTOR.fullmatch(s) for s in selectors):
            dropped = True
            continue
        body, lost = _declarations(tinycss2.serialize(rule.content))
        dropped |= lost
        if body:
            selectors = [selector.replace("#T_", f"#{LEARNER_ID_PREFIX}T_") for selector in selectors]
            rules.append(f"{', '.join(selectors)} {{ {body} }}")
    sheet = " ".join(rules)
    if "<" in sheet:  # nothing may end the <style> element early
        return "", True
    return sheet, dropped


class LearnerCSS(CSSSanitizer):
    """bleach's CSS step with :func:`_declarations`; notes whether it dropped anything."""

    def __init__(self):
        super().__init__(allowed_css_properties=CSS_PROPERTIES, allowed_svg_properties=frozenset())
        self.dropped = False

    def sanitize_css(self, style):
        kept, dropped = _declarations(style)
        self.dropped |= dropped
        return kept


class StyleSheetFilter(html5lib_shim.Filter):
    """After :class:`_Sanitizer`: the text of each ``<style>`` element through :func:`_stylesheet`, and no element
    inside one (html5lib lets an SVG's style hold elements; the browser reads the serialized one as text)."""

    changed = False

    def __iter__(self):
        inside, text = False, []
        for token in self.source:
            kind = token["type"]
            if not inside:
                if kind == "StartTag" and token["name"] == "style":
                    inside, text = True, []
                yield token
            elif kind == "EndTag" and token["name"] == "style":
                sheet, dropped = _stylesheet("".join(text))
                self.changed |= dropped
                if sheet:
                    yield {"type": "Characters", "data": sheet}
                inside = False
                yield token
            elif kind in ("Characters", "SpaceCharacters"):
                text.append(token["data"])
            elif kind == "Entity":
                text.append(f"&{token['name']};")
            else:
                self.changed = True  # an element inside a style: dropped
