//! How a registry finds bundles and trust: plugin roots and the settings file.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::settings::SettingsFile;

/// How a [`Registry`] finds bundles and trust.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Directories whose subdirectories holding a `plugin.yaml` are
    /// bundles, in precedence order: the first bundle with a name wins, a
    /// later one with the same name is reported as a problem.
    pub plugin_roots: Vec<PathBuf>,
    /// The user-level settings file holding trust records and the
    /// disabled list.
    pub settings_path: PathBuf,
    /// The largest declared file read, in bytes (default 64 MiB). A
    /// manifest is further capped at 1 MiB.
    pub max_file_size: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            plugin_roots: Vec::new(),
            settings_path: PathBuf::new(),
            max_file_size: 64 * 1024 * 1024,
        }
    }
}

impl Config {
    /// The variable naming the user plugin directory instead of
    /// `$HOME/.lionagi/plugins`.
    pub const PLUGINS_VAR: &'static str = "LIONAGI_PLUGINS_DIR";

    /// The configuration of the command line: settings from
    /// `$LIONAGI_SETTINGS_FILE` or `$HOME/.lionagi/settings.yaml`; roots
    /// `$LIONAGI_PLUGINS_DIR` or `$HOME/.lionagi/plugins`, then
    /// `<project>/.lionagi/plugins` if a project directory is given. `None`
    /// when neither a settings variable nor `HOME` is set.
    pub fn from_env(project: Option<&Path>) -> Option<Config> {
        Self::from_env_with(|name| std::env::var_os(name), project)
    }

    /// [`Config::from_env`] over any variable source.
    pub fn from_env_with(
        lookup: impl Fn(&str) -> Option<OsString>,
        project: Option<&Path>,
    ) -> Option<Config> {
        let settings = SettingsFile::locate_with(&lookup)?;
        let mut plugin_roots = Vec::new();
        if let Some(dir) = lookup(Self::PLUGINS_VAR).filter(|d| !d.is_empty()) {
            plugin_roots.push(PathBuf::from(dir));
        } else if let Some(home) = lookup("HOME").filter(|h| !h.is_empty()) {
            plugin_roots.push(Path::new(&home).join(".lionagi").join("plugins"));
        }
        if let Some(project) = project {
            plugin_roots.push(project.join(".lionagi").join("plugins"));
        }
        Some(Config {
            plugin_roots,
            settings_path: settings.path().to_path_buf(),
            ..Config::default()
        })
    }
}
