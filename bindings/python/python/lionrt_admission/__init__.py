"""Fail-closed admission gate for MCP tool descriptors.

``validate_mcp_tool_admission(name, input_schema, description=None, *, policy="original")`` keeps
the contract of lionagi's function of the same name: it returns ``None`` for
an admitted tool and raises ``PermissionError`` with the original's message
(and bracketed reason code) for a refused one. ``explain(...)`` returns the
structured report as a dict. ``policy="strict"`` (either function) adds the
code-execution rule: a tool that says it runs code and leaves the code free
is denied with ``code-execution-with-free-input``.
"""

from ._native import REASONS, explain, validate_mcp_tool_admission

__all__ = ["REASONS", "explain", "validate_mcp_tool_admission"]
