//! Tidy checks: repository rules that run as ordinary tests (`cargo test -p
//! xtask`) and as `cargo xtask tidy`.

use std::path::{Path, PathBuf};

/// Libraries whose normal dependencies are fixed by an invariant.
const PINNED_DEPENDENCIES: &[(&str, &[&str])] = &[
    // lifecycle-core does no I/O: no storage, process or async crate.
    ("lifecycle-core", &["serde", "serde_json", "thiserror"]),
    // mcp-admission embeds anywhere: serde_json by default, extras optional.
    ("mcp-admission", &["serde_json", "regex-automata"]),
];

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Names in the `[dependencies]` table of a manifest.
fn dependencies(manifest: &str) -> Vec<String> {
    let mut in_deps = false;
    let mut out = Vec::new();
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_deps = line == "[dependencies]";
            continue;
        }
        if in_deps && let Some((name, _)) = line.split_once(['=', '.']) {
            let name = name.trim();
            if !name.is_empty() && !name.starts_with('#') {
                out.push(name.to_owned());
            }
        }
    }
    out
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

/// Every violation found, one line each.
pub(crate) fn check() -> Vec<String> {
    let root = workspace_root();
    let mut problems = Vec::new();
    let Ok(crates) = std::fs::read_dir(root.join("crates")) else {
        return vec!["crates/ is not readable".into()];
    };
    for krate in crates.flatten() {
        let name = krate.file_name().to_string_lossy().into_owned();
        let Ok(manifest) = std::fs::read_to_string(krate.path().join("Cargo.toml")) else {
            continue;
        };
        let deps = dependencies(&manifest);
        if let Some((_, allowed)) = PINNED_DEPENDENCIES.iter().find(|(n, _)| *n == name) {
            for d in deps.iter().filter(|d| !allowed.contains(&d.as_str())) {
                problems.push(format!(
                    "crates/{name}: dependency {d} breaks the crate's dependency invariant"
                ));
            }
        }
        if name != "lionrt" && deps.iter().any(|d| d == "anyhow") {
            problems.push(format!(
                "crates/{name}: anyhow belongs only in the binary and xtask"
            ));
        }
        if !manifest.contains("[lints]") {
            problems.push(format!("crates/{name}: missing `[lints] workspace = true`"));
        }
    }
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
    #[test]
    fn the_repository_is_tidy() {
        let problems = super::check();
        assert!(problems.is_empty(), "tidy:\n{}", problems.join("\n"));
    }

    #[test]
    fn dependency_parsing_sees_tables_and_dotted_keys() {
        let deps = super::dependencies(
            "[package]\nname = \"x\"\n[dependencies]\nserde.workspace = true\ntokio = { version = \"1\" }\n[dev-dependencies]\nproptest = \"1\"\n",
        );
        assert_eq!(deps, ["serde", "tokio"]);
    }
}
