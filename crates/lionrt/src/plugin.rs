//! `lionrt plugin ...`: content-pinned plugin trust from the command line.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use plugin_trust::{Config, Registry, TrustState};
use serde::Serialize;
use serde_json::Value;

use crate::out;

#[derive(Debug, Args)]
pub(crate) struct PluginArgs {
    /// The user settings file holding trust records (default: $LIONAGI_SETTINGS_FILE or ~/.lionagi/settings.yaml).
    #[arg(long, global = true)]
    settings: Option<PathBuf>,
    /// A plugin root to scan instead of the defaults ($LIONAGI_PLUGINS_DIR or ~/.lionagi/plugins). Repeatable.
    #[arg(long = "plugins-dir", global = true)]
    plugins_dirs: Vec<PathBuf>,
    /// A project whose .lionagi/plugins is scanned too.
    #[arg(long, global = true)]
    project: Option<PathBuf>,
    #[command(subcommand)]
    cmd: PluginCmd,
}

#[derive(Debug, Subcommand)]
pub(crate) enum PluginCmd {
    /// List discovered plugins with their trust state (untrusted, trusted, changed).
    #[command(visible_alias = "ls")]
    List,
    /// Disclose everything a plugin declares: files and hashes, tools, every hook argv in full.
    #[command(visible_alias = "info")]
    Show {
        /// Plugin name.
        name: String,
    },
    /// Trust exactly the bytes a plugin carries now (shows the disclosure first).
    Trust {
        /// Plugin name.
        name: String,
        /// Trust without asking.
        #[arg(long)]
        yes: bool,
    },
    /// Remove a plugin's trust record.
    Untrust {
        /// Plugin name.
        name: String,
    },
    /// Re-hash a plugin's files against its trust record (exit 1 unless trusted).
    Verify {
        /// Plugin name.
        name: String,
    },
    /// Enable a plugin.
    Enable {
        /// Plugin name.
        name: String,
    },
    /// Disable a plugin: its targets stop being handed out at once.
    Disable {
        /// Plugin name.
        name: String,
    },
    /// Remove trust records whose bundle directory is gone; prints the names pruned.
    Gc,
}

fn registry(args: &PluginArgs) -> Result<Registry> {
    let mut config = Config::from_env(args.project.as_deref()).unwrap_or_default();
    if let Some(settings) = &args.settings {
        config.settings_path = settings.clone();
    }
    if !args.plugins_dirs.is_empty() {
        config.plugin_roots = args.plugins_dirs.clone();
        if let Some(project) = &args.project {
            config
                .plugin_roots
                .push(project.join(".lionagi").join("plugins"));
        }
    }
    if config.settings_path.as_os_str().is_empty() {
        bail!("no settings file: set --settings, LIONAGI_SETTINGS_FILE or HOME");
    }
    Ok(Registry::new(config))
}

fn emit<T: Serialize>(json: bool, value: &T, human: impl FnOnce()) {
    if json {
        out::json(&serde_json::to_value(value).unwrap_or(Value::Null));
    } else {
        human();
    }
}

fn pretty<T: Serialize>(value: &T) {
    out::line(serde_json::to_string_pretty(value).unwrap_or_default());
}

fn confirm(question: &str) -> Result<bool> {
    let mut stderr = std::io::stderr().lock();
    write!(stderr, "{question} [y/N] ").context("prompting")?;
    stderr.flush().context("prompting")?;
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .context("reading the answer")?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

pub(crate) fn run(json: bool, args: PluginArgs) -> Result<ExitCode> {
    let registry = registry(&args)?;
    match args.cmd {
        PluginCmd::List => {
            let report = registry.list()?;
            emit(json, &report, || {
                out::line(format!(
                    "{:<24} {:<10} {:<10} {:<8} {:<10} BUNDLE",
                    "NAME", "VERSION", "STATE", "ENABLED", "COMPATIBLE"
                ));
                for p in &report.plugins {
                    out::line(format!(
                        "{:<24} {:<10} {:<10} {:<8} {:<10} {}",
                        p.name,
                        p.version,
                        p.state.as_str(),
                        p.enabled,
                        p.compatible,
                        p.bundle_path.display()
                    ));
                }
                for problem in &report.problems {
                    out::line(format!(
                        "problem: {}",
                        serde_json::to_string(problem).unwrap_or_default()
                    ));
                }
            });
        }
        PluginCmd::Show { name } => {
            let disclosure = registry.show(&name)?;
            emit(json, &disclosure, || pretty(&disclosure));
        }
        PluginCmd::Trust { name, yes } => {
            let disclosure = registry.show(&name)?;
            if !yes {
                if json || !std::io::stdin().is_terminal() {
                    bail!(
                        "refusing to trust {name} without --yes (run `lionrt plugin show {name}` to review it)"
                    );
                }
                pretty(&disclosure);
                if !confirm(&format!("Trust exactly these bytes of {name}?"))? {
                    bail!("not trusted");
                }
            }
            let report = registry.trust_as_disclosed(&disclosure)?;
            emit(json, &report, || {
                out::line(format!(
                    "trusted {} (manifest {})",
                    report.name, report.record.manifest
                ))
            });
        }
        PluginCmd::Untrust { name } => {
            let removed = registry.untrust(&name)?;
            emit(
                json,
                &serde_json::json!({"name": name, "removed": removed}),
                || {
                    out::line(if removed {
                        format!("untrusted {name}")
                    } else {
                        format!("{name} had no trust record")
                    });
                },
            );
        }
        PluginCmd::Verify { name } => {
            let report = registry.verify(&name)?;
            emit(json, &report, || {
                out::line(format!("{}: {}", report.name, report.state.as_str()));
                for f in &report.files {
                    out::line(format!(
                        "  {:<40} {}",
                        f.path,
                        if f.hash.matches { "ok" } else { "CHANGED" }
                    ));
                }
            });
            if report.state != TrustState::Trusted {
                return Ok(ExitCode::from(1));
            }
        }
        PluginCmd::Enable { name } => {
            registry.set_enabled(&name, true)?;
            emit(
                json,
                &serde_json::json!({"name": name, "enabled": true}),
                || out::line(format!("enabled {name}")),
            );
        }
        PluginCmd::Disable { name } => {
            registry.set_enabled(&name, false)?;
            emit(
                json,
                &serde_json::json!({"name": name, "enabled": false}),
                || out::line(format!("disabled {name}")),
            );
        }
        PluginCmd::Gc => {
            let pruned = registry.gc()?;
            emit(json, &pruned, || {
                if pruned.is_empty() {
                    out::line("nothing to prune");
                }
                for name in &pruned {
                    out::line(format!("pruned {name}"));
                }
            });
        }
    }
    Ok(ExitCode::SUCCESS)
}
