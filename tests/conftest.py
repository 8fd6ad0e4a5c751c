"""Registers the test-only node types (see plait_testing.py) and shared fixtures for every test."""

import plait_testing  # noqa: F401
from llama_fixture import llama_server  # noqa: F401  (session fixture: a real llama.cpp server)
