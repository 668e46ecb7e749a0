"""Shared fixtures: the public cases, the original gate (when installed), and
the differential tally printed at the end of the run."""

import json
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
PUBLIC_CASES = ROOT / "fixtures" / "admission" / "public_cases.jsonl"

TALLY = {"cases": 0, "missed": 0, "stricter": 0, "same": 0}
# Per generated class of test_differential_classes.py (and its time).
CLASS_TALLY = {}


def load_public_cases():
    with PUBLIC_CASES.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.fixture(scope="session")
def public_cases():
    return load_public_cases()


@pytest.fixture(scope="session")
def original():
    """lionagi 0.36.0's validate_mcp_tool_admission (skips when absent)."""
    wrapper = pytest.importorskip(
        "lionagi.service.connections.mcp_wrapper",
        reason="lionagi==0.36.0 is not installed (pip install lionagi==0.36.0)",
    )
    return wrapper.validate_mcp_tool_admission


def pytest_terminal_summary(terminalreporter):
    if TALLY["cases"]:
        terminalreporter.write_line(
            "differential against lionagi 0.36.0: {cases} cases, {missed} admitted "
            "where the original denies, {stricter} denied where the original admits, "
            "{same} same verdict".format(**TALLY)
        )
    seconds = CLASS_TALLY.pop("_seconds", None)
    for label, t in sorted(CLASS_TALLY.items()):
        terminalreporter.write_line(
            "  class {label}: {cases} cases, {missed} admitted where the original denies, "
            "{stricter} denied where it admits, {same} same".format(label=label, **t)
        )
    if seconds is not None:
        terminalreporter.write_line(f"  issue 23 classes: {seconds:.1f} s")
