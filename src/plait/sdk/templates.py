"""Built-in component templates: trusted code shipped with plait.

A component whose source is identical to the template of the same class name (after whitespace
normalisation, see `plait.sandbox.scan.same_code`) is exempt from the AST security scan: built-ins
may legitimately use constructs the scan refuses in user code (FetchText reads an optional proxy
setting from the environment). They are still loaded and introspected in the sandbox.
"""

from __future__ import annotations

UPPERCASE_TEXT = """\
from plait.sdk import Component, Input, Output


class UppercaseText(Component):
    display_name = "Uppercase text"
    description = "Turns a text into upper case and counts its characters."
    inputs = [Input("text", "string", "The text to transform")]
    outputs = [Output("text", "string"), Output("length", "integer")]

    def run(self, text):
        return {"text": text.upper(), "length": len(text)}
"""

FETCH_TEXT = """\
import os

import httpx

from plait.sdk import Component, Input, Output


class FetchText(Component):
    display_name = "Fetch text"
    description = "GETs a URL and returns the response body as text (needs network: true)."
    inputs = [
        Input("url", "string", "The URL to fetch"),
        Input("timeout_s", "number", "Request timeout in seconds", required=False, default=10),
    ]
    outputs = [Output("status", "integer"), Output("text", "string")]

    def run(self, url, timeout_s=10):
        proxy = os.environ.get("HTTPS_PROXY") or None
        with httpx.Client(proxy=proxy, timeout=timeout_s, follow_redirects=True) as client:
            response = client.get(url)
        return {"status": response.status_code, "text": response.text}
"""

BUILTIN_TEMPLATES: dict[str, str] = {
    "UppercaseText": UPPERCASE_TEXT,
    "FetchText": FETCH_TEXT,
}
