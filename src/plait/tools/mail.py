"""The `email` tool: send one message over SMTP, configured by stored variables.

Why by variable names: the SMTP password must never sit in a flow document or a model's
arguments, and one deployment's server should serve every flow. The tool reads, per call,
`SMTP_HOST`, `SMTP_PORT` (default 587, or 465 for `ssl`), `SMTP_USER`, `SMTP_PASSWORD`,
`SMTP_FROM` (default: the user) and `SMTP_SECURITY`: `starttls` (default: upgrade, and refuse to
log in without it), `ssl` (implicit TLS), `none` (plain; only for a local relay). A factory argument
`prefix` reads another set (`prefix="ALERTS_"` -> `ALERTS_SMTP_HOST`...).

The host passes the SSRF guard like any outbound connection (`PLAIT_HTTP_ALLOW` opts an internal
relay in) and the connection goes to the checked address, TLS still verifying the host name.
Content is markdown or plain text: the message carries it as text/plain and as HTML.
"""

from __future__ import annotations

import asyncio
import smtplib
import socket
import ssl
from email.message import EmailMessage
from email.utils import formataddr, getaddresses, make_msgid
from typing import Any

from markdown_it import MarkdownIt

from plait.net.guard import BlockedURLError, allowlist_from_env, aresolve_checked
from plait.tools.base import Tool, ToolCallContext, ToolError

SECURITY_MODES = ("starttls", "ssl", "none")
MAX_RECIPIENTS = 50
MAX_CONTENT_CHARS = 200_000
TIMEOUT_S = 30.0


class _PinnedSMTP(smtplib.SMTP):
    """SMTP connecting to an address checked beforehand (the host name stays for TLS)."""

    pinned: str = ""

    def _get_socket(self, host: str, port: int, timeout: float) -> socket.socket:
        sock: socket.socket = super()._get_socket(self.pinned or host, port, timeout)  # type: ignore[misc]
        return sock


class _PinnedSMTPSSL(smtplib.SMTP_SSL):
    pinned: str = ""

    def _get_socket(self, host: str, port: int, timeout: float) -> socket.socket:
        sock: socket.socket = super()._get_socket(self.pinned or host, port, timeout)  # type: ignore[misc]
        return sock


def _addresses(value: Any, field: str) -> list[str]:
    if value in (None, "", []):
        return []
    items = value if isinstance(value, list) else [value]
    if not all(isinstance(v, str) for v in items):
        raise ToolError(f"{field} must be an address or a list of addresses")
    out = []
    for text in items:
        if "\r" in text or "\n" in text:
            raise ToolError(f"{field} contains a line break")
        for name, addr in getaddresses([text]):
            if not addr:
                continue
            local, _, domain = addr.rpartition("@")
            if not local or "." not in domain:
                raise ToolError(f"{field}: {addr!r} is not an email address", hint="use name@example.com")
            out.append(formataddr((name, addr)) if name else addr)
    return out


def _html(markdown: str) -> str:
    body = MarkdownIt("commonmark", {"html": False}).render(markdown)
    return f'<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>{body}</body></html>'


