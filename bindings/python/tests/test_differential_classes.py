"""Differential test against the original (lionagi 0.36.0) on generated
descriptors of issue 23's classes: non-ASCII and lookalike characters beside
key words (names, keys, descriptions), Python `re` constructs (comments with
escapes, verbose mode, inline flags), JSON-pointer forms, one `$ref` target
reached at several depths, widths near the node budget, numbers f64 cannot
hold, and depths at and around the cap. Every descriptor the original
refuses must be refused here too.

A seeded `random.Random` generates the cases (hypothesis is too slow for
this many): `LIONRT_DIFF_CASES` cases (100,000 by default; 1,000,000 when
`LIONRT_DIFF_SLOW=1`), `LIONRT_DIFF_SEED` picks the seed (fixed by default)."""

import math
import os
import random
import time

from conftest import CLASS_TALLY
from lionrt_admission import validate_mcp_tool_admission as ours

CASES = int(os.environ.get(
    "LIONRT_DIFF_CASES",
    "1000000" if os.environ.get("LIONRT_DIFF_SLOW") == "1" else "100000",
))
SEED = int(os.environ.get("LIONRT_DIFF_SEED", "23"))

KEY_WORDS = [
    "cmd", "command", "command_line", "commandLine", "CommandLine", "shell_command", "ShellCommand",
    "program", "executable", "binary", "args", "argv", "script", "code", "input", "text", "shell",
    "interpreter", "cwd", "env", "timeout", "user", "file_path", "service_id", "command_path",
    "script_id", "query", "mode", "CMD", "Cmd", "cMd",
]
STRONG_NAMES = [
    "bash", "sh", "zsh", "shell", "cmd", "powershell", "pwsh", "terminal", "exec", "exec_command",
    "execute_command", "run_command", "run_shell", "shell_exec", "command_exec", "spawn_process",
    "run_process", "runCommand", "RunProcess", "shellExec", "EXEC",
]
NEUTRAL_NAMES = ["notebook", "search", "worker", "tool", "files"]
PHRASES = [
    "runs shell commands", "Execute terminal commands.", "execute a shell command", "run an os command",
    "spawn processes", "arbitrary shell", "executes scripts", "command line runner", "run a shell",
    "Search the code base.",
]
# Characters beside key words: separators to the original (they case-fold to
# nothing in [a-z0-9]) and lookalikes that fold to ASCII letters.
SEPARATORS = list("éÉΩωΣσςЖжąǅĲ命令ア１Ａｍ²³¹٣७๓ıÀøŁŀªºⅰⅫ①") + [
    "\u0301", "\u200b", "\U0001d41c", "\U0001d7d9", "\u00a0", "\u2028", "-", "_", " ", ".", "$",
]
LOOKALIKES = ["ſ", "K", "ﬀ", "ﬁ", "ß", "İ", "ﬆ", "Å", "ǈ", "ｃ", "с", "ϲ", "ᴄ"]


def verdict(fn, name, schema, description):
    try:
        fn(name, schema, description)
        return "allow"
    except PermissionError as e:
        text = str(e)
        return "deny:" + text[text.index("[") + 1 : text.index("]")]
    except Exception as e:  # noqa: BLE001 - the host refuses on any exception
        return "raise:" + type(e).__name__


def strict(name, schema, description):
    return ours(name, schema, description, policy="strict")


def spell(r, word):
    """A key word with non-ASCII separators, lookalikes or case changes."""
    choice = r.random()
    chars = SEPARATORS if choice < 0.7 else LOOKALIKES
    out = word
    if r.random() < 0.3:
        out = r.choice([str.upper, str.lower, str.title, lambda s: s])(out)
    for _ in range(r.randint(1, 2)):
        c = r.choice(chars)
        where = r.random()
        if where < 0.4:
            out = c + out
        elif where < 0.8:
            out = out + c
        else:
            i = r.randint(0, len(out))
            out = out[:i] + c + out[i:]
    return out


