//! The destructive-command guard: refuses tool calls whose arguments carry
//! a recognisably destructive shell command.

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

/// Refuses calls whose arguments contain a destructive shell command:
/// recursive `rm`, `find -delete` / `find -exec rm`, force pushes and
/// history-destroying git commands (`push --force`/`-f`/`+ref`/`:ref`/`--mirror`,
/// `reset --hard`, `clean -f`, `branch -D`), filesystem and device wipes
/// (`mkfs*`, `mke2fs`, `wipefs`, `shred`, any `dd of=…`, a redirect onto a
/// block device, `tee /dev/sd…`, `mv … /dev/null`), recursive `chmod`/`chown`/`chgrp` on `/`,
/// a top-level system directory or the home directory, power control
/// (`shutdown`, `reboot`, `halt`, `poweroff`, `init 0|6`, `systemctl
/// poweroff|reboot|halt`), `kill -1`, fork bombs and SQL `DROP
/// TABLE|DATABASE|SCHEMA` / `TRUNCATE TABLE`.
///
/// Recursive deletes from script one-liners (`shutil.rmtree`, `rimraf`) count
/// as recursive `rm`.
///
/// Every string anywhere in the arguments is inspected (not only keys named
/// like a command: a tool can name its command field anything), and so is
/// every array of strings joined as an argv. Before matching, quotes and
/// backslashes are removed (`r'm'`, `\rm`), `$IFS` becomes a space, every
/// Unicode space is a space, and the text is cut into simple commands at
/// `; & | ( ) { } < >`, backquotes and newlines; then every word is tried as
/// a command name by its basename (`/bin/rm`, `sudo rm`, `xargs rm`, `bash -c
/// 'rm …'` all reach `rm`). A word anywhere counts, so `echo rm -rf /` is
/// refused too: the guard over-matches rather than parse shell.
///
/// Commas count as spaces, so a brace expansion (`{rm,-rf,/}`) reads as the
/// command it expands to, and a backslash-newline continuation joins the
/// words it splits.
///
/// Stated limit: this is a tripwire on command text, not a sandbox. A command
/// assembled at run time (variables, aliases, functions, `base64 -d | sh`,
/// ANSI-C escapes) is not recognised. Arguments deeper than 64 levels or with more than 10,000 JSON
/// nodes are refused unread (fail closed).
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
            Value::String(s) => Ok(found(scan_command_text(s), pointer)),
            Value::Array(items) => {
                if !items.is_empty() && items.iter().all(Value::is_string) {
                    let argv: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
                    if let Some(hit) = found(scan_command_text(&argv.join(" ")), pointer) {
                        return Ok(Some(hit));
                    }
                }
                for (i, item) in items.iter().enumerate() {
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
    let text = normalize(raw);
    if let Some(rule) = sql_rule(&text) {
        return Some(rule);
    }
    let mut words: Vec<&str> = Vec::new();
    let mut redirected = false;
    for piece in text.split_inclusive(is_separator) {
        let (segment, next_redirected) = match piece.chars().next_back() {
            Some(c) if is_separator(c) => (&piece[..piece.len() - c.len_utf8()], c == '>'),
            _ => (piece, false),
        };
        words.clear();
        words.extend(segment.split(' ').filter(|w| !w.is_empty()));
        if redirected && words.first().is_some_and(|w| is_block_device(w)) {
            return Some("write-to-device");
        }
        redirected = next_redirected;
        for i in 0..words.len() {
            if let Some(rule) = command_rule(command_name(words[i]), &words[i + 1..]) {
                return Some(rule);
            }
        }
    }
    None
}

fn is_separator(c: char) -> bool {
    matches!(c, ';' | '&' | '|' | '(' | ')' | '{' | '}' | '<' | '>' | '`')
}

/// Quotes and backslashes removed (a backslash-newline continuation with its
/// newline), `$IFS` and commas spaced, Unicode spaces made ASCII spaces
/// (newlines become `;` so they cut commands).
fn normalize(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '$' if raw[i..].starts_with("${IFS}") => {
                out.push(' ');
                chars.nth(4);
            }
            '$' if raw[i..].starts_with("$IFS") => {
                out.push(' ');
                chars.nth(2);
            }
            // A line continuation joins words (`r\<newline>m` is `rm`).
            '\\' if raw[i..].starts_with("\\\r\n") => {
                chars.nth(1);
            }
            '\\' if raw[i..].starts_with("\\\n") => {
                chars.next();
            }
            '\'' | '"' | '\\' => {}
            '\n' | '\r' | '\u{2028}' | '\u{2029}' => out.push(';'),
            // Brace expansion: `{rm,-rf,/}` runs `rm -rf /`.
            ',' => out.push(' '),
            c if c.is_ascii() && !c.is_ascii_control() => out.push(c),
            c if c.is_whitespace() || c.is_control() => out.push(' '),
            // Zero-width and format characters would split a word invisibly.
            '\u{200b}'..='\u{200f}' | '\u{2060}'..='\u{2064}' | '\u{feff}' | '\u{00ad}' => {}
            c => out.push(c),
        }
    }
    out
}

/// A word's basename with leading `$` removed (`$'rm'` reads `$rm` once
/// its quotes are gone).
fn command_name(word: &str) -> &str {
    let base = word.rsplit('/').next().unwrap_or(word);
    base.trim_start_matches('$')
}

