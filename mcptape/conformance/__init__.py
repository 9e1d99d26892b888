"""Conformance: did a peer speak MCP correctly, and what of that fails the gate.

check.py asks the question of one tape (every message against the MCP schema of its revision;
heavy: mcp_types, pydantic, jsonschema); gate.py turns the answers into drifts, judged against the
golden tape's and placed among diff's. Above diff/, which knows nothing of either.
"""