def leaf(r):
    return r.choice([
        {"type": "string"}, {"type": "string"}, {"type": "string", "enum": ["a"]}, {"type": "integer"},
        {"type": "array", "items": {"type": "string"}}, {"description": "untyped"}, True,
        {"type": "array", "items": {"enum": ["-q"]}},
    ])


def closed(props):
    return {"type": "object", "properties": props, "additionalProperties": False}


def gen_unicode(r):
    key = spell(r, r.choice(KEY_WORDS))
    props = {key: leaf(r)}
    if r.random() < 0.3:
        props[spell(r, r.choice(KEY_WORDS))] = leaf(r)
    schema = closed(props) if r.random() < 0.5 else {"type": "object", "properties": props}
    name = spell(r, r.choice(STRONG_NAMES)) if r.random() < 0.5 else r.choice(NEUTRAL_NAMES)
    description = None
    if r.random() < 0.4:
        description = spell(r, r.choice(PHRASES))
    return name, schema, description


PATTERN_ATOMS = [
    "c", "m", "d", "cmd", "command", "args?", "^", "$", ".", "x", " ", "\\n", "\\\\", "\\)", "\\#",
    "[#]", "[a-z]+", "(?i)", "(?x)", "(?s)", "(?#c)", "(?#\\))", "(?#a\\\\)", "(?#\\", "#", "#\\\n",
    "#x\n", "#\\\\\n", "\n", "(", ")", "(?:", "(?i:", "(?x:", "(?-i:", "|", "\\Z", "\\z", "\\b",
    "{1,3}", "*", "+", "?", "ſ", "K", "(?a)", "(?u)",
]


def gen_pattern(r):
    pattern = "".join(r.choice(PATTERN_ATOMS) for _ in range(r.randint(1, 7)))
    if r.random() < 0.3:
        pattern = r.choice(["(?x)", "(?ix)", "(?x)^"]) + pattern
    if r.random() < 0.3:
        pattern = pattern + r.choice(["cmd", "command", "\ncmd", "$", ")cmd"])
    schema = {"type": "object", "patternProperties": {pattern: leaf(r)}}
    if r.random() < 0.5:
        schema["additionalProperties"] = False
    name = r.choice(NEUTRAL_NAMES + STRONG_NAMES[:4])
    return name, schema, r.choice([None, None, "runs shell commands"])


CMD_OBJECT = {"type": "object", "properties": {"cmd": {"type": "string"}}}
SAFE_OBJECT = closed({"mode": {"enum": ["a"]}})
POINTER_KEYS = ["A", "", "a/b", "a~b", "a~1b", "a%20b", "a b", "0", "1", "-", "%25", "~", "~0", "~1"]


def escape_token(r, key):
    if r.random() < 0.8:
        return key.replace("~", "~0").replace("/", "~1")
    return key


def gen_pointer(r):
    """A `$ref` whose pointer has empty segments, array indices, escapes or
    percent-encoding, into `$defs` entries and lists holding a command
    channel or a closed object."""
    target = r.choice([CMD_OBJECT, CMD_OBJECT, SAFE_OBJECT, {"type": "string"}, {"$ref": "#/$defs/B"}])
    key = r.choice(POINTER_KEYS)
    container = r.choice(["dict", "list", "nested"])
    defs = {"B": r.choice([CMD_OBJECT, SAFE_OBJECT])}
    if container == "dict":
        defs[key] = target
        segments = ["$defs", escape_token(r, key)]
    elif container == "list":
        defs["L"] = [SAFE_OBJECT, target] if r.random() < 0.5 else [target]
        index = str(len(defs["L"]) - 1)
        segments = ["$defs", "L", r.choice([index, index, "0" + index, "+" + index, "-"])]
    else:
        defs[key] = {"": target, "x": {"y": target}}
        segments = ["$defs", escape_token(r, key), r.choice(["", "x/y", "x//y"])]
    if r.random() < 0.3 and defs.get("A") is None:
        defs["A"] = SAFE_OBJECT
    pointer = "/".join(segments)
    if r.random() < 0.4:
        i = r.randint(0, len(pointer))
        pointer = pointer[:i] + "/" + pointer[i:]
    if r.random() < 0.15:
        pointer = pointer.replace("$", "%24")
    ref = "#/" + pointer if r.random() < 0.95 else "#" + pointer
    where = r.random()
    if where < 0.4:
        schema = {"$ref": ref, "$defs": defs}
    elif where < 0.7:
        schema = {"type": "object", "properties": {"cmd": {"$ref": ref}}, "$defs": defs}
    else:
        schema = {"type": "object", "properties": {r.choice(["q", "o", "args"]): {"$ref": ref}}, "$defs": defs}
        if r.random() < 0.5:
            schema["additionalProperties"] = False
    name = r.choice(NEUTRAL_NAMES + ["bash", "exec"])
    return name, schema, r.choice([None, None, "runs shell commands"])


