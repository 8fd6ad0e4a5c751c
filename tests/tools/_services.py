"""A real HTTP server on 127.0.0.1 that answers like SearXNG, Tavily, DuckDuckGo, Wikipedia and arXiv.

Bodies follow each service's documented response format, so the tools' parsers are exercised on
the real shapes; every request is recorded for assertions.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

SEARXNG = {
    "query": "plait",
    "number_of_results": 0,
    "results": [
        {
            "url": "https://example.org/plait",
            "title": "Plait - weaving flows",
            "content": "Plait is a durable orchestrator.",
            "engine": "duckduckgo",
            "parsed_url": ["https", "example.org", "/plait", "", "", ""],
            "template": "default.html",
            "engines": ["duckduckgo", "brave"],
            "positions": [1, 2],
            "score": 2.5,
            "category": "general",
        },
        {
            "url": "https://example.com/braid",
            "title": "Braids",
            "content": "",
            "engine": "brave",
            "parsed_url": ["https", "example.com", "/braid", "", "", ""],
            "template": "default.html",
            "engines": ["brave"],
            "positions": [2],
            "score": 0.5,
            "category": "general",
        },
    ],
    "answers": [],
    "corrections": [],
    "infoboxes": [],
    "suggestions": ["plait hair"],
    "unresponsive_engines": [],
}

TAVILY = {
    "query": "who maintains plait",
    "follow_up_questions": None,
    "answer": "The plait team.",
    "images": [],
    "results": [
        {
            "title": "About plait",
            "url": "https://example.org/about",
            "content": "Plait is maintained by the plait team.",
            "score": 0.98,
            "raw_content": None,
        }
    ],
    "response_time": 1.09,
}

DUCKDUCKGO_HTML = """<!DOCTYPE html>
<html><head><title>python at DuckDuckGo</title></head><body>
<div class="serp__results"><div id="links" class="results">
<div class="result results_links results_links_deep result--ad ">
  <div class="links_main links_deep result__body">
    <h2 class="result__title"><a rel="nofollow" class="result__a" href="https://duckduckgo.com/y.js?ad_domain=ads.example">Buy Python</a></h2>
    <a class="result__snippet" href="https://duckduckgo.com/y.js">An ad.</a>
  </div>
</div>
<div class="result results_links results_links_deep web-result ">
  <div class="links_main links_deep result__body">
    <h2 class="result__title">
      <a rel="nofollow" class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fwww.python.org%2F&amp;rut=0f1e">Welcome to <b>Python</b>.org</a>
    </h2>
    <div class="result__extras"><div class="result__extras__url">
      <a class="result__url" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fwww.python.org%2F">www.python.org</a>
    </div></div>
    <a class="result__snippet" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fwww.python.org%2F">The official home of the <b>Python</b> Programming Language</a>
    <div class="clear"></div>
  </div>
</div>
<div class="result results_links results_links_deep web-result ">
  <div class="links_main links_deep result__body">
    <h2 class="result__title">
      <a rel="nofollow" class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fen.wikipedia.org%2Fwiki%2FPython_(programming_language)&amp;rut=aa">Python (programming language) - Wikipedia</a>
    </h2>
    <a class="result__snippet" href="#">Python is a high-level, general-purpose programming language.</a>
  </div>
</div>
</div></div></body></html>"""

WIKIPEDIA = {
    "batchcomplete": True,
    "continue": {"gsroffset": 2, "continue": "gsroffset||"},
    "query": {
        "pages": [
            {
                "pageid": 46332325,
                "ns": 0,
                "title": "Python (genus)",
                "index": 2,
                "contentmodel": "wikitext",
                "pagelanguage": "en",
                "fullurl": "https://en.wikipedia.org/wiki/Python_(genus)",
                "canonicalurl": "https://en.wikipedia.org/wiki/Python_(genus)",
                "extract": "Python is a genus of constricting snakes.",
            },
            {
                "pageid": 23862,
                "ns": 0,
                "title": "Python (programming language)",
                "index": 1,
                "contentmodel": "wikitext",
                "pagelanguage": "en",
                "fullurl": "https://en.wikipedia.org/wiki/Python_(programming_language)",
                "canonicalurl": "https://en.wikipedia.org/wiki/Python_(programming_language)",
                "extract": "Python is a high-level, general-purpose programming language.",
            },
        ]
    },
}

ARXIV = """<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <link href="http://arxiv.org/api/query?search_query%3Dall%3Aelectron%26id_list%3D%26start%3D0%26max_results%3D1" rel="self" type="application/atom+xml"/>
  <title type="html">ArXiv Query: search_query=all:electron&amp;id_list=&amp;start=0&amp;max_results=1</title>
  <id>http://arxiv.org/api/cHxbiOdZaP56ODnBPIenZhzg5f8</id>
  <updated>2007-10-08T00:00:00-04:00</updated>
  <opensearch:totalResults xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">1000</opensearch:totalResults>
  <opensearch:startIndex xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">0</opensearch:startIndex>
  <opensearch:itemsPerPage xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">1</opensearch:itemsPerPage>
  <entry>
    <id>http://arxiv.org/abs/hep-ex/0307015v1</id>
    <published>2003-07-07T13:46:39-04:00</published>
    <updated>2003-07-07T13:46:39-04:00</updated>
    <title>Multi-Electron Production at High Transverse Momenta in ep Collisions at
  HERA</title>
    <summary>  Multi-electron production is studied at high electron transverse momentum
