"""mcptape: record, replay and diff Model Context Protocol sessions; gate MCP servers in CI.

Importing the package is cheap on purpose: `mcptape --version` and `mcptape play` must
start fast, so heavy modules (rich, ghapi, jsonschema, pydantic) are imported where used.
"""

__version__ = "0.1.0"
