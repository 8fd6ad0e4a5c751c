"""Tools that reach the web: `http_request`, `web_search`, `wikipedia`, `arxiv`.

Every request goes through the SSRF guard (`plait.tools._http.fetch`). Service locations and keys
are looked up by name at call time with `ctx.secret` (stored variables first, then the environment),
so a deployment points them elsewhere without code: `PLAIT_SEARCH_BACKEND`, `SEARXNG_URL`,
`TAVILY_API_KEY`, `TAVILY_URL`, `DUCKDUCKGO_URL`, `WIKIPEDIA_URL`, `ARXIV_URL`. Factories take the
same settings as arguments for programmatic registries.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

from bs4 import BeautifulSoup

from plait.tools._http import fetch
from plait.tools.base import Tool, ToolCallContext, ToolError

MAX_TEXT_CHARS = 20_000
SEARCH_BACKENDS = ("searxng", "tavily", "duckduckgo")
DEFAULT_URLS = {
    "searxng": None,  # self-hosted: no public default
    "tavily": "https://api.tavily.com",
    "duckduckgo": "https://html.duckduckgo.com/html/",
    "wikipedia": "https://{lang}.wikipedia.org",
    "arxiv": "https://export.arxiv.org/api/query",
}


def _setting(ctx: ToolCallContext, explicit: str | None, name: str, default: str | None = None) -> str | None:
    if explicit:
        return explicit
    value = ctx.secret(name) if ctx is not None else None
    return value or default


def _limit(args: dict[str, Any], key: str = "max_results", default: int = 5, top: int = 20) -> int:
    value = args.get(key, default)
    try:
        number = int(value)
    except (TypeError, ValueError) as exc:
        raise ToolError(f"{key} must be an integer, got {value!r}") from exc
    return max(1, min(number, top))


def _query(args: dict[str, Any]) -> str:
    query = args.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ToolError("query must be a non-empty string")
    return query.strip()


def _clip(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + f"... [truncated, {len(text)} chars]"


# --------------------------------------------------------------------------- http_request


def http_request_tool() -> Tool:
    async def call(args: dict[str, Any], ctx: ToolCallContext) -> Any:
        url = args.get("url")
        if not isinstance(url, str) or not url.strip():
            raise ToolError("url must be an http(s) URL string")
        method = str(args.get("method") or "GET").upper()
        if method not in ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"):
            raise ToolError(
                f"unsupported method {method!r}", hint="use GET, POST, PUT, PATCH, DELETE or HEAD"
            )
        headers = {str(k): str(v) for k, v in (args.get("headers") or {}).items()}
        body = args.get("body")
        fetched = await fetch(
            ctx,
            method,
            url.strip(),
            what="http_request",
            params=args.get("query") or None,
            headers=headers,
            json_body=body if isinstance(body, (dict, list)) else None,
            content=body.encode() if isinstance(body, str) else None,
            raise_for_status=False,
        )
        content = fetched.body("auto")
        if isinstance(content, str):
            content = _clip(content)
        return {
            "status": fetched.status,
            "content_type": fetched.headers.get("content-type", ""),
            "body": content,
        }

    return Tool(
        name="http_request",
        description=(
            "Make an HTTP request to a public URL and return the status and body "
            "(JSON parsed, HTML as readable text). Internal addresses are refused."
        ),
        parameters={
            "type": "object",
            "properties": {
                "url": {"type": "string", "description": "Absolute http(s) URL."},
                "method": {"type": "string", "enum": ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"]},
                "query": {"type": "object", "description": "Query parameters.", "additionalProperties": True},
                "headers": {"type": "object", "additionalProperties": {"type": "string"}},
                "body": {"description": "JSON body (object/array) or raw text."},
            },
            "required": ["url"],
        },
        call=call,
    )


# --------------------------------------------------------------------------- web_search


def web_search_tool(
    backend: str | None = None, *, base_url: str | None = None, api_key: str | None = None
) -> Tool:
    """`web_search` over SearXNG (JSON API), Tavily (POST /search) or DuckDuckGo's HTML results page.

    Unset arguments are read per call: `PLAIT_SEARCH_BACKEND` (default duckduckgo), `SEARXNG_URL`,
    `TAVILY_URL`, `DUCKDUCKGO_URL`, `TAVILY_API_KEY`.
    """
    if backend is not None and backend not in SEARCH_BACKENDS:
        raise ValueError(f"unknown search backend {backend!r}; use one of {', '.join(SEARCH_BACKENDS)}")

    async def call(args: dict[str, Any], ctx: ToolCallContext) -> Any:
        query = _query(args)
        limit = _limit(args)
        chosen = (_setting(ctx, backend, "PLAIT_SEARCH_BACKEND", "duckduckgo") or "").lower()
        if chosen not in SEARCH_BACKENDS:
            raise ToolError(
                f"unknown search backend {chosen!r}",
                hint=f"set PLAIT_SEARCH_BACKEND to one of {', '.join(SEARCH_BACKENDS)}",
                fatal=True,
            )
        if chosen == "searxng":
            results, answer = await _searxng(ctx, query, limit, base_url)
        elif chosen == "tavily":
            results, answer = await _tavily(ctx, query, limit, base_url, api_key)
        else:
            results, answer = await _duckduckgo(ctx, query, limit, base_url), None
        out: dict[str, Any] = {"query": query, "backend": chosen, "results": results[:limit]}
        if answer:
            out["answer"] = answer
        return out

    return Tool(
        name="web_search",
        description="Search the web; returns result titles, URLs and snippets.",
        parameters={
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to search for."},
                "max_results": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5},
            },
            "required": ["query"],
        },
        call=call,
    )


async def _searxng(
    ctx: ToolCallContext, query: str, limit: int, base_url: str | None
) -> tuple[list[dict[str, Any]], str | None]:
    base = _setting(ctx, base_url, "SEARXNG_URL")
    if not base:
        raise ToolError(
            "the SearXNG backend needs the URL of your instance",
            hint="set the variable SEARXNG_URL (e.g. http://searx.internal:8080)",
            fatal=True,
        )
    fetched = await fetch(
        ctx, "GET", urljoin(base.rstrip("/") + "/", "search"), what="web_search (SearXNG)",
        params={"q": query, "format": "json"},
    )  # fmt: skip
    data = fetched.json("SearXNG")
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise ToolError("SearXNG answered without a results list (is the JSON format enabled?)")
    results = [
        {"title": r.get("title", ""), "url": r.get("url", ""), "snippet": r.get("content", "") or ""}
        for r in data["results"][:limit]
        if isinstance(r, dict)
    ]
    answers = data.get("answers") or []
    answer = answers[0] if answers and isinstance(answers[0], str) else None
    return results, answer


async def _tavily(
    ctx: ToolCallContext, query: str, limit: int, base_url: str | None, api_key: str | None
) -> tuple[list[dict[str, Any]], str | None]:
    key = _setting(ctx, api_key, "TAVILY_API_KEY")
    if not key:
        raise ToolError(
            "no API key for Tavily",
            hint="set the variable TAVILY_API_KEY (Settings > Variables, or the environment)",
            fatal=True,
        )
    base = _setting(ctx, base_url, "TAVILY_URL", DEFAULT_URLS["tavily"]) or ""
    fetched = await fetch(
        ctx,
        "POST",
        base.rstrip("/") + "/search",
        what="web_search (Tavily)",
        headers={"Authorization": f"Bearer {key}"},
        json_body={"query": query, "max_results": limit, "search_depth": "basic"},
    )
    data = fetched.json("Tavily")
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise ToolError("Tavily answered without a results list")
    results = [
        {"title": r.get("title", ""), "url": r.get("url", ""), "snippet": r.get("content", "") or ""}
        for r in data["results"]
        if isinstance(r, dict)
    ]
    answer = data.get("answer")
    return results, answer if isinstance(answer, str) else None


async def _duckduckgo(
    ctx: ToolCallContext, query: str, limit: int, base_url: str | None
) -> list[dict[str, Any]]:
    base = _setting(ctx, base_url, "DUCKDUCKGO_URL", DEFAULT_URLS["duckduckgo"]) or ""
    fetched = await fetch(
        ctx,
        "POST",
        base,
        what="web_search (DuckDuckGo)",
        data={"q": query, "kl": "wt-wt"},
        headers={"Accept": "text/html"},
    )
    return parse_duckduckgo(fetched.text(), limit)


def parse_duckduckgo(html: str, limit: int) -> list[dict[str, Any]]:
    """Results of DuckDuckGo's HTML page (`a.result__a`) or lite page (`a.result-link`)."""
    soup = BeautifulSoup(html, "html.parser")
    results: list[dict[str, Any]] = []
    for block in soup.select("div.result, div.web-result"):
        if "result--ad" in (block.get("class") or []):
            continue
        link = block.select_one("a.result__a")
        if link is None:
            continue
        snippet = block.select_one(".result__snippet")
        results.append(
            {
                "title": link.get_text(" ", strip=True),
                "url": _ddg_target(str(link.get("href", ""))),
                "snippet": snippet.get_text(" ", strip=True) if snippet else "",
            }
        )
    if not results:  # lite layout: a table row with the link, the next rows with the snippet
        for link in soup.select("a.result-link"):
            row = link.find_parent("tr")
            snippet_cell = None
            for sibling in row.find_next_siblings("tr") if row else []:
                snippet_cell = sibling.select_one("td.result-snippet")
                if snippet_cell is not None or sibling.select_one("a.result-link"):
                    break
            results.append(
                {
                    "title": link.get_text(" ", strip=True),
                    "url": _ddg_target(str(link.get("href", ""))),
                    "snippet": snippet_cell.get_text(" ", strip=True) if snippet_cell else "",
                }
            )
    return results[:limit]


