"""The `crawler` tool: one web page as clean text (or markdown, or its cleaned HTML).

RAGFlow's Crawler drives a headless browser; plait fetches the page through the SSRF guard
(`plait.tools._http.fetch`: internal addresses refused, redirects checked hop by hop, a size
limit) and keeps what a reader would: the `<main>`/`<article>` part when there is one, without
scripts, styles, navigation, headers, footers, forms and hidden elements. No JavaScript runs, so a
page that builds itself in the browser gives little text.
"""

from __future__ import annotations

import re
from typing import Any

from bs4 import BeautifulSoup
from bs4.element import NavigableString, Tag

from plait.tools._http import fetch
from plait.tools.base import Tool, ToolCallContext, ToolError

FORMATS = ("text", "markdown", "html")
DEFAULT_MAX_CHARS = 20_000
MAX_CHARS_CAP = 200_000
_DROP = ("script", "style", "noscript", "template", "svg", "canvas", "iframe", "nav", "header",
         "footer", "aside", "form", "button", "select", "input", "textarea", "object", "embed")  # fmt: skip
_BLOCKS = frozenset(
    [
        "p",
        "div",
        "section",
        "article",
        "main",
        "li",
        "ul",
        "ol",
        "table",
        "tr",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "pre",
        "blockquote",
        "dd",
        "dt",
        "dl",
        "br",
        "hr",
        "figure",
    ]
)
_BLANKS = re.compile(r"\n{3,}")
_SPACES = re.compile(r"[ \t\f\v\u00a0]+")


def _main_part(soup: BeautifulSoup) -> Tag:
    for tag in soup.find_all(_DROP):
        tag.decompose()
    for tag in soup.select('[hidden], [aria-hidden="true"]'):
        tag.decompose()
    for name in ("main", "article"):
        found = soup.find(name)
        if isinstance(found, Tag) and found.get_text(strip=True):
            return found
    body = soup.body
    return body if isinstance(body, Tag) else soup


def _text(node: Tag) -> str:
    parts: list[str] = []

    def walk(el: Tag) -> None:
        for child in el.children:
            if isinstance(child, NavigableString):
                if type(child) is NavigableString:  # not comments, CDATA, doctypes
                    parts.append(str(child))
            elif isinstance(child, Tag):
                block = child.name in _BLOCKS
                if block:
                    parts.append("\n")
                walk(child)
                if block:
                    parts.append("\n")

    walk(node)
    return _tidy("".join(parts))


def _markdown(node: Tag) -> str:
    parts: list[str] = []

    def inline(el: Tag) -> str:
        return _SPACES.sub(" ", el.get_text(" ", strip=True))

    def walk(el: Tag) -> None:
        for child in el.children:
            if isinstance(child, NavigableString):
                if type(child) is NavigableString:
                    parts.append(str(child))
                continue
            if not isinstance(child, Tag):
                continue
            name = child.name
            if name in ("h1", "h2", "h3", "h4", "h5", "h6"):
                parts.append(f"\n\n{'#' * int(name[1])} {inline(child)}\n\n")
            elif name == "li":
                parts.append(f"\n- {inline(child)}")
            elif name == "pre":
                parts.append(f"\n\n```\n{child.get_text()}\n```\n\n")
            elif name == "a" and child.get("href"):
                parts.append(f"[{inline(child)}]({child.get('href')})")
            elif name in ("strong", "b"):
                parts.append(f"**{inline(child)}**")
            elif name in ("em", "i"):
                parts.append(f"*{inline(child)}*")
            elif name in _BLOCKS:
                parts.append("\n\n")
                walk(child)
                parts.append("\n\n")
            else:
                walk(child)

    walk(node)
    return _tidy("".join(parts))


def _tidy(text: str) -> str:
    lines = [_SPACES.sub(" ", line).strip() for line in text.splitlines()]
    return _BLANKS.sub("\n\n", "\n".join(lines)).strip()


def extract(html: str, fmt: str = "text") -> tuple[str, str]:
    """(title, content) of an HTML page in `fmt` (text, markdown or html)."""
    soup = BeautifulSoup(html, "html.parser")
    title = soup.title.get_text(strip=True) if soup.title else ""
    main = _main_part(soup)
    if fmt == "html":
        return title, str(main)
    if fmt == "markdown":
        return title, _markdown(main)
    return title, _text(main)


def crawler_tool() -> Tool:
    async def call(args: dict[str, Any], ctx: ToolCallContext) -> Any:
        url = args.get("url")
        if not isinstance(url, str) or not url.strip():
            raise ToolError("url must be an absolute http(s) URL")
        fmt = str(args.get("format") or "text").lower()
        if fmt not in FORMATS:
            raise ToolError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")
        limit = args.get("max_chars", DEFAULT_MAX_CHARS)
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise ToolError(f"max_chars must be a positive integer, got {limit!r}")
        limit = min(limit, MAX_CHARS_CAP)
        fetched = await fetch(
            ctx, "GET", url.strip(), what="crawler", headers={"Accept": "text/html,*/*;q=0.5"}
        )
        ctype = fetched.headers.get("content-type", "").lower()
        if "html" in ctype or (not ctype and fetched.raw.lstrip()[:1] == b"<"):
            title, content = extract(fetched.text(), fmt)
        elif ctype.startswith("text/") or "json" in ctype or "xml" in ctype:
            title, content = "", fetched.text()
        else:
            raise ToolError(
                f"crawler: {fetched.url} is not a web page ({ctype or 'unknown type'})",
                hint="give the URL of an HTML or text page",
            )
        truncated = len(content) > limit
        return {
            "url": fetched.url,
            "title": title,
            "content": content[:limit],
            "truncated": truncated,
        }

    return Tool(
        name="crawler",
        description="Fetch a web page and return its readable content (text, markdown or cleaned HTML).",
        parameters={
            "type": "object",
            "properties": {
                "url": {"type": "string", "description": "Absolute http(s) URL of the page."},
                "format": {"type": "string", "enum": list(FORMATS), "default": "text"},
                "max_chars": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_CHARS_CAP,
                    "default": DEFAULT_MAX_CHARS,
                },
            },
            "required": ["url"],
        },
        call=call,
    )