def wrap(schema, levels, key="a"):
    for _ in range(levels):
        schema = closed({key: schema})
    return schema


def gen_depths(r):
    """One `$ref` target reached at several depths (deep first or shallow
    first), many refs to one target."""
    target = r.choice([
        CMD_OBJECT, SAFE_OBJECT, wrap(CMD_OBJECT, r.randint(0, 4)), wrap(SAFE_OBJECT, r.randint(0, 6)),
        closed({"args": {"type": "array", "items": {"type": "integer"}}}),
        {"type": "array", "items": {"enum": ["a"]}},
    ])
    refs = []
    for _ in range(r.randint(2, 4)):
        refs.append(wrap({"$ref": "#/$defs/T"}, r.randint(0, 13)))
    props = {f"p{i}": ref for i, ref in enumerate(refs)}
    if r.random() < 0.3:
        props["cmd"] = {"$ref": "#/$defs/T"}
    schema = closed(props) if r.random() < 0.6 else {"type": "object", "properties": props}
    schema["$defs"] = {"T": target}
    if r.random() < 0.3:
        schema = wrap(schema, r.randint(1, 6))
        schema["$defs"] = {"T": target}
    name = r.choice(NEUTRAL_NAMES + ["bash", "exec", "run_process"])
    return name, schema, r.choice([None, None, "runs shell commands"])


