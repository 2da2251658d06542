"""Shared pytest configuration for the whole test suite."""

pytest_plugins = ["fakeapi.fixtures"]
