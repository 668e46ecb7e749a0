//! Unit tests: the single-pass `Shape` agrees with the keyword lists.

use serde_json::{Map, Value, json};

use super::{Shape, Types, pointer_get};
use crate::vocabulary::{DENIED_KEYWORDS, MODELED_KEYWORDS, OBJECT_CONTAINER_KEYWORDS};

#[test]
fn container_flag_matches_the_container_keywords() {
    for kw in MODELED_KEYWORDS
        .iter()
        .chain(DENIED_KEYWORDS)
        .chain(["type", "x-a"].iter())
    {
        let mut m = Map::new();
        m.insert((*kw).to_owned(), json!({}));
        let shape = Shape::of(&m);
        assert_eq!(
            shape.container,
            OBJECT_CONTAINER_KEYWORDS.contains(kw),
            "{kw}"
        );
    }
}

#[test]
fn shape_reads_types_pins_and_references() {
    let v = json!({"type": ["array", "null"], "enum": [], "$dynamicRef": "#", "items": {}, "$ref": "#"});
    let Value::Object(m) = &v else {
        unreachable!("object literal")
    };
    let shape = Shape::of(m);
    assert!(matches!(shape.types, Types::Known(t) if t.array && t.null && !t.string));
    assert!(shape.pinned && shape.dynamic_ref && shape.container);
    assert!(shape.items.is_some() && shape.reference.is_some());
}

#[test]
fn pointer_get_is_serde_json_pointer() {
    let doc = json!({
        "a": {"b/c": [10, {"~d": 1, "e~1f": 2}], "": {"x": true}},
        "$defs": {"L": {"type": "string"}, "0": "zero"},
        "list": [[0, 1], {"00": 3}],
        "~": {"/": 4},
    });
    let mut pointers: Vec<String> = [
        "",
        "/",
        "#",
        "a",
        "/a",
        "/a/b~1c",
        "/a/b~1c/0",
        "/a/b~1c/1/~0d",
        "/a/b~1c/1/e~01f",
        "/a/b~1c/01",
        "/a/b~1c/+1",
        "/a/b~1c/-1",
        "/a/b~1c/2",
        "/a/b~1c/ 1",
        "/a/",
        "/a//x",
        "/$defs/L",
        "/$defs/L/type",
        "/$defs/0",
        "/list/0/1",
        "/list/1/00",
        "/list/00",
        "/~0/~1",
        "/~0/~01",
        "/~1",
        "/a~",
        "/a/b~2c",
        "/list/18446744073709551616",
    ]
    .map(str::to_owned)
    .to_vec();
    // Every prefix of each, so the walk also stops at each kind of node.
    for p in pointers.clone() {
        for (i, _) in p.char_indices() {
            pointers.push(p[..i].to_owned());
        }
    }
    let mut found = 0;
    for p in &pointers {
        let ours = pointer_get(&doc, p).map(std::ptr::from_ref);
        assert_eq!(ours, doc.pointer(p).map(std::ptr::from_ref), "{p:?}");
        found += usize::from(ours.is_some());
    }
    assert!(found > 10 && found < pointers.len());
}
