"""A real HTTP server on 127.0.0.1 answering like Tavily Extract, NCBI E-utilities (PubMed) and
GitHub's search API, plus web pages for the crawler. Bodies follow each API's documented shapes;
every request is recorded."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

TAVILY_EXTRACT = {
    "results": [
        {
            "url": "https://en.wikipedia.org/wiki/Artificial_intelligence",
            "raw_content": "# Artificial intelligence\n\nAI is intelligence exhibited by machines.",
            "images": [],
        }
    ],
    "failed_results": [{"url": "https://nope.example", "error": "Failed to fetch url"}],
    "response_time": 0.02,
}

ESEARCH = {
    "header": {"type": "esearch", "version": "0.3"},
    "esearchresult": {
        "count": "2",
        "retmax": "2",
        "retstart": "0",
        "idlist": ["38012345", "37999999"],
        "translationset": [],
        "querytranslation": "crispr[All Fields]",
    },
}

EFETCH = """<?xml version="1.0" ?>
<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, 1st January 2024//EN" "https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_240101.dtd">
<PubmedArticleSet>
<PubmedArticle>
  <MedlineCitation Status="MEDLINE" Owner="NLM">
    <PMID Version="1">38012345</PMID>
    <Article PubModel="Print">
      <Journal>
        <Title>Nature biotechnology</Title>
        <JournalIssue CitedMedium="Internet"><Volume>42</Volume><Issue>1</Issue>
          <PubDate><Year>2024</Year><Month>Jan</Month></PubDate></JournalIssue>
      </Journal>
      <ArticleTitle>Base editing with <i>CRISPR</i> in human cells.</ArticleTitle>
      <Abstract>
        <AbstractText Label="BACKGROUND">Base editors convert single bases.</AbstractText>
        <AbstractText Label="RESULTS">They work in human cells.</AbstractText>
      </Abstract>
      <AuthorList CompleteYN="Y">
        <Author ValidYN="Y"><LastName>Doudna</LastName><ForeName>Jennifer A</ForeName></Author>
        <Author ValidYN="Y"><CollectiveName>CRISPR Consortium</CollectiveName></Author>
      </AuthorList>
    </Article>
  </MedlineCitation>
  <PubmedData>
    <ArticleIdList>
      <ArticleId IdType="pubmed">38012345</ArticleId>
      <ArticleId IdType="doi">10.1038/s41587-023-0001-x</ArticleId>
    </ArticleIdList>
  </PubmedData>
</PubmedArticle>
<PubmedArticle>
  <MedlineCitation Status="PubMed-not-MEDLINE" Owner="NLM">
    <PMID Version="1">37999999</PMID>
    <Article PubModel="Electronic">
      <Journal><Title>Cell</Title><JournalIssue><PubDate><Year>2023</Year></PubDate></JournalIssue></Journal>
      <ArticleTitle>Prime editing.</ArticleTitle>
      <AuthorList><Author><LastName>Liu</LastName><ForeName>David R</ForeName></Author></AuthorList>
    </Article>
  </MedlineCitation>
  <PubmedData><ArticleIdList><ArticleId IdType="pubmed">37999999</ArticleId></ArticleIdList></PubmedData>
</PubmedArticle>
</PubmedArticleSet>
"""

GITHUB_SEARCH = {
    "total_count": 2,
    "incomplete_results": False,
    "items": [
        {
            "id": 1,
            "name": "ragflow",
            "full_name": "infiniflow/ragflow",
            "html_url": "https://github.com/infiniflow/ragflow",
            "description": "RAG engine",
            "stargazers_count": 70000,
            "watchers_count": 70000,
            "watchers": 70000,
            "language": "Python",
            "updated_at": "2026-11-20T10:00:00Z",
            "score": 1.0,
        },
        {
            "id": 2,
            "name": "plait",
            "full_name": "example/plait",
            "html_url": "https://github.com/example/plait",
            "description": None,
            "stargazers_count": 12,
            "watchers_count": 12,
            "watchers": 12,
            "language": None,
            "updated_at": "2026-11-01T10:00:00Z",
            "score": 0.5,
        },
    ],
}

ARTICLE_PAGE = """<!DOCTYPE html>
<html><head><title>Plait weaving guide</title><style>body{color:red}</style>
<script>var tracking = "do not show me";</script></head>
<body>
<header><nav><a href="/">Home</a> <a href="/about">About</a></nav></header>
<main>
  <h1>How to weave</h1>
  <p>Take <b>three</b> strands.</p>
  <ul><li>Cross left over middle</li><li>Cross right over middle</li></ul>
  <div hidden>secret hidden text</div>
  <p>Read <a href="https://example.org/more">more</a>.</p>
</main>
<footer>Copyright footer text</footer>
</body></html>"""


class ResearchServices:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        services = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _reply(self, status: int, body: str | bytes, ctype: str) -> None:
                data = body.encode() if isinstance(body, str) else body
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _handle(self, method: str) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode() if length else ""
                services.requests.append(
                    {
                        "method": method,
                        "path": parts.path,
                        "query": {k: v[0] for k, v in parse_qs(parts.query).items()},
                        "headers": dict(self.headers),
                        "body": body,
                    }
                )
                path = parts.path
                if path == "/tavily/extract":
                    if self.headers.get("Authorization") != "Bearer tvly-test":
                        return self._reply(
                            401, json.dumps({"detail": {"error": "Unauthorized"}}), "application/json"
                        )
                    return self._reply(200, json.dumps(TAVILY_EXTRACT), "application/json")
                if path == "/eutils/esearch.fcgi":
                    return self._reply(200, json.dumps(ESEARCH), "application/json; charset=UTF-8")
                if path == "/eutils/efetch.fcgi":
                    return self._reply(200, EFETCH, "text/xml; charset=UTF-8")
                if path == "/github/search/repositories":
                    return self._reply(200, json.dumps(GITHUB_SEARCH), "application/json; charset=utf-8")
                if path == "/page":
                    return self._reply(200, ARTICLE_PAGE, "text/html; charset=utf-8")
                if path == "/image.png":
                    return self._reply(200, b"\x89PNG\r\n", "image/png")
                if path == "/redirect-inside":
                    self.send_response(302)
                    self.send_header("Location", "http://10.0.0.1/admin")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return None
                return self._reply(404, "not found", "text/plain")

            def do_GET(self) -> None:  # noqa: N802
                self._handle("GET")

            def do_POST(self) -> None:  # noqa: N802
                self._handle("POST")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> ResearchServices:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
