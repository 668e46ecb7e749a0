//! Unit tests: the single-pass `Shape` agrees with the keyword lists.

use serde_json::{Map, Value, json};

use super::{Shape, Types};
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
