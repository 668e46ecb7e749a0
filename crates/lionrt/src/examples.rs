//! A short example on every `--help` page: one table, keyed by the command's
//! path, attached to the clap command before parsing (and to the man pages
//! `cargo xtask man` writes). A test holds every command to having one.

/// `(command path, example lines)`.
const EXAMPLES: &[(&str, &str)] = &[
    (
        "",
        "lionrt run                                  # the scripted demo, no agent CLI needed\n  lionrt run --provider claude --prompt 'fix the flaky test'\n  lionrt sessions ls --since 2h\n  lionrt monitor --watch",
    ),
    (
        "state",
        "lionrt state init\n  lionrt state history session run-1730000000000000",
    ),
    (
        "state init",
        "lionrt state init                           # create or migrate the store, print its schema",
    ),
    (
        "state create",
        "lionrt state create session s1 running --reason run.started.ok",
    ),
    (
        "state transition",
        "lionrt state transition session s1 completed --reason run.completed.ok --expect running",
    ),
    ("state history", "lionrt state history session s1 --json"),
    ("state health", "lionrt state health --all"),
    ("state stats", "lionrt state stats"),
    ("state checkpoint", "lionrt state checkpoint"),
    ("state vacuum", "lionrt state vacuum"),
    (
        "state prune",
        "lionrt state prune --older-than 30d --dry-run",
    ),
    (
        "state doctor",
        "lionrt state doctor --dry-run                # which sessions would be swept",
    ),
    (
        "state import",
        "lionrt state import --from-lionagi ~/.lionagi/state.db --dry-run",
    ),
    (
        "admission",
        "lionrt admission check tools.json --format sarif",
    ),
    (
        "admission check",
        "lionrt admission check tools.json --format sarif\n  cat tools.jsonl | lionrt admission check - --json",
    ),
    ("mcp", "lionrt mcp audit --config .mcp.json"),
    ("mcp ls", "lionrt mcp ls --config .mcp.json"),
    ("mcp audit", "lionrt mcp audit --config .mcp.json --json"),
    (
        "mcp call",
        "lionrt mcp call fs read_text_file --args '{\"path\": \"README.md\"}'",
    ),
    (
        "mcp serve",
        "lionrt mcp serve                            # stdio: claude mcp add lionrt -- lionrt mcp serve\n  lionrt mcp serve --http 127.0.0.1:8766       # streamable HTTP at /mcp, loopback only\n  LIONRT_MCP_TOKEN=... lionrt mcp serve --http 0.0.0.0:8766 --allow-host lion.lan",
    ),
    (
        "sandbox",
        "lionrt sandbox create --repo . && lionrt sandbox ls",
    ),
    ("sandbox create", "lionrt sandbox create --repo ."),
    ("sandbox ls", "lionrt sandbox ls --repo ."),
    ("sandbox merge", "lionrt sandbox merge SANDBOX_ID --repo ."),
    (
        "sandbox cleanup",
        "lionrt sandbox cleanup SANDBOX_ID --repo .",
    ),
    ("plugin", "lionrt plugin list\n  lionrt plugin trust hello"),
    ("plugin list", "lionrt plugin list --json"),
    ("plugin show", "lionrt plugin show hello"),
    (
        "plugin trust",
        "lionrt plugin trust hello --yes             # records the plugin content hash",
    ),
    ("plugin untrust", "lionrt plugin untrust hello"),
    ("plugin verify", "lionrt plugin verify hello"),
    ("plugin enable", "lionrt plugin enable hello"),
    ("plugin disable", "lionrt plugin disable hello"),
    ("plugin gc", "lionrt plugin gc"),
    (
        "outbox",
        "lionrt outbox ls --status pending\n  lionrt outbox deliver --watch 5",
    ),
    ("outbox ls", "lionrt outbox ls --status dead_letter"),
    ("outbox show", "lionrt outbox show ROW_ID"),
    (
        "outbox enqueue",
        "lionrt outbox enqueue '{\"done\": true}' -- notify-send '{payload}'",
    ),
    ("outbox ack", "lionrt outbox ack ROW_ID"),
    ("outbox retry", "lionrt outbox retry ROW_ID"),
    (
        "outbox purge",
        "lionrt outbox purge --older-than 604800 --dry-run       # a week, in seconds",
    ),
    (
        "outbox deliver",
        "lionrt outbox deliver --watch 5 --timeout-secs 30",
    ),
    (
        "outbox sweep",
        "lionrt outbox sweep --older-than 2592000     # terminal rows older than 30 days",
    ),
    (
        "run",
        "lionrt run                                  # the scripted demo\n  lionrt run --provider claude --prompt 'fix the flaky test' --effort high\n  lionrt run --provider codex --prompt 'add a test' --sandbox --mcp-config .mcp.json",
    ),
    (
        "flow",
        "lionrt flow --plan plan.yaml --max-concurrent 2   # a DAG of ops (docs/schemas/plan.schema.json)\n  lionrt flow --plan plan.json --max-ops 20 --id review-1 --json",
    ),
    (
        "fanout",
        "lionrt fanout 3 --prompt 'review the parser' --synthesis -m claude/sonnet\n  lionrt fanout 2 --prompt 'summarise' --script worker.json   # scripted legs",
    ),
    (
        "play",
        "lionrt play list\n  lionrt play review 'the parser' --scope core     # ~/.lionagi/playbooks/review.playbook.yaml\n  lionrt play help review                     # the playbook's arguments",
    ),
    (
        "orchestrate",
        "lionrt o flow --plan plan.yaml\n  lionrt o fanout 3 --prompt 'review the parser' --synthesis",
    ),
    (
        "orchestrate flow",
        "lionrt o flow --plan plan.yaml --max-concurrent 4",
    ),
    (
        "flow resume",
        "lionrt flow resume review-1                  # after a crash: finished ops are not run again\n  lionrt flow resume review-1 --retry-failed   # legs that died run again as ID-OP.2",
    ),
    (
        "orchestrate flow resume",
        "lionrt o flow resume review-1 --retry-failed",
    ),
    (
        "orchestrate fanout",
        "lionrt o fanout 3 --prompt 'review the parser' --synthesis -m codex/gpt-5",
    ),
    (
        "kill",
        "lionrt kill run-1730000000000000 --grace 5\n  lionrt kill --all-stale --dry-run",
    ),
    ("mirror", "lionrt mirror --once --source claude"),
    (
        "schedule",
        "lionrt schedule ls\n  lionrt schedule apply schedules.json --dry-run",
    ),
    (
        "schedule create",
        "lionrt schedule create nightly --cron '0 4 * * *' --prompt 'triage new issues' --workspace .",
    ),
    ("schedule ls", "lionrt schedule ls --json"),
    ("schedule show", "lionrt schedule show nightly"),
    ("schedule enable", "lionrt schedule enable nightly"),
    ("schedule disable", "lionrt schedule disable nightly"),
    ("schedule delete", "lionrt schedule delete nightly"),
    ("schedule trigger", "lionrt schedule trigger nightly"),
    ("schedule runs", "lionrt schedule runs nightly --limit 20"),
    (
        "schedule validate",
        "lionrt schedule validate schedules.json",
    ),
    (
        "schedule apply",
        "lionrt schedule apply schedules.json --dry-run\n  lionrt schedule apply schedules.json --prune",
    ),
    ("daemon", "lionrt daemon --outbox --mirror --interval 5"),
    ("sessions", "lionrt sessions ls --status failed --since 24h"),
    (
        "sessions ls",
        "lionrt sessions ls --status running --limit 20",
    ),
    (
        "sessions show",
        "lionrt sessions show run-17                 # a unique prefix is enough",
    ),
    (
        "sessions messages",
        "lionrt sessions messages run-17 --follow",
    ),
    ("monitor", "lionrt monitor --watch --interval 2"),
    ("lifecycle", "lionrt lifecycle run-1730000000000000 --json"),
    ("serve", "lionrt serve --listen 127.0.0.1:8765 --read-only"),
    ("doctor", "lionrt doctor --json"),
    (
        "completions",
        "lionrt completions bash > ~/.local/share/bash-completion/completions/lionrt",
    ),
];

