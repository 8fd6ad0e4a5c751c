"""Export scrubbing (`plait.service.scrub`): a flow document with literal secrets typed into it
leaves without any of them, by field name, by value (stored secrets, URL credentials) and by
pattern (key formats, PEM blocks, random literals assigned to credential-like names in code);
references (`{{env.X}}`, `${NAME}`) and ordinary text are kept."""

from __future__ import annotations

import json
from typing import Any

import yaml

from plait.net.redact import SecretMask
from plait.service.scrub import entropy, scrub_secrets, scrub_text

PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
    "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n-----END RSA PRIVATE KEY-----"
)
STORED = "stored-Secret-9f8e7d6c5b"  # a stored secret variable's value, typed into the flow literally

# Every literal secret of the document below (17), each of which must be gone after export.
SECRETS = [
    "sk-proj-4fJ8kL2mN9pQ3rS7tU1vW5xY0zA6bC8d",  # OpenAI key in a code node
    "ghp_16C7e42F292c6912E7710c838347Ae178B4a",  # GitHub token in a prompt
    "AKIAIOSFODNN7EXAMPLE",  # AWS access key id in code
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",  # AWS secret assigned in code
    "xoxb-2048-4096-Zm9vYmFyYmF6cXV4",  # Slack bot token in a header
    "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",  # Google API key in a URL path
    "hunter2-pw",  # URL user-info password
    "q9W8e7R6t5Y4u3I2",  # ?apikey= in a URL
    "tok_Zx81Kq02Lm",  # &access_token= in a URL
    PEM,  # a private key block in a field named private_key
    "Pr1vate-Key-Literal-77",  # a `private_key` field
    "Sup3r-Secret-Pass",  # a `password` field
    "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "sk_live_51HcTqLKb7mZ2aQ9xW3eR4tY",  # Stripe key in an MCP env value
    "glpat-xK3mP9qR2sT5vW8yZ1aB",  # GitLab token in an MCP header
    STORED,  # by value: a stored secret typed into a message
    "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",  # Hugging Face token in a description
]


def leaky_flow() -> dict[str, Any]:
    return {
        "schema": "plait/flow@1",
        "id": "leaky",
        "description": "Uses hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789 for the model; see the keyword list.",
        "settings": {
            "max_tokens": 512,
            "mcp_servers": {
                "pay": {"command": "pay-mcp", "env": {"STRIPE": "sk_live_51HcTqLKb7mZ2aQ9xW3eR4tY",
                                                      "OTHER": "${OTHER_KEY}"}},
                "git": {"url": "https://gitlab.example/mcp", "headers": {"X-Gitlab": "glpat-xK3mP9qR2sT5vW8yZ1aB",
                                                                       "Authorization": "Bearer ${GL_TOKEN}"}},
            },
        },
        "nodes": [
            {"id": "code", "type": "code", "config": {"code": (
                "import boto3\n"
                "OPENAI_API_KEY = 'sk-proj-4fJ8kL2mN9pQ3rS7tU1vW5xY0zA6bC8d'\n"
                "aws_access_key_id = \"AKIAIOSFODNN7EXAMPLE\"\n"
                "aws_secret_access_key = \"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\"\n"
                "token_name = 'placeholder'\n"
                "def main():\n    return len(OPENAI_API_KEY)\n")}},
            {"id": "ask", "type": "llm", "config": {
                "prompt": "Use ghp_16C7e42F292c6912E7710c838347Ae178B4a to read {{inputs.repo}}", "max_tokens": 100}},
            {"id": "call", "type": "http", "config": {
                "url": "https://bob:hunter2-pw@api.example.com/v1/AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"
                       "?apikey=q9W8e7R6t5Y4u3I2&page=2&access_token=tok_Zx81Kq02Lm&keyword=python",
                "headers": {"X-Slack": "xoxb-2048-4096-Zm9vYmFyYmF6cXV4", "X-Env": "{{env.API_KEY}}",
                            "Authorization": "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
                                             "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"}}},
            {"id": "keys", "type": "output", "config": {"value": {
                "private_key": "Pr1vate-Key-Literal-77", "pem": PEM, "password": "Sup3r-Secret-Pass",
                "api_key": "{{env.API_KEY}}", "note": "ordinary text"}}},
            {"id": "msg", "type": "message", "config": {"text": f"Your code is {STORED}."}},
        ],
        "edges": [],
    }  # fmt: skip


def test_every_literal_secret_is_scrubbed_and_references_are_kept() -> None:
    doc = leaky_flow()
    raw = json.dumps(doc)
    assert len(SECRETS) >= 16
    for secret in SECRETS:  # each really is in the document
        assert secret.split("\n")[0] in raw or json.dumps(secret)[1:-1] in raw, secret
    clean = scrub_secrets(doc, SecretMask([STORED]))
    for text in (json.dumps(clean), yaml.safe_dump(clean)):
        for secret in SECRETS:
            for part in secret.replace("Bearer ", "").split("\n"):
                assert part not in text, part
    # What is not a secret survives: references, ordinary values, the shape of URLs and code.
    assert clean["settings"]["max_tokens"] == 512
    assert clean["settings"]["mcp_servers"]["pay"]["env"]["OTHER"] == "${OTHER_KEY}"
    assert clean["settings"]["mcp_servers"]["git"]["headers"]["Authorization"] == "Bearer ${GL_TOKEN}"
    call = clean["nodes"][2]["config"]
    assert call["url"].startswith("https://********@api.example.com/v1/")
    assert "page=2" in call["url"] and "keyword=python" in call["url"]
    assert call["headers"]["X-Env"] == "{{env.API_KEY}}"
    assert clean["nodes"][3]["config"]["value"]["api_key"] == "{{env.API_KEY}}"
    assert clean["nodes"][3]["config"]["value"]["note"] == "ordinary text"
    assert "{{inputs.repo}}" in clean["nodes"][1]["config"]["prompt"]
    code = clean["nodes"][0]["config"]["code"]
    assert "def main():" in code and "token_name = 'placeholder'" in code
    assert clean["nodes"][4]["config"]["text"] == "Your code is ********."
    assert doc == leaky_flow()  # the stored document is not changed


def test_plain_documents_come_back_unchanged() -> None:
    doc = {
        "id": "plain",
        "nodes": [
            {"id": "a", "type": "http", "config": {"url": "https://example.com/search?q=keys&limit=5"}},
            {"id": "b", "type": "code", "config": {"code": "def main(key):\n    return {'key': key}\n"}},
            {"id": "c", "type": "message", "config": {"text": "Hello {{inputs.name}}, see docs@example.com"}},
        ],
    }
    assert scrub_secrets(doc) == doc


def test_random_literals_need_a_credential_like_name_and_entropy() -> None:
    assert scrub_text('session_token = "aB3dE6gH9jK2mN5pQ8sT"') == 'session_token = "********"'
    assert scrub_text('title = "aB3dE6gH9jK2mN5pQ8sT"') == 'title = "aB3dE6gH9jK2mN5pQ8sT"'
    assert scrub_text('api_key = "xxxxxxxxxxxxxxxxxxxx"') == 'api_key = "xxxxxxxxxxxxxxxxxxxx"'
    assert entropy("aaaa") == 0.0 and entropy("abcd") == 2.0
