//! The destructive-command guard: refuses tool calls whose arguments carry
//! a destructive command, read the way the shell will run it.

mod rules;
mod shell;
mod sql;

use serde_json::Value;

use crate::call::ToolCall;
use crate::control::Control;
use crate::result::GateResult;

/// A destructive command found in a call's arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The rule that matched, e.g. `"recursive-rm"`.
    pub rule: &'static str,
    /// The JSON pointer of the argument that carries it, e.g. `/command`.
    pub pointer: String,
}

/// Refuses calls whose arguments carry a destructive command, read the way
/// the shell will run it.
///
/// Every string anywhere in the arguments (and every object key) is read as
/// a command line, and every array of strings as an argv (and, joined with
/// spaces, as a command line too). A string that holds JSON is read as JSON
/// as well. See the crate README for the full list of what is refused, the
/// rule names and the stated limits; in short:
///
/// * **Reading.** The text is parsed as `sh` parses it: quoting (`'…'`,
///   `"…"`, `$'…'` with its escapes, backslashes, line continuations),
///   parameters (`$HOME`, `~`, variables assigned earlier in the same text),
///   brace expansion, redirections anywhere in a command, pipes, `;`, `&&`,
///   `||`, `&`, subshells, groups, `if`/`while`/`for` bodies, functions,
///   here-documents and here-strings, and every command substitution (which
///   runs wherever it sits).
/// * **Resolution.** The command a wrapper starts is read as the command:
///   `env` (also `-S`), `sudo`, `doas`, `nice`, `ionice`, `nohup`,
///   `timeout`, `command`, `exec`, `time`, `stdbuf`, `setsid`, `chroot`,
///   `taskset`, `chrt`, `xargs`, `busybox`, `pkexec`, `npx`, `flock`,
///   `su -c`, `runuser`, `script -c`, `ssh HOST CMD`, `watch`, `find -exec`,
///   `eval`, `trap`, `alias`, git aliases given with `-c alias.X=…`. Shells
///   (`sh`, `bash`, `zsh`, `dash`, `ksh`, … `-c`, here-documents) are
///   parsed again; Python, Perl, Ruby, Node, PHP and awk code (`-c`, `-e`,
///   `-r`, the awk program) is read for its string literals (each as a
///   command line, and adjacent ones in a list as an argv), SQL and
///   recursive-delete APIs.
/// * **Options.** Each guarded tool's options are read with its own option
///   table, the way GNU getopt and git's parse-options read them: clustered
///   or separate short flags, values attached or in the next word, long
///   options by any unambiguous prefix (`rm --rec`, `git push --force-w`),
///   `--` ending options. A prefix that could be several options counts as
///   all of them (fail closed).
/// * **Paths** are normalised (`//dev//sda`, `/dev/./sda`, `/dev/../dev/sda`,
///   trailing slashes, `~`, `$HOME`, a relative path after `cd /dev`).
/// * **Fail closed** (rule `unreadable-command`): a command name that is a
///   command substitution (unless it only prints its own words, as
///   `$(which rm)`, which is then read as those words), a command
///   substitution among the arguments of a guarded command (`rm $(…)`,
///   `git push … $(…)`), `eval` or `sh -c` of a substitution, a shell or
///   script interpreter reading its program from a pipe (`curl … | sh`), code
///   given to an interpreter this guard cannot read (`lua -e`, `Rscript -e`,
///   `osascript -e`, `pwsh -c`, …), a write redirected to a substitution,
///   nesting beyond the guard's budget. Text that does not parse
///   (unbalanced quotes) is read pessimistically instead: cut at every
///   operator, every word tried as a command name.
///
/// Harmless and allowed: copying or redirecting to `/dev/null` (`cp x
/// /dev/null`, `2>/dev/null`), reading a device, `rm` without `-r`, `echo
/// rm -rf /` (it prints), `git push` without force, `git branch -d`, `git
/// checkout BRANCH`, `git restore --staged .`, `DELETE … WHERE …`.
///
/// Stated limit: this is a tripwire on what the arguments say, not a
/// sandbox. The value of a variable set outside the text, a script file's
/// contents and what a program reads at run time are not known. Arguments
/// deeper than 64 levels or with more than 10,000 JSON nodes are refused
/// unread (fail closed).
#[derive(Debug, Clone)]
pub struct DestructiveGuard {
    max_depth: usize,
    max_nodes: usize,
}

impl Default for DestructiveGuard {
    fn default() -> Self {
        Self {
            max_depth: 64,
            max_nodes: 10_000,
        }
    }
}

/// Why the guard could not finish reading the arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetExceeded;

impl DestructiveGuard {
    /// The first destructive command in `arguments`, if any.
    pub fn find(&self, arguments: &Value) -> Result<Option<Finding>, BudgetExceeded> {
        let mut nodes = 0usize;
        let mut pointer = String::new();
        self.walk(arguments, 0, &mut nodes, &mut pointer)
    }

