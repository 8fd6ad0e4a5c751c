"""Research tools RAGFlow agents use: `tavily_extract`, `pubmed`, `github`.

Each is one client of a public HTTP API, sent through the SSRF guard (`plait.tools._http.fetch`).
Locations and keys are read by name per call (`ctx.secret`: stored variables), so a deployment or a
test points them elsewhere without code:

- `tavily_extract`: `TAVILY_API_KEY` (required), `TAVILY_URL` (default https://api.tavily.com),
  POST /extract;
- `pubmed`: `PUBMED_URL` (default NCBI E-utilities), `NCBI_API_KEY` (optional), ESearch (JSON)
  then EFetch (PubMed XML);
- `github`: `GITHUB_API_URL` (default https://api.github.com), `GITHUB_TOKEN` (optional),
  GET /search/repositories, sorted by stars as RAGFlow's tool.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from plait.tools._http import fetch
from plait.tools.base import Tool, ToolCallContext, ToolError

TAVILY_URL = "https://api.tavily.com"
PUBMED_URL = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils"
GITHUB_API_URL = "https://api.github.com"
MAX_URLS = 20
MAX_CONTENT_CHARS = 20_000


def _setting(ctx: ToolCallContext, explicit: str | None, name: str, default: str | None = None) -> str | None:
    if explicit:
        return explicit
    value = ctx.secret(name) if ctx is not None else None
    return value or default


def _query(args: dict[str, Any]) -> str:
    query = args.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ToolError("query must be a non-empty string")
    return query.strip()


def _limit(args: dict[str, Any], default: int, top: int) -> int:
    value = args.get("max_results", default)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ToolError(f"max_results must be an integer, got {value!r}")
    return max(1, min(value, top))


# --------------------------------------------------------------------------- tavily_extract


def tavily_extract_tool(*, base_url: str | None = None, api_key: str | None = None) -> Tool:
    async def call(args: dict[str, Any], ctx: ToolCallContext) -> Any:
        urls = args.get("urls")
        if isinstance(urls, str):
            urls = [u.strip() for u in urls.split(",") if u.strip()]
        if not isinstance(urls, list) or not urls or not all(isinstance(u, str) and u for u in urls):
            raise ToolError("urls must be a non-empty list of URLs (or a comma-separated string)")
        if len(urls) > MAX_URLS:
            raise ToolError(f"at most {MAX_URLS} urls per call")
        depth = str(args.get("extract_depth") or "basic")
        fmt = str(args.get("format") or "markdown")
        if depth not in ("basic", "advanced") or fmt not in ("markdown", "text"):
            raise ToolError("extract_depth is basic or advanced; format is markdown or text")
        key = _setting(ctx, api_key, "TAVILY_API_KEY")
        if not key:
            raise ToolError(
                "no API key for Tavily",
                hint="set the variable TAVILY_API_KEY (Settings > Variables)",
                fatal=True,
            )
        base = (_setting(ctx, base_url, "TAVILY_URL", TAVILY_URL) or TAVILY_URL).rstrip("/")
        fetched = await fetch(
            ctx, "POST", base + "/extract", what="tavily_extract",
            headers={"Authorization": f"Bearer {key}"},
            json_body={"urls": urls, "extract_depth": depth, "format": fmt, "include_images": False},
        )  # fmt: skip
        data = fetched.json("Tavily")
        if not isinstance(data, dict) or not isinstance(data.get("results"), list):
            raise ToolError("Tavily answered without a results list")
        results = [
            {"url": r.get("url", ""), "content": str(r.get("raw_content") or "")[:MAX_CONTENT_CHARS]}
            for r in data["results"]
            if isinstance(r, dict)
        ]
        failed = [
            {"url": r.get("url", ""), "error": r.get("error", "")}
            for r in data.get("failed_results") or []
            if isinstance(r, dict)
        ]
        return {"results": results, "failed_results": failed}

    return Tool(
        name="tavily_extract",
        description="Extract the content of one or more web pages with Tavily Extract.",
        parameters={
            "type": "object",
            "properties": {
                "urls": {"type": "array", "items": {"type": "string"}, "description": "The pages' URLs."},
                "extract_depth": {"type": "string", "enum": ["basic", "advanced"], "default": "basic"},
                "format": {"type": "string", "enum": ["markdown", "text"], "default": "markdown"},
            },
            "required": ["urls"],
        },
        call=call,
    )


# --------------------------------------------------------------------------- pubmed


def _text_of(el: ET.Element | None) -> str:
    return "".join(el.itertext()).strip() if el is not None else ""


def parse_pubmed(xml_text: str) -> list[dict[str, Any]]:
    """Articles of an EFetch `PubmedArticleSet` document."""
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError as exc:
        raise ToolError(f"PubMed answered with invalid XML: {exc}") from exc
    out = []
    for article in root.iter("PubmedArticle"):
        citation = article.find("MedlineCitation")
        if citation is None:
            continue
        pmid = _text_of(citation.find("PMID"))
        art = citation.find("Article")
        authors = []
        for author in art.iter("Author") if art is not None else ():
            name = " ".join(
                p for p in (_text_of(author.find("ForeName")), _text_of(author.find("LastName"))) if p
            )
            name = name or _text_of(author.find("CollectiveName"))
            if name:
                authors.append(name)
        abstract = "\n".join(_text_of(a) for a in art.iter("AbstractText")) if art is not None else ""
        doi = next(
            (_text_of(i) for i in article.iter("ArticleId") if i.get("IdType") == "doi"),
            "",
        )
        journal = art.find("Journal") if art is not None else None
        out.append(
            {
                "pmid": pmid,
                "title": _text_of(art.find("ArticleTitle")) if art is not None else "",
                "authors": authors,
                "journal": _text_of(journal.find("Title")) if journal is not None else "",
                "year": _text_of(journal.find("JournalIssue/PubDate/Year")) if journal is not None else "",
                "doi": doi,
                "abstract": abstract[:MAX_CONTENT_CHARS],
                "url": f"https://pubmed.ncbi.nlm.nih.gov/{pmid}/",
            }
        )
    return out


def pubmed_tool(*, base_url: str | None = None) -> Tool:
    async def call(args: dict[str, Any], ctx: ToolCallContext) -> Any:
        query = _query(args)
        limit = _limit(args, 5, 50)
        base = (_setting(ctx, base_url, "PUBMED_URL", PUBMED_URL) or PUBMED_URL).rstrip("/")
        key = _setting(ctx, None, "NCBI_API_KEY")
        common = {"db": "pubmed", "api_key": key, "tool": "plait"}
        found = await fetch(
            ctx, "GET", base + "/esearch.fcgi", what="pubmed",
            params={**common, "term": query, "retmax": limit, "retmode": "json"},
        )  # fmt: skip
        data = found.json("PubMed ESearch")
        ids = data.get("esearchresult", {}).get("idlist") if isinstance(data, dict) else None
        if not isinstance(ids, list):
            raise ToolError("PubMed ESearch answered without an id list")
        if not ids:
            return {"query": query, "results": []}
        articles = await fetch(
            ctx, "GET", base + "/efetch.fcgi", what="pubmed",
            params={**common, "id": ",".join(str(i) for i in ids[:limit]), "retmode": "xml"},
        )  # fmt: skip
        return {"query": query, "results": parse_pubmed(articles.text())}

    return Tool(
        name="pubmed",
        description="Search PubMed (biomedical literature); returns titles, authors, journal, abstract and links.",
        parameters={
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Search terms (PubMed syntax allowed)."},
                "max_results": {"type": "integer", "minimum": 1, "maximum": 50, "default": 5},
            },
            "required": ["query"],
        },
        call=call,
    )


# --------------------------------------------------------------------------- github


def github_tool(*, base_url: str | None = None, token: str | None = None) -> Tool:
    async def call(args: dict[str, Any], ctx: ToolCallContext) -> Any:
        query = _query(args)
        limit = _limit(args, 10, 100)
        base = (_setting(ctx, base_url, "GITHUB_API_URL", GITHUB_API_URL) or GITHUB_API_URL).rstrip("/")
        headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}
        key = _setting(ctx, token, "GITHUB_TOKEN")
        if key:
            headers["Authorization"] = f"Bearer {key}"
        fetched = await fetch(
            ctx, "GET", base + "/search/repositories", what="github", headers=headers,
            params={"q": query, "sort": "stars", "order": "desc", "per_page": limit},
        )  # fmt: skip
        data = fetched.json("GitHub")
        if not isinstance(data, dict) or not isinstance(data.get("items"), list):
            raise ToolError("GitHub answered without an items list")
        results = [
            {
                "name": r.get("full_name") or r.get("name", ""),
                "url": r.get("html_url", ""),
                "description": r.get("description") or "",
                "stars": r.get("stargazers_count", 0),
                "language": r.get("language") or "",
                "updated_at": r.get("updated_at", ""),
            }
            for r in data["items"][:limit]
            if isinstance(r, dict)
        ]
        return {"query": query, "total_count": data.get("total_count", len(results)), "results": results}

    return Tool(
        name="github",
        description="Search GitHub repositories (most starred first); returns names, URLs, descriptions and stars.",
        parameters={
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Search keywords (GitHub search syntax allowed)."},
                "max_results": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10},
            },
            "required": ["query"],
        },
        call=call,
    )