def _ddg_target(href: str) -> str:
    """DuckDuckGo wraps result links as //duckduckgo.com/l/?uddg=<target>; return the target."""
    parts = urlsplit(href)
    if parts.path.startswith("/l/"):
        target = parse_qs(parts.query).get("uddg")
        if target:
            return target[0]
    return "https:" + href if href.startswith("//") else href


# --------------------------------------------------------------------------- wikipedia


def wikipedia_tool(*, base_url: str | None = None) -> Tool:
    """Search Wikipedia through the MediaWiki Action API (search + intro extracts in one request)."""

    async def call(args: dict[str, Any], ctx: ToolCallContext) -> Any:
        query = _query(args)
        limit = _limit(args, default=3, top=10)
        lang = str(args.get("lang") or "en")
        if not lang.replace("-", "").isalnum() or len(lang) > 12:
            raise ToolError(f"invalid language code {lang!r}")
        base = (_setting(ctx, base_url, "WIKIPEDIA_URL", DEFAULT_URLS["wikipedia"]) or "").format(lang=lang)
        fetched = await fetch(
            ctx,
            "GET",
            base.rstrip("/") + "/w/api.php",
            what="wikipedia",
            params={
                "action": "query",
                "format": "json",
                "formatversion": "2",
                "generator": "search",
                "gsrsearch": query,
                "gsrlimit": str(limit),
                "prop": "extracts|info",
                "exintro": "1",
                "explaintext": "1",
                "inprop": "url",
            },
            headers={"User-Agent": "plait (https://github.com/plait) tools/wikipedia"},
        )
        data = fetched.json("Wikipedia")
        if isinstance(data, dict) and "error" in data:
            err = data["error"]
            raise ToolError(f"Wikipedia refused the query: {err.get('info') or err}")
        pages = ((data or {}).get("query") or {}).get("pages") or []
        pages = sorted((p for p in pages if isinstance(p, dict)), key=lambda p: p.get("index", 0))
        return {
            "query": query,
            "results": [
                {
                    "title": p.get("title", ""),
                    "url": p.get("fullurl") or p.get("canonicalurl") or "",
                    "summary": _clip(p.get("extract") or "", 4000),
                }
                for p in pages
            ],
        }

    return Tool(
        name="wikipedia",
        description="Search Wikipedia and return the matching articles' titles, URLs and introductions.",
        parameters={
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "lang": {
                    "type": "string",
                    "description": "Language edition, e.g. en, de, fr.",
                    "default": "en",
                },
                "max_results": {"type": "integer", "minimum": 1, "maximum": 10, "default": 3},
            },
            "required": ["query"],
        },
        call=call,
    )


