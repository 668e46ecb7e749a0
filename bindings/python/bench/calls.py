"""Calls per second of lionrt_admission.validate_mcp_tool_admission and of
lionagi 0.36.0's function (when installed) over the public cases, measured in
the same run."""

import json
import pathlib
import time

from lionrt_admission import validate_mcp_tool_admission as ours

CASES = pathlib.Path(__file__).resolve().parents[3] / "fixtures" / "admission" / "public_cases.jsonl"


def load():
    with CASES.open(encoding="utf-8") as f:
        cases = [json.loads(line) for line in f if line.strip()]
    return [(c["name"], c.get("input_schema"), c.get("description")) for c in cases]


def rate(fn, cases, seconds=2.0):
    calls = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        for name, schema, description in cases:
            try:
                fn(name, schema, description)
            except PermissionError:
                pass
        calls += len(cases)
    return calls / (time.perf_counter() - start)


def main():
    cases = load()
    mine = rate(ours, cases)
    print(f"lionrt_admission: {mine:,.0f} calls/s over {len(cases)} public cases")
    try:
        from lionagi.service.connections.mcp_wrapper import validate_mcp_tool_admission as original
    except ImportError:
        print("lionagi is not installed: no comparison")
        return
    theirs = rate(original, cases)
    print(f"lionagi 0.36.0:   {theirs:,.0f} calls/s; ratio {mine / theirs:.1f}x")


if __name__ == "__main__":
    main()