in positron- and electron-proton collisions.
</summary>
    <author><name>H1 Collaboration</name></author>
    <author><name>A. Aktas</name></author>
    <arxiv:comment xmlns:arxiv="http://arxiv.org/schemas/atom">23 pages, 8 figures and 4 tables</arxiv:comment>
    <arxiv:journal_ref xmlns:arxiv="http://arxiv.org/schemas/atom">Eur.Phys.J. C31 (2003) 17-29</arxiv:journal_ref>
    <link href="http://arxiv.org/abs/hep-ex/0307015v1" rel="alternate" type="text/html"/>
    <link title="pdf" href="http://arxiv.org/pdf/hep-ex/0307015v1" rel="related" type="application/pdf"/>
    <arxiv:primary_category xmlns:arxiv="http://arxiv.org/schemas/atom" term="hep-ex" scheme="http://arxiv.org/schemas/atom"/>
    <category term="hep-ex" scheme="http://arxiv.org/schemas/atom"/>
  </entry>
</feed>"""

ARXIV_ERROR = """<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <title type="html">ArXiv Query: search_query=&amp;id_list=1234.12345</title>
  <id>http://arxiv.org/api/kvuntZ8c9a4Eq5CF7KY03nMug+Q</id>
  <updated>2007-10-12T00:00:00-04:00</updated>
  <entry>
    <id>http://arxiv.org/api/errors#incorrect_id_format_for_1234.12345</id>
    <title>Error</title>
    <summary>incorrect id format for 1234.12345</summary>
    <updated>2007-10-12T00:00:00-04:00</updated>
    <link href="http://arxiv.org/api/errors#incorrect_id_format_for_1234.12345" rel="alternate" type="text/html"/>
    <author><name>arXiv api core</name></author>
  </entry>
</feed>"""


class Services:
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
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                services.requests.append(
                    {"method": method, "path": parts.path, "query": query, "body": body,
                     "headers": dict(self.headers.items())}
                )  # fmt: skip
                path = parts.path
                if path == "/searx/search":
                    if query.get("format") != "json":
                        return self._reply(403, "Forbidden", "text/html")
                    return self._reply(200, json.dumps(SEARXNG), "application/json")
                if path == "/tavily/search" and method == "POST":
                    if self.headers.get("Authorization") != "Bearer tvly-test":
                        return self._reply(
                            401, json.dumps({"detail": {"error": "Unauthorized"}}), "application/json"
                        )
                    return self._reply(200, json.dumps(TAVILY), "application/json")
                if path == "/ddg/html/":
                    return self._reply(200, DUCKDUCKGO_HTML, "text/html; charset=UTF-8")
                if path == "/wiki/w/api.php":
                    return self._reply(200, json.dumps(WIKIPEDIA), "application/json; charset=utf-8")
                if path == "/arxiv/api/query":
                    feed = ARXIV_ERROR if "1234.12345" in query.get("search_query", "") else ARXIV
                    return self._reply(200, feed, "application/atom+xml; charset=utf-8")
                if path == "/echo":
                    return self._reply(
                        200,
                        json.dumps({"method": method, "query": query, "body": body}),
                        "application/json",
                    )
                if path == "/page":
                    return self._reply(200, "<html><body><h1>Hi</h1><p>there</p><script>x()</script></body></html>",
                                       "text/html")  # fmt: skip
                return self._reply(404, "not found", "text/plain")

            def do_GET(self) -> None:  # noqa: N802
                self._handle("GET")

            def do_POST(self) -> None:  # noqa: N802
                self._handle("POST")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Services:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


class ToolCtx:
    """A minimal ToolCallContext: secrets from a dict."""

    def __init__(self, secrets: dict[str, str] | None = None) -> None:
        self.run_id = "run"
        self.node_id = "node"
        self.secrets = secrets or {}

    def secret(self, name: str) -> str | None:
        return self.secrets.get(name)
