"""Encryption at rest for variable values (Fernet: AES-128-CBC + HMAC-SHA256, from `cryptography`).

The key comes from, in order:
1. `PLAIT_SECRET_KEY`: one Fernet key, or several separated by commas (the first encrypts, all
   decrypt: rotate by putting the new key first and re-saving the variables);
2. `PLAIT_SECRET_KEY_FILE`: a file holding such a key;
3. `secret.key` next to the SQLite database (`./.plait/secret.key` by default, and for databases
   that are not SQLite), generated on first use with mode 0600.

A key is 32 url-safe base64-encoded bytes:
`python -c "from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())"`.
With PostgreSQL and several processes (Celery workers), set `PLAIT_SECRET_KEY` (or a shared key
file) so that every process uses the same key.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from sqlalchemy.engine import URL

from plait.errors import PlaitError
from plait.store.db import database_url, json_dumps, sqlite_path

ENV_KEY = "PLAIT_SECRET_KEY"
ENV_KEY_FILE = "PLAIT_SECRET_KEY_FILE"
KEY_FILE_NAME = "secret.key"
_HOW = 'generate one with: python -c "from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())"'


class SecretKeyError(PlaitError, ValueError):
    """The secret key is missing, malformed or cannot be stored; the message says how to make one."""

    code = "secret_key"


class DecryptionError(PlaitError, ValueError):
    """A stored value cannot be decrypted with the configured key(s)."""

    code = "decryption_failed"


def key_file_path(url: str | URL | None = None) -> Path:
    """Where the generated key lives: next to the SQLite database, else `./.plait/secret.key`."""
    path = sqlite_path(database_url(url))
    return (path.parent if path is not None else Path(".plait")) / KEY_FILE_NAME


def _parse_keys(text: str, origin: str) -> list[Fernet]:
    keys = [part.strip() for part in text.replace("\n", ",").split(",") if part.strip()]
    if not keys:
        raise SecretKeyError(f"{origin} is empty; {_HOW}")
    fernets = []
    for i, key in enumerate(keys, 1):
        try:
            fernets.append(Fernet(key.encode("ascii")))
        except (ValueError, UnicodeEncodeError) as exc:
            raise SecretKeyError(
                f"{origin}: key #{i} is not a Fernet key (32 url-safe base64-encoded bytes); {_HOW}"
            ) from exc
    return fernets


def _read_or_create_key_file(path: Path) -> str:
    if path.exists():
        return path.read_text("ascii")
    path.parent.mkdir(parents=True, exist_ok=True)
    key = Fernet.generate_key()
    # Write a private temporary file, then hard-link it into place: the link fails if another
    # process created the key first, and nobody ever sees a half-written key file.
    fd, tmp = tempfile.mkstemp(prefix=".secret-", dir=path.parent)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, key + b"\n")
        os.fsync(fd)
        os.close(fd)
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
    finally:
        os.unlink(tmp)
    return path.read_text("ascii")


def load_keys(url: str | URL | None = None) -> list[Fernet]:
    env = os.environ.get(ENV_KEY)
    if env:
        return _parse_keys(env, ENV_KEY)
    key_file = os.environ.get(ENV_KEY_FILE)
    if key_file:
        path = Path(key_file)
        if not path.is_file():
            raise SecretKeyError(f"{ENV_KEY_FILE}={key_file!r} does not exist; {_HOW}")
        return _parse_keys(path.read_text("ascii"), str(path))
    path = key_file_path(url)
    return _parse_keys(_read_or_create_key_file(path), str(path))


class SecretBox:
    """Encrypts JSON-able values to Fernet tokens (text) and back."""

    def __init__(self, keys: list[Fernet] | Fernet | str | bytes) -> None:
        if isinstance(keys, (str, bytes)):
            keys = _parse_keys(keys.decode("ascii") if isinstance(keys, bytes) else keys, "key")
        elif isinstance(keys, Fernet):
            keys = [keys]
        self._fernet = MultiFernet(keys)

    @classmethod
    def from_env(cls, url: str | URL | None = None) -> SecretBox:
        return cls(load_keys(url))

    def encrypt(self, value: Any) -> str:
        return self._fernet.encrypt(json_dumps(value).encode("utf-8")).decode("ascii")

    def decrypt(self, token: str) -> Any:
        try:
            raw = self._fernet.decrypt(token.encode("ascii"))
        except InvalidToken as exc:
            raise DecryptionError(
                f"a stored secret cannot be decrypted: {ENV_KEY} (or the key file) changed since it was saved"
            ) from exc
        return json.loads(raw)

    def rotate(self, token: str) -> str:
        """Re-encrypt a token with the first (newest) key."""
        return self._fernet.rotate(token.encode("ascii")).decode("ascii")
