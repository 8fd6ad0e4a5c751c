"""The `email` tool against a real SMTP server (aiosmtpd) on 127.0.0.1."""

from __future__ import annotations

import email
import email.policy
import socket

import pytest
from _services import ToolCtx
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult

import plait
from plait.tools import default_tools
from plait.tools.base import ToolError


class Inbox:
    def __init__(self) -> None:
        self.messages: list[tuple[str, list[str], email.message.EmailMessage]] = []

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 (aiosmtpd's hook name)
        parsed = email.message_from_bytes(envelope.content, policy=email.policy.default)
        self.messages.append((envelope.mail_from, list(envelope.rcpt_tos), parsed))
        return "250 OK"


def _auth(server, session, envelope, mechanism, auth_data):
    ok = auth_data.login == b"bot@example.com" and auth_data.password == b"s3cret"
    return AuthResult(success=ok, handled=False)  # handled=False: aiosmtpd answers 535 itself


@pytest.fixture
def smtp(monkeypatch):
    monkeypatch.setenv("PLAIT_HTTP_ALLOW", "127.0.0.1")
    inbox = Inbox()
    with socket.socket() as probe:  # a free port (aiosmtpd's start() connects to the one it is given)
        probe.bind(("127.0.0.1", 0))
        inbox.port = probe.getsockname()[1]
    controller = Controller(
        inbox,
        hostname="127.0.0.1",
        port=inbox.port,
        authenticator=_auth,
        auth_require_tls=False,
    )
    controller.start()
    yield inbox
    controller.stop()


def settings(inbox, **extra) -> dict[str, str]:
    return {
        "SMTP_HOST": "127.0.0.1",
        "SMTP_PORT": str(inbox.port),
        "SMTP_SECURITY": "none",
        "SMTP_FROM": "Plait Bot <bot@example.com>",
        **extra,
    }


async def test_sends_markdown_as_text_and_html_with_login(smtp):
    ctx = ToolCtx(settings(smtp, SMTP_USER="bot@example.com", SMTP_PASSWORD="s3cret"))
    out = await default_tools().get("email").call(
        {"to": "ann@example.com, Bob <bob@example.com>", "cc": "carol@example.com", "bcc": "dan@example.com",
         "subject": "Weekly report", "content": "# Report\n\nAll **green**."},
        ctx,
    )  # fmt: skip
    assert out["success"] is True
    assert out["recipients"] == ["ann@example.com", "bob@example.com", "carol@example.com", "dan@example.com"]
    mail_from, rcpts, msg = smtp.messages[-1]
    assert mail_from == "bot@example.com"
    assert rcpts == out["recipients"]
    assert msg["Subject"] == "Weekly report"
    assert msg["To"] == "ann@example.com, Bob <bob@example.com>"
    assert msg["Cc"] == "carol@example.com" and msg["Bcc"] is None
    assert (
        msg.get_body(("plain",)).get_content().replace("\r\n", "\n").strip() == "# Report\n\nAll **green**."
    )
    assert "<h1>Report</h1>" in msg.get_body(("html",)).get_content()
    assert "<strong>green</strong>" in msg.get_body(("html",)).get_content()


async def test_wrong_password_and_missing_settings_are_clear(smtp):
    tool = default_tools().get("email")
    args = {"to": "ann@example.com", "subject": "x", "content": "y"}
    with pytest.raises(ToolError, match="refused the login") as exc:
        await tool.call(args, ToolCtx(settings(smtp, SMTP_USER="bot@example.com", SMTP_PASSWORD="wrong")))
    assert exc.value.fatal
    with pytest.raises(ToolError, match="no SMTP server configured") as exc:
        await tool.call(args, ToolCtx())
    assert "SMTP_HOST" in str(exc.value)
    with pytest.raises(ToolError, match="does not offer STARTTLS"):  # never log in in the clear by default
        await tool.call(args, ToolCtx({**settings(smtp), "SMTP_SECURITY": "starttls"}))
    with pytest.raises(ToolError, match="not an email address"):
        await tool.call({**args, "to": "nobody"}, ToolCtx(settings(smtp)))
    with pytest.raises(ToolError, match="one line"):
        await tool.call({**args, "subject": "a\r\nBcc: evil@example.com"}, ToolCtx(settings(smtp)))


async def test_private_smtp_hosts_pass_the_ssrf_guard(smtp, monkeypatch):
    monkeypatch.delenv("PLAIT_HTTP_ALLOW")
    with pytest.raises(ToolError, match="SMTP server refused"):
        await (
            default_tools()
            .get("email")
            .call({"to": "ann@example.com", "subject": "x", "content": "y"}, ToolCtx(settings(smtp)))
        )
    assert smtp.messages == []


async def test_email_as_a_tool_node_in_a_flow(smtp):
    doc = {
        "schema": "plait/flow@1",
        "id": "mailer",
        "nodes": [
            {
                "id": "send",
                "type": "tool",
                "config": {
                    "tool": "email",
                    "args": {"to": "{{inputs.to}}", "subject": "Hello", "content": "Hi {{inputs.name}}"},
                },
            }
        ],
        "edges": [],
    }
    result = await plait.run(doc, {"to": "ann@example.com", "name": "Ann"}, env=settings(smtp))
    assert result.status == "completed", result.error
    assert result.nodes["send"].output["success"] is True
    assert smtp.messages[-1][2].get_body(("plain",)).get_content().strip() == "Hi Ann"
