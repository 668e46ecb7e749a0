"""Differential test against the original (lionagi 0.36.0): on the public
cases and on generated schemas, every descriptor the original refuses (a
PermissionError, or any other exception, which its host treats as a refusal)
is refused by this gate too. Denials where the original admits are the crate
docs' listed departures; they are counted, not failed."""

import itertools
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import TALLY
from lionrt_admission import validate_mcp_tool_admission as ours

NAMES = ["bash", "exec", "run_command", "Run_Process", "notebook", "search", "worker", "tool"]
DESCRIPTIONS = [
    None,
    "Execute terminal commands.",
    "Runs shell commands for you",
    "Search the code base.",
    "spawn processes",
]
KEYS = [
    "cmd", "command", "commandLine", "shell_command", "program", "executable", "binary",
    "argv", "args", "script", "code", "text", "input", "shell", "interpreter", "cwd", "env",
    "timeout", "user", "service_id", "file_path", "query", "mode", "x", "command_path",
    "script_id", "run_args", "ShellCommand", "ſhell", "title",
]
PATTERNS = [
    "^cmd$", "^x-", "^(?i)CMD$", r"^cm\Z", r"^cmd\z", "^(?=c)", "^c(?P<n>m)d$", "(?x) c m d",
    "^[a-z]+$", "^arg[sv]$", "^.{1,3}$", "(?i:SHELL)", "[", "^(a+)+$", r"\bcode\b", "(?>cmd)",
]


def verdict(fn, name, schema, description):
    try:
        fn(name, schema, description)
        return "allow"
    except PermissionError as e:
        text = str(e)
        return "deny:" + text[text.index("[") + 1 : text.index("]")]
    except Exception as e:  # noqa: BLE001 - the host refuses on any exception
        return "raise:" + type(e).__name__


def compare(original, cases):
    missed = []
    for name, schema, description in cases:
        theirs = verdict(original, name, schema, description)
        mine = verdict(ours, name, schema, description)
        TALLY["cases"] += 1
        if theirs != "allow" and mine == "allow":
            TALLY["missed"] += 1
            missed.append((name, description, schema, theirs))
        elif theirs == "allow" and mine != "allow":
            TALLY["stricter"] += 1
        else:
            TALLY["same"] += 1
    return missed


def test_public_cases_differential(original, public_cases):
    cases = [
        (name, case.get("input_schema"), description)
        for case in public_cases
        for name, description in itertools.chain(
            [(case["name"], case.get("description"))],
            itertools.product(NAMES, DESCRIPTIONS),
        )
    ]
    missed = compare(original, cases)
    assert not missed, missed[:5]


scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["string", "object", "x", ""]),
)
leaf = st.sampled_from([
    {"type": "string"}, {"type": "string", "enum": ["a"]}, {"type": "integer"}, {"type": "boolean"},
    {"type": "array", "items": {"type": "string"}}, {"type": "array", "items": {"enum": ["-q"]}},
    {"type": "array"}, {"type": "string", "maxLength": 5}, {"description": "untyped"}, {}, True,
    False, {"const": "x"}, {"type": ["string", "null"]}, {"type": ["object", "null"]},
    {"$ref": "#/$defs/A"}, {"$ref": "#/$defs/B"}, {"$ref": "#"}, {"$ref": "https://x/y"},
    {"$dynamicRef": "#a"}, {"x-meta": {"a": 1}}, {"widget": {"type": "string"}}, {"type": "String"},
])


def extend(inner):
    props = st.dictionaries(st.sampled_from(KEYS), inner, max_size=4)
    obj = st.fixed_dictionaries(
        {"type": st.sampled_from(["object", ["object", "null"], "object"])},
        optional={
            "properties": props,
            "additionalProperties": st.one_of(st.booleans(), inner),
            "required": st.lists(st.sampled_from(KEYS), max_size=2),
            "patternProperties": st.dictionaries(st.sampled_from(PATTERNS), inner, max_size=2),
            "$defs": st.fixed_dictionaries({}, optional={"A": inner, "B": inner}),
        },
    )
    untyped = st.fixed_dictionaries({"properties": props}, optional={"additionalProperties": st.booleans()})
    composed = st.builds(
        lambda kw, branches: {kw: branches},
        st.sampled_from(["anyOf", "oneOf", "allOf"]),
        st.lists(inner, max_size=3),
    )
    arrays = st.one_of(
        st.builds(lambda i: {"type": "array", "items": i}, inner),
        st.builds(lambda p, i: {"type": "array", "prefixItems": p, "items": i},
                  st.lists(inner, max_size=2), st.one_of(st.just(False), inner)),
    )
    conditional = st.one_of(
        st.builds(lambda x: {"not": x}, inner),
        st.builds(lambda a, b: {"if": a, "then": b}, inner, inner),
    )
    odd = st.builds(
        lambda kw, v: {kw: v},
        st.sampled_from(["type", "properties", "items", "prefixItems", "allOf", "$ref", "$defs", "enum"]),
        st.one_of(scalars, st.lists(scalars, max_size=2), st.dictionaries(st.sampled_from(KEYS), scalars, max_size=2)),
    )
    return st.one_of(obj, obj, untyped, composed, arrays, conditional, odd)


schemas = st.recursive(leaf, extend, max_leaves=14)


@settings(
    max_examples=int(os.environ.get("LIONRT_DIFF_EXAMPLES", "3000")),
    # The same examples on every run unless asked for fresh ones.
    derandomize=os.environ.get("LIONRT_DIFF_RANDOM") != "1",
    deadline=None,
    suppress_health_check=list(HealthCheck))
@given(schema=schemas, defs=st.fixed_dictionaries({}, optional={"A": schemas, "B": schemas}))
def test_generated_schemas_differential(original, schema, defs):
    if isinstance(schema, dict) and defs and "$defs" not in schema:
        schema = dict(schema, **{"$defs": defs})
    cases = [(name, schema, description) for name, description in itertools.product(NAMES, DESCRIPTIONS)]
    missed = compare(original, cases)
    assert not missed, missed[:3]
