//! The runtime binary pulls this crate in only under its `khive` feature.

use std::process::Command;

/// The packages `lionrt` depends on (normal and build edges) with
/// `features`, from `cargo tree`.
fn lionrt_deps(features: &[&str]) -> Vec<String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command.current_dir(env!("CARGO_MANIFEST_DIR")).args([
        "tree",
        "--offline",
        "--quiet",
        "-p",
        "lionrt",
        "-e",
        "normal,build",
        "--prefix",
        "none",
        "--format",
        "{p}",
    ]);
    for f in features {
        command.args(["--features", f]);
    }
    let output = command.output().expect("run cargo tree");
    assert!(
        output.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect()
}

#[test]
fn the_core_builds_without_khive_and_the_feature_adds_it() {
    // contract: CTX-002
    let core = lionrt_deps(&[]);
    assert!(core.iter().any(|p| p == "lionrt"), "{core:?}");
    assert!(!core.iter().any(|p| p == "context-khive"), "{core:?}");
    let with = lionrt_deps(&["lionrt/khive"]);
    assert!(with.iter().any(|p| p == "context-khive"), "{with:?}");
}