def gen_budget(r):
    """Widths at and around the node budget: branches, properties and
    repeated references."""
    kind = r.randrange(4)
    if kind == 0:
        n = r.choice([2490, 2499, 2500, 2501, 2510, 1666, 1667])
        branch = r.choice([closed({}), {"enum": ["a"]}, {"type": "integer"}])
        schema = {r.choice(["anyOf", "oneOf", "allOf"]): [branch] * n}
    elif kind == 1:
        n = r.choice([2499, 2500, 2501, 4999, 5000, 5001])
        value = r.choice([{"type": "integer"}, closed({}), {"enum": ["a"]}])
        schema = closed({f"q{i}": value for i in range(n)})
    elif kind == 2:
        size = r.choice([1, 5, 10, 20])
        t = closed({f"t{i}": {"type": "integer"} for i in range(size)})
        per = size + 4
        n = r.choice([5000 // per - 5, 5000 // per - 1, 5000 // per, 5000 // per + 1, 5000 // per + 5])
        schema = closed({f"q{i}": {"$ref": "#/$defs/T"} for i in range(n)})
        schema["$defs"] = {"T": t}
    else:
        size = r.choice([5, 10])
        t = closed({f"t{i}": {"type": "integer"} for i in range(size)})
        n = r.choice([300, 350, 380, 385, 390, 400, 450])
        schema = {"allOf": [{"$ref": "#/$defs/T"}] * n, "$defs": {"T": t}}
    if r.random() < 0.5:
        # A command key after everything else.
        if "properties" in schema:
            schema["properties"]["zz_cmd"] = {"type": "string"}
            schema["properties"]["cmd"] = {"type": "string"}
    name = r.choice(["tool", "bash", "worker"])
    return name, schema, r.choice([None, "runs shell commands"])


BIG_NUMBERS = [math.inf, -math.inf, math.nan, 10**400, -(10**400), 10**19, -(10**19), 1e308, 5e-324]


def gen_numbers(r):
    n = r.choice(BIG_NUMBERS)
    where = r.randrange(6)
    inner = {"type": "string"}
    if where == 0:
        inner = {"type": "string", "default": n}
    elif where == 1:
        inner = {"type": "string", "maxLength": n}
    elif where == 2:
        inner = {"enum": [n]}
    elif where == 3:
        inner = {"const": n}
    elif where == 4:
        inner = {"type": ["string", n]}
    else:
        inner = {"type": "integer", "minimum": n, "x-n": n}
    key = r.choice(["cmd", "q", "mode", "args"])
    schema = {"type": "object", "properties": {key: inner}}
    if r.random() < 0.5:
        schema["additionalProperties"] = False
    if r.random() < 0.3:
        schema["maxProperties"] = n
    return r.choice(NEUTRAL_NAMES + ["bash"]), schema, r.choice([None, "runs shell commands"])


def nested_arrays(levels, inner):
    for _ in range(levels):
        inner = {"type": "array", "items": inner}
    return inner


def gen_caps(r):
    """Depths at and around the cap: keys, array items, prefixItems,
    compositions and references."""
    levels = r.randint(8, 14)
    inner = r.choice([
        {"type": "string"}, {"type": "integer"}, {"enum": ["a"]}, closed({"x": {"enum": ["a"]}}),
        CMD_OBJECT, {"anyOf": [{"enum": ["a"]}]}, {"$ref": "#/$defs/E"},
    ])
    value = r.choice([
        inner,
        nested_arrays(r.randint(1, 8), inner),
        {"type": "array", "prefixItems": [inner], "items": False},
        {"type": "array", "items": {"type": "array", "prefixItems": [inner], "items": False}},
        {"anyOf": [inner]},
    ])
    key = r.choice(["cmd", "args", "q", "script"])
    schema = wrap(closed({key: value}), levels if r.random() < 0.7 else r.randint(0, 7))
    schema["$defs"] = {"E": r.choice([{"enum": ["a"]}, {"type": "string"}, CMD_OBJECT])}
    name = r.choice(NEUTRAL_NAMES + ["bash", "run_process"])
    return name, schema, r.choice([None, "runs shell commands"])


GENERATORS = [
    ("1 non-ASCII names, keys, descriptions", gen_unicode, 20),
    ("2 Python re comments and flags", gen_pattern, 20),
    ("3 JSON-pointer forms", gen_pointer, 20),
    ("4 one target at several depths", gen_depths, 15),
    ("5 widths near the node budget", gen_budget, 1),
    ("6 numbers f64 cannot hold", gen_numbers, 8),
    ("7 depths around the cap", gen_caps, 16),
]


def test_issue_23_classes_differential(original):
    r = random.Random(SEED)
    weights = [w for _, _, w in GENERATORS]
    missed = []
    started = time.perf_counter()
    for _ in range(CASES):
        label, gen, _ = r.choices(GENERATORS, weights)[0]
        name, schema, description = gen(r)
        theirs = verdict(original, name, schema, description)
        mine = verdict(ours, name, schema, description)
        # The strict policy keeps every denial of the original.
        if theirs != "allow" and verdict(strict, name, schema, description) == "allow":
            missed.append(("strict", label, name, description, repr(schema)[:600], theirs))
        tally = CLASS_TALLY.setdefault(label, {"cases": 0, "missed": 0, "stricter": 0, "same": 0})
        tally["cases"] += 1
        if theirs != "allow" and mine == "allow":
            tally["missed"] += 1
            if len(missed) < 5:
                missed.append((label, name, description, repr(schema)[:600], theirs))
        elif theirs == "allow" and mine != "allow":
            tally["stricter"] += 1
        else:
            tally["same"] += 1
    CLASS_TALLY["_seconds"] = time.perf_counter() - started
    assert not missed, missed