    fn walk(
        &self,
        value: &Value,
        depth: usize,
        nodes: &mut usize,
        pointer: &mut String,
    ) -> Result<Option<Finding>, BudgetExceeded> {
        *nodes += 1;
        if depth > self.max_depth || *nodes > self.max_nodes {
            return Err(BudgetExceeded);
        }
        let found = |rule: Option<&'static str>, pointer: &str| {
            rule.map(|rule| Finding {
                rule,
                pointer: pointer.to_owned(),
            })
        };
        match value {
            Value::String(s) => {
                if let Some(hit) = found(scan_command_text(s), pointer) {
                    return Ok(Some(hit));
                }
                // JSON inside a string is read as JSON too.
                let t = s.trim_start();
                if (t.starts_with('{') || t.starts_with('['))
                    && let Ok(inner) = serde_json::from_str::<Value>(s)
                {
                    return self.walk(&inner, depth + 1, nodes, pointer);
                }
                Ok(None)
            }
            Value::Array(items) => {
                if !items.is_empty() && items.iter().all(Value::is_string) {
                    let argv: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
                    if let Some(hit) = found(scan_argv(&argv), pointer) {
                        return Ok(Some(hit));
                    }
                }
                for (i, item) in items.iter().enumerate() {
                    // In an argv, a one-word element after the first is an
                    // argument, not a command line of its own.
                    if i > 0
                        && items.iter().all(Value::is_string)
                        && item
                            .as_str()
                            .is_some_and(|s| !s.is_empty() && !s.contains(char::is_whitespace))
                    {
                        continue;
                    }
                    let len = pointer.len();
                    pointer.push('/');
                    pointer.push_str(&i.to_string());
                    let hit = self.walk(item, depth + 1, nodes, pointer)?;
                    pointer.truncate(len);
                    if hit.is_some() {
                        return Ok(hit);
                    }
                }
                Ok(None)
            }
            Value::Object(map) => {
                // A command and its arguments in sibling fields
                // (`{"command": "rm", "args": ["-rf", "/"]}`): read as one argv.
                for (key, item) in map {
                    let Some(command) = item.as_str() else {
                        continue;
                    };
                    for args in map.values() {
                        let Some(args) = args.as_array().filter(|a| !a.is_empty()) else {
                            continue;
                        };
                        if !args.iter().all(Value::is_string) {
                            continue;
                        }
                        let mut argv: Vec<&str> = command.split_whitespace().collect();
                        argv.extend(args.iter().filter_map(Value::as_str));
                        let len = pointer.len();
                        pointer.push('/');
                        pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
                        let hit = found(scan_argv(&argv), pointer);
                        pointer.truncate(len);
                        if hit.is_some() {
                            return Ok(hit);
                        }
                    }
                }
                for (key, item) in map {
                    // A key can carry the command too (`{"rm -rf /": 1}`).
                    if let Some(hit) = found(scan_command_text(key), pointer) {
                        return Ok(Some(hit));
                    }
                    let len = pointer.len();
                    pointer.push('/');
                    pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
                    let hit = self.walk(item, depth + 1, nodes, pointer)?;
                    pointer.truncate(len);
                    if hit.is_some() {
                        return Ok(hit);
                    }
                }
                Ok(None)
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => Ok(None),
        }
    }
}

impl Control for DestructiveGuard {
    fn name(&self) -> &str {
        "destructive-command-guard"
    }

    fn evaluate(&self, call: &ToolCall) -> GateResult {
        match self.find(&call.arguments) {
            Ok(None) => GateResult::allow(),
            Ok(Some(hit)) if hit.rule == rules::UNREADABLE => GateResult::deny(format!(
                "command the destructive-command guard cannot read ({}) in argument {:?}",
                hit.rule,
                if hit.pointer.is_empty() {
                    "/"
                } else {
                    &hit.pointer
                }
            )),
            Ok(Some(hit)) => GateResult::deny(format!(
                "destructive command ({}) in argument {:?}",
                hit.rule,
                if hit.pointer.is_empty() {
                    "/"
                } else {
                    &hit.pointer
                }
            )),
            Err(BudgetExceeded) => GateResult::deny(
                "arguments are too deep or too large for the destructive-command guard to inspect",
            ),
        }
    }
}

/// The rule a piece of command text breaks, if any.
pub(crate) fn scan_command_text(raw: &str) -> Option<&'static str> {
    if is_fork_bomb(raw) {
        return Some("fork-bomb");
    }
    sql::rule(raw).or_else(|| rules::Reader::new().text(raw))
}

/// The rule an argv breaks, run as given or joined into one command line.
fn scan_argv(argv: &[&str]) -> Option<&'static str> {
    rules::Reader::new()
        .argv_strings(argv)
        .or_else(|| scan_command_text(&argv.join(" ")))
}

fn is_fork_bomb(raw: &str) -> bool {
    // `:(){` or `:|:&` with any whitespace in between, without allocating.
    let mut last = ['\0'; 4];
    for c in raw.chars().filter(|c| !c.is_whitespace()) {
        last = [last[1], last[2], last[3], c];
        if last == [':', '(', ')', '{'] || last == [':', '|', ':', '&'] {
            return true;
        }
    }
    false
}
