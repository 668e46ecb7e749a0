//! Tidy checks: repository rules that run as ordinary tests (`cargo test -p
//! xtask`) and as `cargo xtask tidy`. Dependencies come from `cargo
//! metadata`, never from parsing manifests by hand.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// Libraries whose normal dependencies are fixed by an invariant.
const PINNED_DEPENDENCIES: &[(&str, &[&str])] = &[
    // lifecycle-core does no I/O: no storage, process or async crate.
    ("lifecycle-core", &["serde", "serde_json", "thiserror"]),
    // mcp-admission embeds anywhere: serde_json and what serde_json already
    // pulls in (serde, memchr), serde_stacker so a batch parses JSON nested
    // past serde_json's recursion limit without overflowing the stack;
    // extras optional.
    (
        "mcp-admission",
        &[
            "serde_json",
            "serde",
            "memchr",
            "serde_stacker",
            "regex-automata",
        ],
    ),
];

/// The packages that may depend on anyhow: the binary and xtask.
const ANYHOW_ALLOWED: &[&str] = &["lionrt", "xtask"];

/// A workspace member as `cargo metadata` describes it.
#[derive(Debug, PartialEq, Eq)]
struct Package {
    name: String,
    manifest: PathBuf,
    /// Names of the normal (not dev, not build) dependencies, target-specific
    /// ones included.
    normal_dependencies: Vec<String>,
}

/// The workspace members, from `cargo metadata --no-deps` (which resolves
/// nothing and needs no network).
fn workspace_packages(root: &Path) -> Result<Vec<Package>, String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root)
        .output()
        .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let metadata: Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("cargo metadata printed no JSON: {e}"))?;
    packages_of(&metadata)
}

/// The packages of a `cargo metadata` document.
fn packages_of(metadata: &Value) -> Result<Vec<Package>, String> {
    let packages = metadata["packages"]
        .as_array()
        .ok_or("cargo metadata has no packages list")?;
    packages
        .iter()
        .map(|p| {
            let name = p["name"].as_str().ok_or("a package has no name")?;
            let manifest = p["manifest_path"]
                .as_str()
                .ok_or("a package has no manifest path")?;
            let normal_dependencies = p["dependencies"]
                .as_array()
                .map(|deps| {
                    deps.iter()
                        .filter(|d| d["kind"].is_null())
                        .filter_map(|d| d["name"].as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            Ok(Package {
                name: name.to_owned(),
                manifest: PathBuf::from(manifest),
                normal_dependencies,
            })
        })
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == "target") {
                continue;
            }
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The dependency rules over the workspace members.
fn package_problems(root: &Path, packages: &[Package]) -> Vec<String> {
    let mut problems = Vec::new();
    for package in packages {
        let name = &package.name;
        let dir = package.manifest.parent().unwrap_or(root);
        let rel = dir.strip_prefix(root).unwrap_or(dir).display().to_string();
        let deps = &package.normal_dependencies;
        if let Some((_, allowed)) = PINNED_DEPENDENCIES.iter().find(|(n, _)| n == name) {
            for d in deps.iter().filter(|d| !allowed.contains(&d.as_str())) {
                problems.push(format!(
                    "{rel}: dependency {d} breaks the crate's dependency invariant"
                ));
            }
        }
        if !ANYHOW_ALLOWED.contains(&name.as_str()) && deps.iter().any(|d| d == "anyhow") {
            problems.push(format!(
                "{rel}: anyhow belongs only in the binary and xtask"
            ));
        }
        // cargo metadata does not report lints; the table's presence is all
        // that is checked here (cargo itself rejects a malformed one).
        let manifest = std::fs::read_to_string(&package.manifest).unwrap_or_default();
        if !manifest.lines().any(|l| l.trim() == "[lints]") {
            problems.push(format!("{rel}: missing `[lints] workspace = true`"));
        }
    }
    problems
}

/// Every violation found, one line each.
pub(crate) fn check() -> Vec<String> {
    let root = crate::workspace_root();
    let mut problems = match workspace_packages(&root) {
        Ok(packages) => package_problems(&root, &packages),
        Err(e) => vec![e],
    };
    let mut files = Vec::new();
    rust_files(&root.join("crates"), &mut files);
    rust_files(&root.join("xtask"), &mut files);
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        if !text.starts_with("//!") {
            let rel = file.strip_prefix(&root).unwrap_or(&file);
            problems.push(format!("{}: must open with a `//!` line", rel.display()));
        }
    }
    problems.sort();
    problems
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::json;

    use super::{Package, package_problems, packages_of};

    #[test]
    fn the_repository_is_tidy() {
        let problems = super::check();
        assert!(problems.is_empty(), "tidy:\n{}", problems.join("\n"));
    }

    #[test]
    fn metadata_gives_normal_dependencies_only() {
        let metadata = json!({"packages": [{
            "name": "x",
            "manifest_path": "/ws/crates/x/Cargo.toml",
            "dependencies": [
                {"name": "serde", "kind": null},
                {"name": "libc", "kind": null, "target": "cfg(unix)"},
                {"name": "proptest", "kind": "dev"},
                {"name": "cc", "kind": "build"}
            ]
        }]});
        let packages = packages_of(&metadata).expect("packages");
        assert_eq!(
            packages,
            [Package {
                name: "x".into(),
                manifest: "/ws/crates/x/Cargo.toml".into(),
                normal_dependencies: vec!["serde".into(), "libc".into()],
            }]
        );
    }

    #[test]
    fn a_pinned_crate_with_an_extra_dependency_and_anyhow_in_a_library_are_reported() {
        let root = Path::new("/nonexistent-ws");
        let package = |name: &str, deps: &[&str]| Package {
            name: name.into(),
            manifest: root.join("crates").join(name).join("Cargo.toml"),
            normal_dependencies: deps.iter().map(|d| (*d).to_owned()).collect(),
        };
        let problems = package_problems(
            root,
            &[
                package("lifecycle-core", &["serde", "rusqlite"]),
                package("state-sqlite", &["anyhow"]),
                package("lionrt", &["anyhow"]),
            ],
        );
        assert!(
            problems.contains(
                &"crates/lifecycle-core: dependency rusqlite breaks the crate's dependency invariant"
                    .to_owned()
            ),
            "{problems:?}"
        );
        assert!(
            problems.contains(
                &"crates/state-sqlite: anyhow belongs only in the binary and xtask".to_owned()
            ),
            "{problems:?}"
        );
        assert!(
            !problems
                .iter()
                .any(|p| p.starts_with("crates/lionrt: anyhow")),
            "{problems:?}"
        );
    }
}
