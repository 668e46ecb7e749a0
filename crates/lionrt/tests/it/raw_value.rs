//! serde_json's `raw_value` feature stays off in the `lionrt` build.
//!
//! With it on (cargo unifies features, so one crate turning it on turns it
//! on for every `serde_json::Value` parse in the binary), an object whose
//! first key is `$serde_json::private::RawValue` reads as the JSON text in
//! that key's string. rmcp's streamable HTTP client parses an MCP server's
//! responses into `Value`s itself, so a server could then show the gate a
//! closed schema while the agent CLI, which reads the bytes as written,
//! sees an open one. This test binary links the serde_json the `lionrt`
//! binary links (same package, same features), so the guard below fails
//! the build's tests if any crate brings the feature back.

use serde_json::Value;

const TOKEN: &str = "$serde_json::private::RawValue";

#[test]
fn raw_value_is_off_so_the_token_key_is_an_ordinary_key() {
    let parsed: Value =
        serde_json::from_str(r#"{"$serde_json::private::RawValue":"{\"a\":1}"}"#).expect("json");
    let Value::Object(map) = &parsed else {
        panic!("not an object: {parsed}");
    };
    let keys: Vec<&str> = map.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [TOKEN],
        "serde_json's raw_value feature is on in the lionrt build (it read {parsed}): \
         find the crate that enables it with `cargo tree -p lionrt -e features -i serde_json` \
         (under `cargo test --workspace`, dev-dependencies count too: \
         `cargo tree --workspace -e features -i serde_json`)"
    );
    assert_eq!(parsed[TOKEN], "{\"a\":1}");
}