def email_tool(*, prefix: str = "") -> Tool:
    """The `email` tool reading `{prefix}SMTP_HOST`... (see the module docstring)."""

    def setting(ctx: ToolCallContext, name: str) -> str | None:
        value = ctx.secret(prefix + name) if ctx is not None else None
        return value or None

    async def call(args: dict[str, Any], ctx: ToolCallContext) -> Any:
        to = _addresses(args.get("to"), "to")
        if not to:
            raise ToolError("to is required: the recipient's email address")
        cc = _addresses(args.get("cc"), "cc")
        bcc = _addresses(args.get("bcc"), "bcc")
        if len(to) + len(cc) + len(bcc) > MAX_RECIPIENTS:
            raise ToolError(f"too many recipients (at most {MAX_RECIPIENTS})")
        subject = str(args.get("subject") or "(no subject)")
        if "\r" in subject or "\n" in subject:
            raise ToolError("subject must be one line")
        content = args.get("content")
        content = "" if content is None else content if isinstance(content, str) else str(content)
        if len(content) > MAX_CONTENT_CHARS:
            raise ToolError(f"content is too long ({len(content)} characters, at most {MAX_CONTENT_CHARS})")

        host = setting(ctx, "SMTP_HOST")
        if not host:
            raise ToolError(
                "no SMTP server configured",
                hint=f"store the variables {prefix}SMTP_HOST, {prefix}SMTP_PORT, {prefix}SMTP_USER, "
                f"{prefix}SMTP_PASSWORD and {prefix}SMTP_FROM (Settings > Variables)",
                fatal=True,
            )
        security = (setting(ctx, "SMTP_SECURITY") or "starttls").lower()
        if security not in SECURITY_MODES:
            raise ToolError(
                f"unknown {prefix}SMTP_SECURITY {security!r}", hint="use starttls, ssl or none", fatal=True
            )
        port_text = setting(ctx, "SMTP_PORT") or ("465" if security == "ssl" else "587")
        try:
            port = int(port_text)
        except ValueError as exc:
            raise ToolError(f"{prefix}SMTP_PORT must be a number, got {port_text!r}", fatal=True) from exc
        user = setting(ctx, "SMTP_USER")
        password = setting(ctx, "SMTP_PASSWORD")
        sender = setting(ctx, "SMTP_FROM") or user
        if not sender:
            raise ToolError("no sender address", hint=f"store the variable {prefix}SMTP_FROM", fatal=True)
        sender_list = _addresses(sender, f"{prefix}SMTP_FROM")
        try:
            addresses = await aresolve_checked(host, port, allowlist_from_env())
        except BlockedURLError as exc:
            raise ToolError(f"SMTP server refused: {exc.message}", hint=exc.hint, fatal=True) from exc
        except OSError as exc:
            raise ToolError(f"SMTP server {host!r} does not resolve: {exc}", fatal=True) from exc

        message = EmailMessage()
        message["From"] = sender_list[0]
        message["To"] = ", ".join(to)
        if cc:
            message["Cc"] = ", ".join(cc)
        message["Subject"] = subject
        message["Message-ID"] = make_msgid(domain=sender_list[0].rpartition("@")[2].rstrip(">") or None)
        message.set_content(content or " ")
        message.add_alternative(_html(content), subtype="html")
        recipients = [a for _, a in getaddresses(to + cc + bcc)]

        def send() -> None:
            context = ssl.create_default_context()
            client: smtplib.SMTP
            if security == "ssl":
                client = _PinnedSMTPSSL(timeout=TIMEOUT_S, context=context)
            else:
                client = _PinnedSMTP(timeout=TIMEOUT_S)
            client.pinned = str(addresses[0])
            with client:
                client.connect(host, port)
                client.ehlo()
                if security == "starttls":
                    if not client.has_extn("starttls"):
                        raise ToolError(
                            f"the SMTP server {host}:{port} does not offer STARTTLS",
                            hint=f"set {prefix}SMTP_SECURITY to ssl (port 465), or to none for a local relay",
                            fatal=True,
                        )
                    client.starttls(context=context)
                    client.ehlo()
                if user and password:
                    client.login(user, password)
                client.send_message(message, from_addr=sender_list[0].rpartition("<")[2].rstrip(">"),
                                    to_addrs=recipients)  # fmt: skip

        try:
            await asyncio.wait_for(asyncio.to_thread(send), TIMEOUT_S + 5)
        except smtplib.SMTPAuthenticationError as exc:
            raise ToolError(
                f"the SMTP server refused the login ({exc.smtp_code})",
                hint=f"check {prefix}SMTP_USER and {prefix}SMTP_PASSWORD",
                fatal=True,
            ) from exc
        except smtplib.SMTPRecipientsRefused as exc:
            raise ToolError(f"the SMTP server refused the recipients: {', '.join(exc.recipients)}") from exc
        except (smtplib.SMTPException, OSError, TimeoutError) as exc:
            raise ToolError(
                f"sending the email through {host}:{port} failed: {type(exc).__name__}: {exc}"
            ) from exc
        return {"success": True, "message_id": message["Message-ID"], "recipients": recipients}

    return Tool(
        name="email",
        description="Send an email (markdown or plain text content) to one or more recipients.",
        parameters={
            "type": "object",
            "properties": {
                "to": {"type": "string", "description": "Recipient address(es), comma-separated."},
                "cc": {"type": "string", "description": "Copy to, comma-separated."},
                "bcc": {"type": "string", "description": "Blind copy to, comma-separated."},
                "subject": {"type": "string"},
                "content": {"type": "string", "description": "The message, markdown or plain text."},
            },
            "required": ["to", "subject", "content"],
        },
        call=call,
    )