fn command_rule(name: &str, rest: &[&str]) -> Option<&'static str> {
    // Every command name below is short ASCII: lowercase on the stack.
    let mut buf = [0u8; 16];
    if name.len() > buf.len() {
        let head = name.get(..4).unwrap_or(name);
        return head
            .eq_ignore_ascii_case("mkfs")
            .then_some("wipe-filesystem");
    }
    let buf = &mut buf[..name.len()];
    buf.copy_from_slice(name.as_bytes());
    buf.make_ascii_lowercase();
    let Ok(name) = std::str::from_utf8(buf) else {
        return None;
    };
    let short_flag = |w: &str, letters: &[char]| {
        w.starts_with('-') && !w.starts_with("--") && w[1..].chars().any(|c| letters.contains(&c))
    };
    match name {
        "rm" => rest
            .iter()
            .any(|w| {
                short_flag(w, &['r', 'R'])
                    || w.starts_with("--recursive")
                    || w.starts_with("--no-preserve-root")
            })
            .then_some("recursive-rm"),
        "find" => rest
            .iter()
            .enumerate()
            .any(|(i, w)| {
                *w == "-delete"
                    || ((*w == "-exec" || *w == "-execdir" || *w == "-ok" || *w == "-okdir")
                        && rest.get(i + 1).is_some_and(|c| {
                            let c = command_name(c);
                            ["rm", "shred", "unlink"]
                                .iter()
                                .any(|n| c.eq_ignore_ascii_case(n))
                        }))
            })
            .then_some("find-delete"),
        "git" => git_rule(rest),
        // Any `dd of=…` overwrites its target in place, as the original
        // reads it; onto a block device it is a device wipe.
        "dd" => rest
            .iter()
            .find_map(|w| w.strip_prefix("of="))
            .map(|target| {
                if is_block_device(target) {
                    "write-to-device"
                } else {
                    "dd-write"
                }
            }),
        "tee" => rest
            .iter()
            .any(|w| is_block_device(w))
            .then_some("write-to-device"),
        "mv" | "cp" => rest
            .last()
            .is_some_and(|w| *w == "/dev/null" || is_block_device(w))
            .then_some("write-to-device"),
        "shred" | "wipefs" | "mke2fs" => Some("wipe-filesystem"),
        // `shutil.rmtree(...)`, `rimraf`: recursive deletes from a one-liner.
        n if n.ends_with("rmtree") || n == "rimraf" => Some("recursive-rm"),
        n if n.starts_with("mkfs") => Some("wipe-filesystem"),
        "chmod" | "chown" | "chgrp" => {
            let recursive = rest
                .iter()
                .any(|w| short_flag(w, &['R']) || w.starts_with("--recursive"));
            (recursive && rest.iter().any(|w| is_system_target(w)))
                .then_some("recursive-chmod-system")
        }
        "shutdown" | "reboot" | "halt" | "poweroff" => Some("power-control"),
        "init" | "telinit" => rest
            .first()
            .is_some_and(|w| matches!(*w, "0" | "6"))
            .then_some("power-control"),
        "systemctl" => rest
            .iter()
            .any(|w| matches!(*w, "poweroff" | "reboot" | "halt" | "kexec"))
            .then_some("power-control"),
        // `kill -9 -1`, `kill -- -1`, `kill -1`: every process the user owns
        // (`kill -1 PID` is a SIGHUP to PID and stays allowed).
        "kill" => (rest == ["-1"] || rest.iter().skip(1).any(|w| *w == "-1")).then_some("kill-all"),
        _ => None,
    }
}

fn git_rule(rest: &[&str]) -> Option<&'static str> {
    // Skip global options to find the subcommand.
    let mut i = 0;
    while i < rest.len() && rest[i].starts_with('-') {
        i += if matches!(
            rest[i],
            "-C" | "-c" | "--git-dir" | "--work-tree" | "--namespace"
        ) {
            2
        } else {
            1
        };
    }
    let sub = *rest.get(i)?;
    let args = &rest[i + 1..];
    let short = |w: &str, c: char| w.starts_with('-') && !w.starts_with("--") && w.contains(c);
    match sub {
        "push" => args
            .iter()
            .any(|w| {
                w.starts_with("--force")
                    || *w == "--mirror"
                    || *w == "--delete"
                    || short(w, 'f')
                    || short(w, 'd')
                    || w.starts_with('+')
                    || w.starts_with(':')
            })
            .then_some("git-force-push"),
        "reset" => args.contains(&"--hard").then_some("git-reset-hard"),
        "clean" => args
            .iter()
            .any(|w| short(w, 'f') || *w == "--force")
            .then_some("git-clean-force"),
        "branch" => args
            .iter()
            .any(|w| short(w, 'D') || (*w == "--delete" && args.contains(&"--force")))
            .then_some("git-branch-force-delete"),
        _ => None,
    }
}

fn is_block_device(path: &str) -> bool {
    let Some(dev) = path.strip_prefix("/dev/") else {
        return false;
    };
    [
        "sd", "hd", "vd", "xvd", "nvme", "mmcblk", "disk", "md", "dm-", "loop", "mapper/", "sr",
    ]
    .iter()
    .any(|p| dev.starts_with(p))
}

fn is_system_target(word: &str) -> bool {
    if matches!(word, "~" | "~/" | "$HOME" | "${HOME}" | "/*" | "~/*") {
        return true;
    }
    // `/`, `/etc`, `/usr/`, but not `/srv/app/data`.
    word.starts_with('/') && word.trim_end_matches(['/', '*']).matches('/').count() <= 1
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

fn sql_rule(text: &str) -> Option<&'static str> {
    let mut previous = "";
    for word in text.split([' ', ';', '(', ',']).filter(|w| !w.is_empty()) {
        if previous.eq_ignore_ascii_case("drop")
            && ["table", "database", "schema"]
                .iter()
                .any(|k| word.eq_ignore_ascii_case(k))
        {
            return Some("sql-drop");
        }
        if previous.eq_ignore_ascii_case("truncate") && word.eq_ignore_ascii_case("table") {
            return Some("sql-truncate");
        }
        previous = word;
    }
    None
}