# --------------------------------------------------------------------------- arxiv

_ATOM = "{http://www.w3.org/2005/Atom}"
_ARXIV = "{http://arxiv.org/schemas/atom}"


def arxiv_tool(*, base_url: str | None = None) -> Tool:
    """Search arXiv through its API (an Atom feed)."""

    async def call(args: dict[str, Any], ctx: ToolCallContext) -> Any:
        query = _query(args)
        limit = _limit(args, top=50)
        search = query if ":" in query else f"all:{query}"
        url = _setting(ctx, base_url, "ARXIV_URL", DEFAULT_URLS["arxiv"]) or ""
        fetched = await fetch(
            ctx,
            "GET",
            url,
            what="arxiv",
            params={"search_query": search, "start": "0", "max_results": str(limit)},
        )
        return {"query": query, "results": parse_arxiv(fetched.raw)[:limit]}

    return Tool(
        name="arxiv",
        description="Search arXiv papers; returns titles, authors, abstracts and links.",
        parameters={
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "Words to search, or arXiv syntax such as ti:transformer AND au:vaswani.",
                },
                "max_results": {"type": "integer", "minimum": 1, "maximum": 50, "default": 5},
            },
            "required": ["query"],
        },
        call=call,
    )


def parse_arxiv(raw: bytes) -> list[dict[str, Any]]:
    if b"<!DOCTYPE" in raw[:2000] or b"<!ENTITY" in raw:
        raise ToolError("arxiv answered with a document type declaration, refused")
    try:
        root = ET.fromstring(raw)
    except ET.ParseError as exc:
        raise ToolError(f"arxiv answered with invalid XML ({exc})") from exc
    out: list[dict[str, Any]] = []
    for entry in root.findall(f"{_ATOM}entry"):

        def text(tag: str, node: ET.Element = entry) -> str:
            found = node.find(tag)
            return " ".join((found.text or "").split()) if found is not None else ""

        if "/api/errors" in text(f"{_ATOM}id"):
            raise ToolError(f"arxiv refused the query: {text(f'{_ATOM}summary')}")
        primary = entry.find(f"{_ARXIV}primary_category")
        pdf = next(
            (link.get("href", "") for link in entry.findall(f"{_ATOM}link") if link.get("title") == "pdf"), ""
        )
        out.append(
            {
                "id": text(f"{_ATOM}id"),
                "title": text(f"{_ATOM}title"),
                "authors": [text(f"{_ATOM}name", a) for a in entry.findall(f"{_ATOM}author")],
                "summary": text(f"{_ATOM}summary"),
                "published": text(f"{_ATOM}published"),
                "categories": [c.get("term", "") for c in entry.findall(f"{_ATOM}category")],
                "primary_category": primary.get("term", "") if primary is not None else "",
                "url": text(f"{_ATOM}id"),
                "pdf_url": pdf,
            }
        )
    return out