/// The example of the command at `path` (`""` is the top level; `"state
/// init"` a subcommand).
pub(crate) fn example(path: &str) -> Option<&'static str> {
    EXAMPLES.iter().find(|(p, _)| *p == path).map(|(_, e)| *e)
}

/// `cmd` with its examples attached to every (sub)command's help.
pub(crate) fn attach(cmd: clap::Command) -> clap::Command {
    fn walk(cmd: clap::Command, path: &str) -> clap::Command {
        let mut cmd = match example(path) {
            Some(e) => cmd.after_help(format!("Example:\n  {e}")),
            None => cmd,
        };
        let names: Vec<String> = cmd
            .get_subcommands()
            .map(|s| s.get_name().to_owned())
            .collect();
        for name in names {
            let sub_path = if path.is_empty() {
                name.clone()
            } else {
                format!("{path} {name}")
            };
            cmd = cmd.mut_subcommand(&name, |s| walk(s, &sub_path));
        }
        cmd
    }
    walk(cmd, "")
}

/// Writes the man pages of every visible command into `dir`: `lionrt.1`
/// for the top level, `lionrt-state-init.1` for `lionrt state init`, each
/// with its example. Returns how many it wrote.
pub(crate) fn write_man_pages(dir: &std::path::Path) -> anyhow::Result<usize> {
    use anyhow::Context as _;
    fn walk(
        cmd: &clap::Command,
        name: &str,
        dir: &std::path::Path,
        n: &mut usize,
    ) -> anyhow::Result<()> {
        let page = cmd.clone().name(name.to_owned());
        let mut text = Vec::new();
        clap_mangen::Man::new(page)
            .render(&mut text)
            .with_context(|| format!("rendering the man page of {name}"))?;
        let file = dir.join(format!("{name}.1"));
        std::fs::write(&file, text).with_context(|| format!("writing {}", file.display()))?;
        *n += 1;
        // `help` is clap's own, added by build().
        for sub in cmd
            .get_subcommands()
            .filter(|s| !s.is_hide_set() && s.get_name() != "help")
        {
            walk(sub, &format!("{name}-{}", sub.get_name()), dir, n)?;
        }
        Ok(())
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut cmd = attach(<crate::Cli as clap::CommandFactory>::command());
    cmd.build();
    let mut n = 0;
    walk(&cmd, "lionrt", dir, &mut n)?;
    Ok(n)
}

/// `lionrt __man DIR`.
pub(crate) fn man_pages(dir: &std::path::Path) -> anyhow::Result<std::process::ExitCode> {
    let n = write_man_pages(dir)?;
    crate::out::line(format!("wrote {n} man pages to {}", dir.display()));
    Ok(std::process::ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    fn paths(cmd: &clap::Command, prefix: &str, out: &mut Vec<String>) {
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            let path = if prefix.is_empty() {
                sub.get_name().to_owned()
            } else {
                format!("{prefix} {}", sub.get_name())
            };
            out.push(path.clone());
            paths(sub, &path, out);
        }
    }

    /// Every visible command has an example on its help page, and every
    /// example belongs to a command that exists.
    #[test]
    fn every_help_page_has_an_example() {
        let cmd = super::attach(crate::Cli::command());
        let mut all = vec![String::new()];
        paths(&cmd, "", &mut all);
        for path in &all {
            assert!(
                super::example(path).is_some(),
                "no example for `lionrt {path}`"
            );
        }
        for (path, _) in super::EXAMPLES {
            assert!(
                all.iter().any(|p| p == path),
                "an example for no command: {path}"
            );
        }
        // Every lionrt command an example shows parses as written.
        for (path, example) in super::EXAMPLES {
            for line in example.lines() {
                for part in line.split(" && ").flat_map(|p| p.split(" | ")) {
                    let part = part.split(" > ").next().unwrap_or_default();
                    let words = shlex::split(part).expect("an example splits into words");
                    if words.first().map(String::as_str) != Some("lionrt") {
                        continue;
                    }
                    if let Err(e) = crate::Cli::try_parse_from(&words) {
                        panic!("the example of `lionrt {path}` does not parse: {part}\n{e}");
                    }
                }
            }
        }
        let mut run = cmd.find_subcommand("run").expect("run").clone();
        let help = run.render_long_help().to_string();
        assert!(help.contains("Example:\n  lionrt run"), "{help}");
    }

    /// A man page per visible command, each carrying its example.
    #[test]
    fn man_pages_are_written_for_every_command() {
        let dir = tempfile::tempdir().expect("tempdir");
        let n = super::write_man_pages(dir.path()).expect("man pages");
        let mut all = vec![String::new()];
        paths(&crate::Cli::command(), "", &mut all);
        assert_eq!(n, all.len());
        let run = std::fs::read_to_string(dir.path().join("lionrt-run.1")).expect("run page");
        assert!(run.contains("lionrt run"), "{run}");
        let init =
            std::fs::read_to_string(dir.path().join("lionrt-state-init.1")).expect("init page");
        assert!(init.contains("create or migrate"), "{init}");
    }
}
