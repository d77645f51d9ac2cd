"""Pydantic models of a debate: its vocabulary (`terms`), its configuration (`config`) and its
state (`state`). Import from the module that defines a model; this package re-exports nothing.

JSON field names are snake_case everywhere.
"""
