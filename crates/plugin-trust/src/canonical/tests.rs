//! Byte-exact checks against what Python's `json.dumps` prints.

use serde_json::json;

use super::to_canonical_json;

#[test]
fn matches_python_dumps() {
    // json.dumps({"b": [1, "é"], "a": {"z": None, "y": "\x7f\"\n😀"}},
    //            sort_keys=True, separators=(",", ":"))
    let value = json!({"b": [1, "é"], "a": {"z": null, "y": "\u{7f}\"\n😀"}});
    assert_eq!(
        to_canonical_json(&value),
        r#"{"a":{"y":"\u007f\"\n\ud83d\ude00","z":null},"b":[1,"\u00e9"]}"#
    );
}

#[test]
fn control_characters_use_short_escapes_where_python_does() {
    let value = json!("\u{08}\u{0c}\t\r\u{01}/");
    assert_eq!(to_canonical_json(&value), r#""\b\f\t\r\u0001/""#);
}
