//! Finding (and, when needed, building) the fixture binaries from a test
//! or bench of another package, where `CARGO_BIN_EXE_*` does not reach.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Overrides where the binaries are looked for (nothing is built then).
pub const DIR_VAR: &str = "MCP_TEST_SERVERS_DIR";

/// The well-behaved server binary's name.
pub const BENIGN: &str = "mcp-benign-server";
/// The misbehaving server binary's name.
pub const HOSTILE: &str = "mcp-hostile-server";
/// The fake khive daemon's name (context-khive's tests).
pub const KHIVE: &str = "mcp-khive-server";

/// The path of fixture binary `name` ([`BENIGN`], [`HOSTILE`] or [`KHIVE`]).
///
/// Unless [`DIR_VAR`] names a directory, the first call in a process runs
/// `cargo build -p mcp-test-servers --bins` into the target directory and
/// profile the calling test binary was built in (a no-op when they are
/// fresh), so a clean clone needs nothing built beforehand.
///
/// # Errors
///
/// A message naming what failed: no cargo, a failed build, a missing file.
pub fn locate(name: &str) -> Result<PathBuf, String> {
    static DIR: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let dir = DIR.get_or_init(build_dir).clone()?;
    let path = dir.join(name);
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!("fixture binary {} does not exist", path.display()))
    }
}

fn build_dir() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os(DIR_VAR) {
        return Ok(PathBuf::from(dir));
    }
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let profile_dir = profile_dir(&exe)
        .ok_or_else(|| format!("no target profile directory above {}", exe.display()))?;
    let target_dir = profile_dir
        .parent()
        .ok_or_else(|| format!("no target directory above {}", profile_dir.display()))?;
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => "dev".to_owned(),
        Some(other) => other.to_owned(),
        None => {
            return Err(format!(
                "unnamed profile directory {}",
                profile_dir.display()
            ));
        }
    };
    let cargo = std::env::var_os("CARGO")
        .or_else(|| option_env!("CARGO").map(Into::into))
        .unwrap_or_else(|| "cargo".into());
    let output = Command::new(&cargo)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "build",
            "--offline",
            "--quiet",
            "-p",
            "mcp-test-servers",
            "--bins",
        ])
        .arg("--profile")
        .arg(&profile)
        .arg("--target-dir")
        .arg(target_dir)
        .output()
        .map_err(|e| format!("running {}: {e}", Path::new(&cargo).display()))?;
    if !output.status.success() {
        return Err(format!(
            "building the fixture servers failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(profile_dir.to_owned())
}

/// `target/<profile>` for a test or bench binary (`target/<profile>/deps/x`)
/// or a package binary (`target/<profile>/x`).
fn profile_dir(exe: &Path) -> Option<&Path> {
    let parent = exe.parent()?;
    if parent.file_name().is_some_and(|n| n == "deps") {
        parent.parent()
    } else {
        Some(parent)
    }
}
