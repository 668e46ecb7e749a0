//! Bundles, settings and registries built in temporary directories.

use std::path::{Path, PathBuf};

use plugin_trust::{Config, Registry};
use sha2::{Digest, Sha256};
use tempfile::TempDir;

/// A manifest declaring one file of every kind.
pub(crate) const KIT_MANIFEST: &str = r#"name: kit
version: "1.2.0"
description: every kind of declared file
lionagi: ">=0.9, <2"
x-vendor: {anything: [goes]}
capabilities:
  tools:
    - {name: echo, target: "bin/echo.sh:main"}
  hooks_external:
    PreToolUse:
      - matcher: Bash
        hooks:
          - {type: command, command: ["./hooks/pre.sh", "--flag"]}
          - {type: command, command: ["/bin/sh", "./hooks/check.sh", "arg with spaces"]}
  agents: [agents/reviewer.md]
  playbooks: [playbooks/ship.yaml]
  packs: [packs/base.yaml]
  providers:
    - {module: providers/acme.yaml}
"#;

/// The files of [`KIT_MANIFEST`].
pub(crate) const KIT_FILES: &[(&str, &str)] = &[
    ("bin/echo.sh", "#!/bin/sh\necho \"echo:$1\"\n"),
    ("hooks/pre.sh", "#!/bin/sh\necho \"pre $1\"\n"),
    ("hooks/check.sh", "echo \"check $1\"\n"),
    ("agents/reviewer.md", "# Reviewer\nReview carefully.\n"),
    ("playbooks/ship.yaml", "steps: [build, test, ship]\n"),
    ("packs/base.yaml", "pack: base\n"),
    (
        "providers/acme.yaml",
        "name: acme-cli\naliases: [acme]\nbinary: acme\nargs: [--json]\nenv_keys: [ACME_API_KEY]\n",
    ),
];

/// A temporary home for plugin roots and the settings file.
pub(crate) struct Env {
    pub(crate) tmp: TempDir,
    pub(crate) root: PathBuf,
    pub(crate) settings: PathBuf,
}

impl Env {
    pub(crate) fn new() -> Env {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().join("plugins");
        std::fs::create_dir_all(&root).expect("mkdir root");
        let settings = tmp.path().join("home").join("settings.yaml");
        Env {
            tmp,
            root,
            settings,
        }
    }

    pub(crate) fn config(&self) -> Config {
        Config {
            plugin_roots: vec![self.root.clone()],
            settings_path: self.settings.clone(),
            ..Config::default()
        }
    }

    pub(crate) fn registry(&self) -> Registry {
        Registry::new(self.config())
    }

    /// Writes a bundle named `dir` with a manifest and files.
    pub(crate) fn bundle(&self, dir: &str, manifest: &str, files: &[(&str, &str)]) -> PathBuf {
        let path = self.root.join(dir);
        std::fs::create_dir_all(&path).expect("mkdir bundle");
        std::fs::write(path.join("plugin.yaml"), manifest).expect("write manifest");
        for (rel, content) in files {
            self.write(dir, rel, content.as_bytes());
        }
        std::fs::canonicalize(path).expect("canonical bundle")
    }

    /// The kit bundle.
    pub(crate) fn kit(&self) -> PathBuf {
        self.bundle("kit", KIT_MANIFEST, KIT_FILES)
    }

    /// Overwrites (or creates) a bundle file in place.
    pub(crate) fn write(&self, dir: &str, rel: &str, content: &[u8]) {
        let path = self.root.join(dir).join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(path, content).expect("write file");
    }

    pub(crate) fn file(&self, dir: &str, rel: &str) -> PathBuf {
        self.root.join(dir).join(rel)
    }

    pub(crate) fn settings_text(&self) -> String {
        std::fs::read_to_string(&self.settings).unwrap_or_default()
    }

    pub(crate) fn write_settings(&self, text: &str) {
        std::fs::create_dir_all(self.settings.parent().expect("parent")).expect("mkdir");
        std::fs::write(&self.settings, text).expect("write settings");
    }
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Replaces `path` atomically with `content` (write + rename).
pub(crate) fn swap_in(path: &Path, content: &[u8], scratch: &Path) {
    std::fs::write(scratch, content).expect("write scratch");
    std::fs::rename(scratch, path).expect("rename");
}
