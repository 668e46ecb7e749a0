//! A CI check: serde_json's `raw_value`, `arbitrary_precision` and
//! `preserve_order` features stay off in the `lionrt` build. With
//! `raw_value` on (cargo unifies features), every `serde_json::Value`
//! parse in the binary reads an object keyed
//! `$serde_json::private::RawValue` as the JSON text in that key's string,
//! which lets an MCP server show the tool gate a schema other than the one
//! the agent CLI reads. lionrt's `raw_value` test is the main guard (it
//! runs in the binary's own build); this names the crate that turned the
//! feature on, before anything is compiled: in lionrt's build, and in the
//! whole workspace's (what `cargo test --workspace` compiles, where every
//! member's dev-dependencies count, so the guard tests would see it too).
//! `arbitrary_precision` would do the same with the
//! `$serde_json::private::Number` key. `preserve_order` would make a
//! `Value`'s members iterate in the order written, while mcp-admission's
//! batch arena sorts them as the default map does: the CLI and the library
//! could walk a schema in different orders (and spend their budgets
//! differently).

use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::say;

/// What `cargo tree`, after a build's scope, is asked: which crates
/// enable which serde_json features, for every target platform.
const TREE_ARGS: [&str; 6] = ["-e", "features", "-i", "serde_json", "--target", "all"];

/// The builds checked: lionrt's (its dev-dependencies included), then the
/// whole workspace's; each with the scope that selects it.
const BUILDS: [(&str, &[&str]); 2] = [
    ("the lionrt build", &["-p", "lionrt"]),
    (
        "the workspace build (`cargo test --workspace`, dev-dependencies included)",
        &["--workspace"],
    ),
];

/// The characters `cargo tree` draws its tree with.
const TREE_ART: [char; 5] = ['│', '├', '└', '─', ' '];

/// The serde_json features that must stay off, and why.
const FORBIDDEN: [(&str, &str); 3] = [
    (
        "raw_value",
        "with it on, a `serde_json::Value` parse reads an object keyed \
         `$serde_json::private::RawValue` as other JSON, which an MCP server can use \
         to show the tool gate a schema the agent CLI does not see",
    ),
    (
        "arbitrary_precision",
        "with it on, a `serde_json::Value` parse reads an object keyed \
         `$serde_json::private::Number` as a number, which an MCP server can use \
         to show the tool gate a schema the agent CLI does not see",
    ),
    (
        "preserve_order",
        "with it on, a `serde_json::Value`'s members iterate in the order written, \
         while `lionrt admission check`'s arena sorts them: the CLI and the library \
         would walk a schema in different orders",
    ),
];

/// The lines of an inverted `cargo tree -e features` output under
/// serde_json's `feature` (the crates that enable it), or `None` when the
/// feature is not in the tree.
pub(crate) fn enablers(tree: &str, feature: &str) -> Option<Vec<String>> {
    // A node's column: the tree art before its text. Below the feature come
    // deeper nodes, and section headers (`[dev-dependencies]`) at its own
    // column; the next node at its column or left of it ends them.
    let column = |l: &str| l.chars().take_while(|c| TREE_ART.contains(c)).count();
    let text = |l: &str| l.trim_start_matches(TREE_ART).to_owned();
    let mut lines = tree.lines();
    let node = format!("serde_json feature \"{feature}\"");
    let own = column(lines.find(|l| text(l) == node)?);
    let below = lines
        .take_while(|l| column(l) > own || (column(l) == own && text(l).starts_with('[')))
        .map(text)
        .filter(|l| !l.starts_with('['))
        .collect();
    Some(below)
}

/// Fails, naming the enabling crates, when a [`FORBIDDEN`] feature is among
/// serde_json's features in lionrt's build or the workspace's.
pub(crate) fn check() -> Result<()> {
    for (build, scope) in BUILDS {
        say(&format!(
            "==> cargo tree {} {}",
            scope.join(" "),
            TREE_ARGS.join(" ")
        ));
        let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .arg("tree")
            .args(scope)
            .args(TREE_ARGS)
            .output()
            .context("running cargo tree")?;
        if !out.status.success() {
            bail!(
                "cargo tree failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let tree = String::from_utf8_lossy(&out.stdout);
        if !tree.contains("serde_json v") {
            bail!("cargo tree printed no serde_json node; cannot check its features:\n{tree}");
        }
        for (feature, why) in FORBIDDEN {
            if let Some(by) = enablers(&tree, feature) {
                bail!(
                    "serde_json's `{feature}` feature is on in {build} (enabled by: {}); it \
                     must stay off: {why}",
                    by.join("; ")
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::enablers;

    const ON: &str = "serde_json v1.0.154
├── serde_json feature \"default\"
│   └── lionrt v0.1.0 (/w/crates/lionrt)
├── serde_json feature \"raw_value\"
│   ├── transcript-mirror v0.1.0 (/w/crates/transcript-mirror) (*)
│   [dev-dependencies]
│   └── other v0.1.0 (/w/crates/other)
│       └── lionrt v0.1.0 (/w/crates/lionrt) (*)
└── serde_json feature \"std\"
    └── serde_json feature \"default\" (*)
";

    #[test]
    fn the_enablers_of_raw_value_are_named() {
        assert_eq!(
            enablers(ON, "raw_value"),
            Some(vec![
                "transcript-mirror v0.1.0 (/w/crates/transcript-mirror) (*)".to_owned(),
                "other v0.1.0 (/w/crates/other)".to_owned(),
                "lionrt v0.1.0 (/w/crates/lionrt) (*)".to_owned(),
            ])
        );
    }

    #[test]
    fn a_tree_without_raw_value_passes() {
        let off = ON.replace("\"raw_value\"", "\"unbounded_depth\"");
        assert_eq!(enablers(&off, "raw_value"), None);
    }

    #[test]
    fn each_feature_is_looked_up_by_its_own_name() {
        let order = ON.replace("\"raw_value\"", "\"preserve_order\"");
        assert_eq!(enablers(&order, "raw_value"), None);
        assert_eq!(
            enablers(&order, "preserve_order").map(|by| by.len()),
            Some(3)
        );
        assert_eq!(enablers(ON, "arbitrary_precision"), None);
    }
}
