"""The HTTP front door (FastAPI)."""

from plait.api.app import create_app

__all__ = ["create_app"]
