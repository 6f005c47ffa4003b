"""matplotlib's SVG made safe to inline in the report's page: no XML prologue, namespaces, style elements or
style attributes (they become presentation attributes, as the page's Content-Security-Policy allows only its
own styles), and element ids prefixed per plot."""

from __future__ import annotations

import re

# Presentation attributes that may replace matplotlib's style properties (everything it writes).
_PRESENTATION = {
    "fill",
    "fill-opacity",
    "fill-rule",
    "stroke",
    "stroke-width",
    "stroke-opacity",
    "stroke-linecap",
    "stroke-linejoin",
    "stroke-miterlimit",
    "stroke-dasharray",
    "stroke-dashoffset",
    "opacity",
    "font-family",
    "font-size",
    "font-style",
    "font-weight",
    "text-anchor",
    "dominant-baseline",
    "clip-path",
    "color",
}


def inline_svg(text: str, prefix: str, label: str) -> str:
    """matplotlib's SVG as an element for an HTML page: no XML prologue, namespaces, style elements or
    attributes; ids prefixed with `prefix` so several plots share a page."""
    start = text.index("<svg")
    text = re.sub(r"<style[^>]*>.*?</style>", "", text[start:], flags=re.DOTALL)
    text = re.sub(r"<defs>\s*</defs>", "", text)
    head_end = text.index(">") + 1
    view_box = re.search(r'viewBox="([^"]+)"', text[:head_end]).group(1)  # type: ignore[union-attr]
    head = (
        f'<svg class="mpl" viewBox="{view_box}" width="100%" role="img" aria-label="{_attr(label)}" '
        'stroke-linejoin="round" stroke-linecap="butt">'
    )
    body = _TAG.sub(lambda m: _tag(m.group(0), prefix), text[head_end:])
    out = head + body.strip()
    if re.search(r"<(script|style|foreignObject|image|a)\b|\sstyle=|\son\w+=|https?:|javascript:", out, re.I):
        raise ValueError("unexpected content in the plot SVG")
    return out


_TAG = re.compile(r"<[^<>]+>")  # text content is escaped by matplotlib, so tags are delimited
_STYLE = re.compile(r'\sstyle="([^"]*)"')


def _attr(value: str) -> str:
    return value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")


def _tag(tag: str, prefix: str) -> str:
    def presentation(m: re.Match[str]) -> str:
        out = []
        for prop in m.group(1).split(";"):
            name, _, value = prop.partition(":")
            name, value = name.strip(), value.strip()
            if name in _PRESENTATION and value:
                out.append(f' {name}="{_attr(value.replace(chr(34), chr(39)))}"')
        return "".join(out)

    tag = _STYLE.sub(presentation, tag)
    tag = re.sub(r'\sid="([^"]+)"', lambda m: f' id="{prefix}-{m.group(1)}"', tag)
    tag = re.sub(r"url\(#([^)]+)\)", lambda m: f"url(#{prefix}-{m.group(1)})", tag)
    tag = re.sub(r'\sxlink:href="#([^"]+)"', lambda m: f' href="#{prefix}-{m.group(1)}"', tag)
    return tag
