"""Users in the browser (issue 11's acceptance): sign in through the link `plait serve` prints and
with a password, create an API key (shown once), an admin creates a second user who cannot see the
first user's flow until it is shared with them (then read-only), disabling signs them out.

These tests sign in and out, so they run against a server of their own (its sign-in link unused).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from .conftest import LiveServer, new_page, require_browser_setup, screenshot
from .test_canvas import linear_doc

BO = {"email": "bo@example.com", "name": "Bo", "password": "correct horse 7"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    require_browser_setup()
    s = LiveServer(Path(tmp_path_factory.mktemp("web-auth")))
    yield s
    s.stop()


def wait_library(page: Any) -> None:
    page.get_by_test_id("library").wait_for()
    assert page.get_by_test_id("login-page").count() == 0


def test_users_keys_and_isolation_end_to_end(browser: Any, server: LiveServer) -> None:
    # Before signing in: the login page, and never a glimpse of the library.
    admin, admin_errors = new_page(browser, server)
    admin.add_init_script(
        """new MutationObserver(() => {
             if (document.querySelector('[data-testid=library]')) window.__sawLibrary = true;
           }).observe(document, {subtree: true, childList: true});"""
    )
    admin.goto("/")
    admin.get_by_test_id("login-page").wait_for()
    assert not admin.evaluate("() => window.__sawLibrary === true")
    screenshot(admin, "login.png")

    # The sign-in link: the library, signed in as the local admin; the link works once.
    admin.goto(server.signin_link)
    wait_library(admin)
    assert admin.url.rstrip("/") == server.url  # the token is gone from the address bar
    assert admin.get_by_test_id("current-role").inner_text() == "admin"
    assert "admin@localhost" in admin.get_by_test_id("current-user").inner_text()
    again, again_errors = new_page(browser, server)
    again.goto(server.signin_link)
    again.get_by_test_id("login-link-notice").wait_for()
    assert "expired or was already used" in again.get_by_test_id("login-link-notice").inner_text()
    again.context.close()

    # The admin's flow (made in the browser: the library's New flow).
    admin.get_by_test_id("new-flow").click()
    admin.get_by_test_id("flow-name-input").fill("Secret plan")
    admin.get_by_test_id("name-dialog-submit").click()
    admin.get_by_test_id("editor").wait_for()
    assert admin.url.endswith("/flows/secret-plan")

    # An API key: shown once, works as x-api-key, listed by its prefix only, revocable.
    admin.get_by_test_id("nav-keys").click()
    admin.get_by_test_id("keys-page").wait_for()
    admin.get_by_test_id("new-key").click()
    admin.get_by_test_id("key-name").fill("ci")
    assert admin.get_by_test_id("scope-read").is_checked()
    assert not admin.get_by_test_id("scope-admin").is_checked()
    admin.get_by_test_id("create-key-submit").click()
    admin.get_by_test_id("key-created").wait_for()
    assert "you will not see this key again" in admin.get_by_test_id("key-created").inner_text()
    key = admin.get_by_test_id("secret-value").input_value()
    assert len(key) >= 20
    screenshot(admin, "api-key-created.png")
    me = httpx.get(f"{server.url}/api/v1/me", headers={"x-api-key": key})
    assert me.status_code == 200 and me.json()["email"] == "admin@localhost"
    assert sorted(me.json()["scopes"]) == ["read", "run", "write"]
    admin.get_by_test_id("key-created-done").click()
    admin.locator('[data-testid^="key-row-"]').first.wait_for()
    assert key not in admin.content()  # never shown again
    admin.locator('[data-testid^="revoke-"]').first.click()
    admin.get_by_test_id("revoke-confirm").click()
    admin.get_by_test_id("keys-empty").wait_for()
    assert httpx.get(f"{server.url}/api/v1/me", headers={"x-api-key": key}).status_code == 401

    # A second user, made by the admin on the Users page.
    admin.get_by_test_id("nav-users").click()
    admin.get_by_test_id("new-user").click()
    admin.get_by_test_id("new-user-email").fill(BO["email"])
    admin.get_by_test_id("new-user-name").fill(BO["name"])
    admin.get_by_test_id("new-user-role").select_option("editor")
    admin.get_by_test_id("new-user-password").fill(BO["password"])
    admin.get_by_test_id("new-user-submit").click()
    admin.get_by_test_id(f"user-row-{BO['email']}").wait_for()
    screenshot(admin, "users.png")

    # Bo signs in with the password (a wrong one first) and sees none of the admin's flows.
    bo, bo_errors = new_page(browser, server)
    bo.goto("/")
    bo.get_by_test_id("login-email").fill(BO["email"])
    bo.get_by_test_id("login-password").fill("not the password")
    bo.get_by_test_id("login-submit").click()
    bo.get_by_test_id("login-error").wait_for()
    assert "Wrong email or password" in bo.get_by_test_id("login-error").inner_text()
    bo.get_by_test_id("login-password").fill(BO["password"])
    bo.get_by_test_id("login-submit").click()
    wait_library(bo)
    bo.get_by_test_id("library-empty").wait_for()
    assert bo.get_by_test_id("flow-row-secret-plan").count() == 0
    assert bo.get_by_test_id("current-role").inner_text() == "editor"
    assert bo.get_by_test_id("nav-users").count() == 0
    bo.goto("/flows/secret-plan")
    bo.get_by_test_id("editor-load-error").wait_for()
    assert "not shared with you" in bo.get_by_test_id("editor-load-error").inner_text()
    bo.goto("/users")  # not linked for an editor; the page says so instead of erroring
    bo.get_by_test_id("users-page").wait_for()
    assert bo.get_by_test_id("users-table").count() == 0

    # The admin shares the flow with Bo as a viewer: Bo sees it, read-only.
    admin.get_by_test_id("nav-library").click()
    admin.get_by_test_id("share-secret-plan").click()
    admin.get_by_test_id("share-who").fill(BO["email"])
    admin.get_by_test_id("share-new-role").select_option("viewer")
    admin.get_by_test_id("share-add").click()
    admin.get_by_test_id(f"share-{BO['email']}").wait_for()
    screenshot(admin, "share.png")
    admin.get_by_test_id("share-close").click()

    bo.goto("/")
    bo.get_by_test_id("flow-row-secret-plan").wait_for()
    assert bo.get_by_test_id("access-secret-plan").inner_text() == "shared with you · viewer"
    assert bo.get_by_test_id("delete-secret-plan").count() == 0
    assert bo.get_by_test_id("share-secret-plan").count() == 0
    bo.get_by_test_id("open-secret-plan").click()
    bo.get_by_test_id("read-only-banner").wait_for()
    assert bo.get_by_test_id("run-button").is_disabled()
    assert bo.get_by_test_id("publish").is_disabled()
    assert bo.get_by_test_id("share-button").count() == 0

    # Disabled: Bo's next request is a 401, which shows the login page (not an error screen).
    admin.get_by_test_id("nav-users").click()
    admin.get_by_test_id(f"user-disable-{BO['email']}").click()
    admin.get_by_test_id("disable-confirm").click()
    admin.get_by_test_id(f"user-status-{BO['email']}").get_by_text("disabled").wait_for()
    bo.get_by_test_id("nav-library").click()
    bo.get_by_test_id("login-page").wait_for()

    # Signing out ends the session: a reload stays on the login page.
    admin.get_by_test_id("sign-out").click()
    admin.get_by_test_id("login-page").wait_for()
    admin.reload()
    admin.get_by_test_id("login-page").wait_for()

    for pg in (admin, bo):
        pg.context.close()
    assert not (admin_errors or again_errors or bo_errors), (admin_errors, again_errors, bo_errors)


def test_flows_of_other_users_stay_hidden_through_the_api_too(server: LiveServer) -> None:
    """What the browser showed, checked at the API: a second user's session lists nothing of the
    first user's and gets 404 for it; a viewer share makes it readable, not writable."""
    server.create_flow(linear_doc("admins-only", 0))
    r = server.api.post(
        "/api/v1/users",
        json={"email": "cy@example.com", "name": "Cy", "role": "editor", "password": "another pw 8"},
    )
    assert r.status_code == 201, r.text
    cy = r.json()
    cookies = {"plait_session": server.login("cy@example.com", "another pw 8")}
    with httpx.Client(base_url=server.url, cookies=cookies, timeout=30) as c:
        assert "admins-only" not in [f["id"] for f in c.get("/api/v1/flows").json()]
        assert c.get("/api/v1/flows/admins-only").status_code == 404
        assert (
            server.api.put(
                f"/api/v1/flows/admins-only/shares/{cy['id']}", json={"role": "viewer"}
            ).status_code
            == 200
        )
        flow = c.get("/api/v1/flows/admins-only")
        assert flow.status_code == 200 and flow.json()["access"] == "viewer"
        assert c.put("/api/v1/flows/admins-only", json={"name": "mine now"}).status_code in (403, 404)


def test_an_api_key_instead_of_a_password(browser: Any, server: LiveServer) -> None:
    """The login page's fallback: a key kept in this browser; signing out forgets it."""
    key = server.api.post("/api/v1/api-keys", json={"name": "browser", "scopes": ["read"]}).json()["key"]
    page, errors = new_page(browser, server)
    page.goto("/")
    page.get_by_test_id("login-mode").click()
    page.get_by_test_id("login-key").fill("not-a-key")
    page.get_by_test_id("login-submit").click()
    page.get_by_test_id("login-error").wait_for()
    page.get_by_test_id("login-key").fill(key)
    page.get_by_test_id("login-submit").click()
    wait_library(page)
    assert page.get_by_test_id("current-role").inner_text() == "admin"
    page.get_by_test_id("sign-out").click()
    page.get_by_test_id("login-page").wait_for()
    assert page.evaluate("() => localStorage.getItem('plait.apiKey')") is None
    page.context.close()
    assert not errors, errors
