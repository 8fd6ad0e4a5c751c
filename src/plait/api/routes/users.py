"""`/api/v1/me`, `/api/v1/users` (admins), `/api/v1/api-keys` and `/api/v1/auth/*` (browser
sign-in). Thin: the logic is in `plait.service.users`."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request, Response

import plait.api.schemas as s
from plait.api.deps import ADMIN, ERRORS, READ, SESSION_COOKIE, Caller, Svc, caller, path_id, session_cookie
from plait.service.users import SESSION_TTL_S, user_view

me = APIRouter(prefix="/api/v1", tags=["users"], dependencies=[Depends(caller)], responses=ERRORS)


@me.get("/me", response_model=s.MeOut, dependencies=[READ])
async def get_me(svc: Svc, who: Caller) -> Any:
    """The caller: their user, role, the scopes of this credential and how it signed in."""
    return await svc.users.me(who)


@me.post("/api-keys", status_code=201, response_model=s.ApiKeyCreated, dependencies=[READ])
async def create_api_key(svc: Svc, who: Caller, body: s.ApiKeyCreate) -> Any:
    """A new key of the caller's, with `scopes` within those of the credential asking (a
    read-only key cannot make a writing one). The key is in the answer this once: it is kept only
    as a hash."""
    return await svc.users.create_key(who.user_id, body.name, list(body.scopes), allowed=who.scopes)


@me.get("/api-keys", response_model=list[s.ApiKeyOut], dependencies=[READ])
async def list_api_keys(svc: Svc, who: Caller) -> Any:
    """The caller's active keys (never the keys themselves)."""
    return await svc.users.list_keys(who.user_id)


@me.delete("/api-keys/{key_id}", status_code=204, dependencies=[READ])
async def revoke_api_key(svc: Svc, who: Caller, key_id: str) -> Response:
    """Revoke one of the caller's keys (an admin: any key); it stops working at once here and
    within 30 s on other servers."""
    await svc.users.revoke_key(who, path_id(key_id, "API key"))
    return Response(status_code=204)


@me.get("/users", response_model=list[s.UserOut], dependencies=[ADMIN])
async def list_users(svc: Svc) -> Any:
    return await svc.users.list_users()


@me.post("/users", status_code=201, response_model=s.UserOut, dependencies=[ADMIN])
async def create_user(svc: Svc, body: s.UserCreate) -> Any:
    """A new user (`password` optional: without one they sign in with a link or use keys)."""
    return await svc.users.create_user(
        email=body.email, name=body.name, role=body.role, password=body.password
    )


@me.patch("/users/{user_id}", response_model=s.UserOut, dependencies=[ADMIN])
async def update_user(svc: Svc, who: Caller, user_id: str, body: s.UserUpdate) -> Any:
    """Rename, change the role, disable (`"disabled": true`: their keys and sessions stop
    working) or enable a user, or set their password."""
    return await svc.users.update_user(
        who,
        path_id(user_id, "user"),
        name=body.name,
        role=body.role,
        disabled=body.disabled,
        password=body.password,
    )


@me.post("/users/{user_id}/disable", response_model=s.UserOut, dependencies=[ADMIN])
async def disable_user(svc: Svc, who: Caller, user_id: str) -> Any:
    return await svc.users.update_user(who, path_id(user_id, "user"), disabled=True)


@me.post("/users/{user_id}/api-keys", status_code=201, response_model=s.ApiKeyCreated, dependencies=[ADMIN])
async def create_user_api_key(svc: Svc, user_id: str, body: s.ApiKeyCreate) -> Any:
    """A new key for that user (shown once), with scopes within their role."""
    return await svc.users.create_key_for(path_id(user_id, "user"), body.name, list(body.scopes))


auth = APIRouter(prefix="/api/v1/auth", tags=["users"], responses=ERRORS)


def set_session_cookie(request: Request, response: Response, token: str) -> None:
    """The browser's session: httpOnly (no script reads it), SameSite=strict (no other site's
    page sends it), Secure behind HTTPS."""
    svc = request.app.state.services
    response.set_cookie(
        SESSION_COOKIE,
        token,
        max_age=int(SESSION_TTL_S),
        httponly=True,
        samesite="strict",
        secure=bool(svc.settings.secure_cookies or request.url.scheme == "https"),
        path="/",
    )


@auth.post("/login", response_model=s.LoginOut)
async def login(svc: Svc, request: Request, response: Response, body: s.LoginBody) -> Any:
    """Sign in with an email and password: sets the session cookie. 401 on any mismatch."""
    user, token = await svc.users.login(body.email, body.password)
    set_session_cookie(request, response, token)
    return {"user": user_view(user)}


@auth.post("/logout", status_code=204)
async def logout(svc: Svc, session: str | None = Depends(session_cookie)) -> Response:
    """End the browser session (the cookie is cleared)."""
    await svc.users.logout(session)
    response = Response(status_code=204)
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
    return response


__all__ = ["auth", "me", "set_session_cookie"]
