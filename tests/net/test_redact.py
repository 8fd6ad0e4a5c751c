"""`plait.net.redact`: masking secret values and URL credentials, the log filter, and which
headers a cross-origin redirect drops."""

from __future__ import annotations

import json
import logging
from urllib.parse import quote, quote_plus

import httpx
import pytest

from plait.net.redact import (
    MASK,
    NO_SECRETS,
    LogMasking,
    SecretLogFilter,
    SecretMask,
    is_credential_header,
    mask_url_credentials,
    strip_cross_origin_credentials,
)

SECRET = "s3cr3t-Value/with+odd&chars é"


def test_values_are_masked_in_every_serialised_form() -> None:
    mask = SecretMask([SECRET])
    forms = [
        SECRET,
        json.dumps(SECRET)[1:-1],
        json.dumps(SECRET, ensure_ascii=False)[1:-1],
        json.dumps(json.dumps(SECRET)[1:-1])[1:-1],  # JSON inside a JSON string
        quote(SECRET, safe=""),
        quote_plus(SECRET),
        str(httpx.URL("http://h/p").copy_merge_params({"q": SECRET}).query, "ascii")[2:],
    ]
    for form in forms:
        masked = mask.text(f"before {form} after")
        assert masked == f"before {MASK} after", form


def test_nested_data_is_masked_and_unchanged_parts_are_shared() -> None:
    mask = SecretMask(["tok-123456"])
    clean = {"a": [1, "x", {"b": "y"}], "c": ("z",)}
    assert mask.value(clean) is clean
    data = {"list": ["tok-123456", 2], "deep": {"url": "http://h/?x=tok-123456"}, "same": clean,
            "tok-123456": "key"}  # fmt: skip
    out = mask.value(data)
    assert out == {"list": [MASK, 2], "deep": {"url": f"http://h/?x={MASK}"}, "same": clean, MASK: "key"}
    assert out["same"] is clean
    assert data["list"][0] == "tok-123456"  # the input is never changed


def test_tiny_values_are_not_masked_and_longer_values_win() -> None:
    mask = SecretMask(["abc", "", None, "abcd", "abcdef", 123456])
    assert mask.secrets == {"abcd", "abcdef", "123456"}
    assert mask.text("abc abcdef abcd 123456") == f"abc {MASK} {MASK} {MASK}"
    assert not SecretMask(["ab"]) and SecretMask(["abcd"])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("https://user:pw@host/p", f"https://{MASK}@host/p"),
        ("git clone https://ghp_token@github.com/x", f"git clone https://{MASK}@github.com/x"),
        ("https://h/p?api_key=K1&q=2", f"https://h/p?api_key={MASK}&q=2"),
        ("https://h/p?q=1&apikey=K1#f", f"https://h/p?q=1&apikey={MASK}#f"),
        (
            "/p?access_token=a.b.c&key=zz&sig=s&X-Amz-Signature=x",
            f"/p?access_token={MASK}&key={MASK}&sig={MASK}&X-Amz-Signature={MASK}",
        ),
        ("/p?password=pw;client_secret=cs", f"/p?password={MASK};client_secret={MASK}"),
        ("/search?keyword=python&monkey=1&q=token", "/search?keyword=python&monkey=1&q=token"),
        ("mail bob@example.com", "mail bob@example.com"),
        ("https://h/p?api_key={{env.KEY}}&t=${TOKEN}", "https://h/p?api_key={{env.KEY}}&t=${TOKEN}"),
        ("https://{{env.USER}}:{{env.PW}}@h/", "https://{{env.USER}}:{{env.PW}}@h/"),
    ],
)
def test_url_credentials(text: str, expected: str) -> None:
    assert mask_url_credentials(text) == expected
    assert NO_SECRETS.text(text) == expected


def test_text_without_anything_to_mask_is_the_same_object() -> None:
    text = "plain text with = and @ signs"
    assert NO_SECRETS.text(text) is text
    assert SecretMask(["zzzz-secret"]).text(text) is text


def test_union_builds_a_new_mask_only_when_something_is_new() -> None:
    mask = SecretMask(["one-secret"])
    assert mask.union(["one-secret", "ab"]) is mask
    both = mask.union(["two-secret"])
    assert both.secrets == {"one-secret", "two-secret"}


def test_log_filter_masks_message_arguments_and_traceback() -> None:
    mask = SecretMask(["log-secret-1"])
    flt = SecretLogFilter(lambda: mask)
    try:
        raise ValueError("failed with log-secret-1")
    except ValueError as exc:
        record = logging.LogRecord(
            "x", logging.ERROR, __file__, 1, "key %s in %r", ("log-secret-1", exc), None
        )
        record.exc_info = (type(exc), exc, exc.__traceback__)
    assert flt.filter(record)
    text = logging.Formatter().format(record)
    assert "log-secret-1" not in text
    assert MASK in text and "ValueError" in text


def test_log_masking_masks_records_of_every_logger(caplog: pytest.LogCaptureFixture) -> None:
    masking = LogMasking()
    previous = logging.getLogRecordFactory()
    try:
        masking.install()
        masking.install()  # idempotent
        masking.add(SecretMask(["added-later-1"]))
        with caplog.at_level(logging.INFO):
            logging.getLogger("plait.some.child").info("GET /x?api_key=%s uses added-later-1", "abc")
            logging.getLogger("uvicorn.access").info('%s "%s %s"', "1.2.3.4", "GET", "/ws?token=zzz")
        assert "added-later-1" not in caplog.text and "abc" not in caplog.text and "zzz" not in caplog.text
        assert caplog.records[1].args == ("1.2.3.4", "GET", f"/ws?token={MASK}")  # arguments stay arguments
    finally:
        logging.setLogRecordFactory(previous)


@pytest.mark.parametrize(
    ("name", "credential"),
    [
        ("X-Api-Key", True), ("api-key", True), ("Authorization", True), ("Cookie", True),
        ("Proxy-Authorization", True), ("X-Auth-Token", True), ("X-Goog-Api-Key", True),
        ("Private-Token", True), ("X-Session-Id", True), ("Content-Type", False), ("Accept", False),
        ("User-Agent", False), ("X-Request-Id", False), ("Sec-Fetch-Site", False),
    ],
)  # fmt: skip
def test_credential_header_names(name: str, credential: bool) -> None:
    assert is_credential_header(name) is credential


@pytest.mark.parametrize(
    ("first", "then", "kept"),
    [
        ("https://a.example/x", "https://a.example/y", True),
        ("http://a.example/x", "https://a.example/y", True),  # upgrade of the same host
        ("https://a.example/x", "http://a.example/y", False),  # downgrade
        ("https://a.example/x", "https://b.example/y", False),
        ("https://a.example/x", "https://a.example:8443/y", False),
    ],
)
def test_cross_origin_redirects_drop_credentials(first: str, then: str, kept: bool) -> None:
    previous = httpx.Request("GET", first, headers={"X-Api-Key": "k", "Accept": "a"})
    following = httpx.Request("GET", then, headers={"X-Api-Key": "k", "Accept": "a"})
    strip_cross_origin_credentials(previous, following)
    assert ("x-api-key" in following.headers) is kept
    assert following.headers["accept"] == "a"
