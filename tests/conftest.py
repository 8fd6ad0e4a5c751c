"""Registers the test-only node types (see plait_testing.py) for every test."""

import plait_testing  # noqa: F401
