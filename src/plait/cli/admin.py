"""`plait admin ...`: manage the deployment's users from the machine it runs on (the database in
PLAIT_DATABASE_URL, default ./.plait/plait.db), for when nobody can sign in: a new sign-in link,
a (new) password, a new user. The web UI and `/api/v1/users` do the same for a signed-in admin.

The service layer is imported when a command runs, not when `plait` starts: `plait run` stays as
quick to start as it was.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console

admin_app = typer.Typer(help="Manage users: sign-in links, passwords, new users.", no_args_is_help=True)
console = Console()
err_console = Console(stderr=True)
T = TypeVar("T")

URL_HELP = "The server's address, as the browser reaches it."


def _with_users(action: Callable[[Any], Awaitable[T]]) -> T:
    """Run `action(users)` on the configured database's `UserService`; a refusal exits 1."""
    from plait.service import ServiceError, Settings
    from plait.service.users import UserService
    from plait.store import Store

    async def main() -> T:
        settings = Settings.from_env()
        store = await Store.open(settings.database_url)
        try:
            return await action(UserService(store, settings))
        finally:
            await store.close()

    try:
        return asyncio.run(main())
    except ServiceError as exc:
        err_console.print(f"[red]{exc.message}[/]")
        raise typer.Exit(1) from exc


@admin_app.command("link")
def link_command(
    email: Annotated[str | None, typer.Option(help="The user to sign in (default: the local admin).")] = None,
    url: Annotated[str, typer.Option(help=URL_HELP)] = "http://127.0.0.1:8000",
) -> None:
    """Print a one-time sign-in link (valid 24 h): opening it signs the browser in."""

    async def action(users: Any) -> str:
        user_id = None
        if email is not None:
            user = await users.user_by_email(email)
            if user is None:
                err_console.print(f"[red]no user with the email {email!r}[/]")
                raise typer.Exit(1)
            user_id = user.id
        return str(await users.signin_link_token(user_id))

    token = _with_users(action)
    print(f"{url.rstrip('/')}/?token={token}")


@admin_app.command("set-password")
def set_password_command(
    email: Annotated[str, typer.Argument(help="The user's email (the local admin: admin@localhost).")],
    password: Annotated[
        str,
        typer.Option(prompt=True, hide_input=True, confirmation_prompt=True, help="At least 8 characters."),
    ],
) -> None:
    """Set (or reset) a user's password; their browser sessions end."""
    user = _with_users(lambda users: users.set_password(email, password))
    console.print(f"password set for {user['email']}")


@admin_app.command("create-user")
def create_user_command(
    email: Annotated[str, typer.Argument(help="The new user's email (what they sign in with).")],
    name: Annotated[str, typer.Option(help="Their name.")] = "",
    role: Annotated[str, typer.Option(help="admin, editor or viewer.")] = "editor",
    password: Annotated[
        str | None, typer.Option(help="A password (default: none; they sign in with a link).")
    ] = None,
) -> None:
    """Create a user and print their id."""
    user = _with_users(lambda users: users.create_user(email=email, name=name, role=role, password=password))
    print(user["id"])
