"""The binding keeps the original's contract: None or PermissionError."""

import re

import pytest

import lionrt_admission
from lionrt_admission import REASONS, explain, validate_mcp_tool_admission

MESSAGE = re.compile(
    r"^MCP tool (?P<name>.+) was not registered: generic executor surface detected "
    r"\[(?P<reason>[a-z-]+)\]\. Expose a structured, bounded operation instead; "
    r"this admission rule has no configuration opt-out\.$"
)

SHELL = {"type": "object", "properties": {"cmd": {"type": "string"}}}
SEARCH = {"type": "object", "properties": {"query": {"type": "string"}}}


def test_admitted_returns_none():
    assert validate_mcp_tool_admission("search", SEARCH, "Search the code.") is None
    assert validate_mcp_tool_admission("search", None) is None


def test_denied_raises_permission_error_with_the_original_message():
    with pytest.raises(PermissionError) as err:
        validate_mcp_tool_admission("notebook", SHELL)
    m = MESSAGE.match(str(err.value))
    assert m, str(err.value)
    assert m.group("name") == "'notebook'"
    assert m.group("reason") == "unbounded-command-input"
    # Python repr quoting for a name holding a single quote.
    with pytest.raises(PermissionError) as err:
        validate_mcp_tool_admission("it's", SHELL)
    assert MESSAGE.match(str(err.value)).group("name") == '"it\'s"'


def test_public_cases(public_cases):
    for case in public_cases:
        if case.get("prebuilt_mcp_tool_name"):
            continue  # the synthetic wrapper exemption is the host's, not this call's
        name, schema, desc = case["name"], case.get("input_schema"), case.get("description")
        if case["expect"] == "allow":
            assert validate_mcp_tool_admission(name, schema, desc) is None, case["id"]
        else:
            with pytest.raises(PermissionError) as err:
                validate_mcp_tool_admission(name, schema, desc)
            assert f"[{case['reason']}]" in str(err.value), case["id"]


def test_explain_returns_the_report():
    report = explain("notebook", SHELL)
    assert report["admitted"] is False
    assert report["reason"] == "unbounded-command-input"
    assert report["reason"] in REASONS
    assert MESSAGE.match(report["message"])
    [key] = report["free_form_keys"]
    assert key["key"] == "cmd" and key["path"] == "/properties/cmd"
    assert "command" in key["categories"]
    ok = explain("search", SEARCH, "Search.")
    assert ok["admitted"] is True and ok["reason"] is None and ok["message"] is None
    bash = explain("bash", {"type": "object", "properties": {"x": {"type": "object"}}})
    assert bash["strong_executor_name"] is True
    assert bash["insufficiency"]["proof"] in ("boundedness", "coverage")


def test_python_values_and_odd_arguments():
    # Tuples are lists; a non-string description is ignored as absent.
    schema = {"type": "object", "properties": {"mode": {"enum": ("a", "b")}}, "additionalProperties": False}
    assert validate_mcp_tool_admission("bash", schema, 42) is None
    # A value JSON cannot carry raises (a host refuses on any exception).
    with pytest.raises(TypeError):
        validate_mcp_tool_admission("search", {"type": object()})
    # A non-string name judges as the empty name; the message shows its repr.
    with pytest.raises(PermissionError) as err:
        validate_mcp_tool_admission(5, SHELL)
    assert str(err.value).startswith("MCP tool 5 was not registered")
    assert "malformed-schema" in lionrt_admission.REASONS


def test_deep_python_values_do_not_crash():
    deep = {"type": "integer"}
    for _ in range(600):
        deep = {"type": "object", "properties": {"a": deep}}
    with pytest.raises(PermissionError):
        validate_mcp_tool_admission("bash", deep)
    assert validate_mcp_tool_admission("notebook", deep) is None


CODE_RUNNER = {"type": "object", "properties": {"code": {"type": "string"}}}


def test_strict_policy_is_an_option_and_the_default_is_the_original():
    # The drop-in keeps the original's verdict...
    assert validate_mcp_tool_admission("run_python", CODE_RUNNER) is None
    assert validate_mcp_tool_admission("run_python", CODE_RUNNER, policy="original") is None
    # ...strict denies with its own reason code.
    with pytest.raises(PermissionError) as err:
        validate_mcp_tool_admission("run_python", CODE_RUNNER, policy="strict")
    assert MESSAGE.match(str(err.value)).group("reason") == "code-execution-with-free-input"
    assert explain("sandbox", CODE_RUNNER, "Runs Python code.", policy="strict")["reason"] == (
        "code-execution-with-free-input"
    )
    assert "code-execution-with-free-input" in REASONS
    # Strict keeps every original denial.
    assert explain("notebook", SHELL, policy="strict")["reason"] == "unbounded-command-input"
    with pytest.raises(ValueError):
        validate_mcp_tool_admission("x", SEARCH, policy="lenient")
