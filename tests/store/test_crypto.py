from __future__ import annotations

import stat
import threading
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from plait.store import DecryptionError, SecretBox, SecretKeyError
from plait.store.crypto import key_file_path, load_keys


def test_round_trip_of_json_values() -> None:
    box = SecretBox(Fernet.generate_key())
    for value in ["sk-123", 42, 1.5, None, True, [1, "a"], {"k": {"n": [1]}}]:
        token = box.encrypt(value)
        assert "sk-123" not in token
        assert box.decrypt(token) == value


def test_key_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    key = Fernet.generate_key().decode()
    monkeypatch.setenv("PLAIT_SECRET_KEY", key)
    box = SecretBox.from_env(f"sqlite:///{tmp_path}/p.db")
    assert SecretBox(key).decrypt(box.encrypt("x")) == "x"
    assert not (tmp_path / "secret.key").exists()  # no file when the key comes from the environment


def test_several_keys_rotate(monkeypatch: pytest.MonkeyPatch) -> None:
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    token = SecretBox(old).encrypt("v")
    monkeypatch.setenv("PLAIT_SECRET_KEY", f"{new}, {old}")
    box = SecretBox.from_env()
    assert box.decrypt(token) == "v"  # old key still decrypts
    rotated = box.rotate(token)
    assert SecretBox(new).decrypt(rotated) == "v"
    with pytest.raises(DecryptionError):
        SecretBox(old).decrypt(rotated)


def test_bad_keys_are_explained(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLAIT_SECRET_KEY", "hunter2")
    with pytest.raises(SecretKeyError, match=r"PLAIT_SECRET_KEY: key #1 is not a Fernet key.*generate_key"):
        load_keys()
    monkeypatch.setenv("PLAIT_SECRET_KEY", " , ")
    with pytest.raises(SecretKeyError, match="empty"):
        load_keys()
    monkeypatch.delenv("PLAIT_SECRET_KEY")
    monkeypatch.setenv("PLAIT_SECRET_KEY_FILE", "/nonexistent/key")
    with pytest.raises(SecretKeyError, match="does not exist"):
        load_keys()


def test_wrong_key_cannot_decrypt() -> None:
    token = SecretBox(Fernet.generate_key()).encrypt("secret")
    with pytest.raises(DecryptionError, match="PLAIT_SECRET_KEY"):
        SecretBox(Fernet.generate_key()).decrypt(token)


def test_key_file_is_generated_once_next_to_the_database(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path}/data/plait.db"
    assert key_file_path(url) == tmp_path / "data" / "secret.key"
    token = SecretBox.from_env(url).encrypt({"a": 1})
    path = tmp_path / "data" / "secret.key"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert SecretBox.from_env(url).decrypt(token) == {"a": 1}  # same key the second time
    assert [p.name for p in path.parent.iterdir()] == ["secret.key"]  # no temporary file left


def test_default_key_file_location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert key_file_path() == Path(".plait/secret.key")
    assert key_file_path("postgresql+asyncpg://h/d") == Path(".plait/secret.key")


def test_key_file_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = Fernet.generate_key().decode()
    (tmp_path / "k").write_text(key + "\n")
    monkeypatch.setenv("PLAIT_SECRET_KEY_FILE", str(tmp_path / "k"))
    assert SecretBox(key).decrypt(SecretBox.from_env().encrypt(7)) == 7


def test_concurrent_key_creation_agrees(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/plait.db"
    boxes: list[SecretBox] = []
    threads = [threading.Thread(target=lambda: boxes.append(SecretBox.from_env(url))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    token = boxes[0].encrypt("same")
    assert all(b.decrypt(token) == "same" for b in boxes)
