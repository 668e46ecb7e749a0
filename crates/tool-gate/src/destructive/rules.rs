//! What a parsed command runs and whether that is destructive: wrappers and
//! interpreters resolved to the command they start, each guarded tool's
//! options read with its own option table (abbreviations included), paths
//! normalised.

use std::collections::HashMap;

use super::shell::{self, Command, Part, Script, Word};
use super::sql;

/// The rule for a command the guard cannot read.
pub(super) const UNREADABLE: &str = "unreadable-command";

const MAX_DEPTH: usize = 24;

/// One argument after expansion.
#[derive(Debug, Clone, Default)]
pub(super) struct Field {
    pub(super) text: String,
    /// Holds a command substitution's output: unknown text.
    subst: bool,
    /// What the substitution would print, when it only prints its own
    /// words (`$(which rm)`); `None` when that cannot be told.
    candidates: Option<Vec<String>>,
}

impl Field {
    pub(super) fn literal(text: &str) -> Self {
        Field {
            text: text.to_owned(),
            ..Field::default()
        }
    }
}

/// What standard input carries.
#[derive(Clone, Copy)]
enum Stdin<'a> {
    Terminal,
    Pipe,
    Text(&'a [String]),
}

/// Evaluates parsed command lines.
pub(super) struct Reader {
    env: HashMap<String, String>,
    cwd: Option<String>,
    depth: usize,
}

impl Reader {
    pub(super) fn new() -> Self {
        Reader {
            env: HashMap::new(),
            cwd: None,
            depth: 0,
        }
    }

    /// The rule broken by running `argv` as given (no shell in between).
    pub(super) fn argv_strings(&mut self, argv: &[&str]) -> Option<&'static str> {
        let fields: Vec<Field> = argv.iter().map(|s| Field::literal(s)).collect();
        self.argv(&fields, Stdin::Terminal)
    }

    /// The rule broken by shell text, read as the shell would.
    pub(super) fn text(&mut self, text: &str) -> Option<&'static str> {
        if self.depth > MAX_DEPTH {
            return Some(UNREADABLE);
        }
        let read = match shell::parse(text) {
            Ok(script) => self.script(&script),
            Err(shell::ParseError::TooLarge) => Some(UNREADABLE),
            Err(_) => return self.loosely(text),
        };
        // A shell splits only at ASCII blanks, but other readers of the text
        // may split at any space: with one present, read pessimistically too.
        let exotic = |c: char| {
            (!c.is_ascii() && (c.is_whitespace() || c.is_control()))
                || matches!(c, '\u{200b}'..='\u{200f}' | '\u{2060}'..='\u{2064}' | '\u{feff}' | '\u{00ad}')
        };
        read.or_else(|| {
            text.chars()
                .any(exotic)
                .then(|| self.loosely(text))
                .flatten()
        })
    }

    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        self.depth += 1;
        let out = f(self);
        self.depth -= 1;
        out
    }

    fn script(&mut self, script: &Script) -> Option<&'static str> {
        let mut previous: Vec<Field> = Vec::new();
        for cmd in &script.commands {
            let fields = match self.command(cmd, &previous) {
                Ok(fields) => fields,
                Err(rule) => return Some(rule),
            };
            previous = fields;
        }
        None
    }

    /// Evaluates one simple command; its fields for the next one in a pipe.
    fn command(&mut self, cmd: &Command, previous: &[Field]) -> Result<Vec<Field>, &'static str> {
        // Every command substitution runs, wherever it sits.
        for word in cmd
            .words
            .iter()
            .chain(cmd.redirects.iter().map(|r| &r.target))
            .chain(cmd.input.iter())
        {
            for part in &word.parts {
                if let Part::Subst(inner) = part
                    && let Some(rule) = self.nested(|r| r.script(inner))
                {
                    return Err(rule);
                }
            }
        }
        for redirect in cmd.redirects.iter().filter(|r| r.writes) {
            let target = self.expand(&redirect.target);
            if target.iter().any(|f| f.subst) {
                return Err(UNREADABLE);
            }
            if target
                .iter()
                .any(|f| is_block_device(&f.text, self.cwd.as_deref()))
            {
                return Err("write-to-device");
            }
        }
        let mut fields: Vec<Field> = cmd.words.iter().flat_map(|w| self.expand(w)).collect();
        // Leading assignments set variables (for this command or the shell).
        let mut start = 0;
        while let Some(f) = fields.get(start) {
            match assignment(&f.text) {
                Some((name, value)) if !f.subst => {
                    self.env.insert(name.to_owned(), value.to_owned());
                    start += 1;
                }
                _ => break,
            }
        }
        fields.drain(..start);
        // Reserved words open or close compound commands.
        while let Some(first) = fields.first() {
            match first.text.as_str() {
                "!" | "{" | "}" | "then" | "else" | "elif" | "do" | "done" | "fi" | "if"
                | "while" | "until" | "esac"
                    if !first.subst =>
                {
                    fields.remove(0);
                }
                "for" | "select" | "function" | "[[" | "in" if !first.subst => {
                    return Ok(Vec::new());
                }
                _ => break,
            }
        }
        let bodies: Vec<String> = cmd
            .input
            .iter()
            .flat_map(|w| self.expand(w))
            .map(|f| f.text)
            .collect();
        let stdin = if !bodies.is_empty() {
            Stdin::Text(&bodies)
        } else if cmd.piped {
            Stdin::Pipe
        } else {
            Stdin::Terminal
        };
        if let Some(rule) = self.argv(&fields, stdin) {
            return Err(rule);
        }
        // SQL piped into a client (`echo 'DROP TABLE t' | psql`).
        if cmd.piped
            && fields
                .first()
                .is_some_and(|f| is_sql_client(&name_of(&f.text)))
            && let Some(rule) = previous.iter().find_map(|f| sql::rule(&f.text))
        {
            return Err(rule);
        }
        if let [cd, dir] = fields.as_slice()
            && cd.text == "cd"
            && !dir.subst
        {
            self.cwd = normalize_path(&dir.text, self.cwd.as_deref());
        }
        Ok(fields)
    }

    /// A word's fields after parameter expansion and field splitting.
    fn expand(&self, word: &Word) -> Vec<Field> {
        let mut fields = vec![Field::default()];
        let mut any_text = false;
        // An unquoted expansion ended in a separator: the next text starts
        // a new field.
        let mut boundary = false;
        let push = |fields: &mut Vec<Field>, boundary: &mut bool, text: &str| {
            if *boundary && !text.is_empty() {
                fields.push(Field::default());
                *boundary = false;
            }
            if let Some(f) = fields.last_mut() {
                f.text.push_str(text);
            }
        };
        for part in &word.parts {
            any_text = true;
            match part {
                Part::Lit(s, _) => push(&mut fields, &mut boundary, s),
                Part::Param(name, quoted) => {
                    let value = match name.as_str() {
                        "HOME" => Some("~".to_owned()),
                        "IFS" => Some(" \t\n".to_owned()),
                        _ => self.env.get(name).cloned(),
                    };
                    match value {
                        Some(v) if !quoted => {
                            for piece in v.split_inclusive([' ', '\t', '\n']) {
                                let text = piece.trim_end_matches([' ', '\t', '\n']);
                                push(&mut fields, &mut boundary, text);
                                if text.len() < piece.len()
                                    && fields.last().is_some_and(|f| !f.text.is_empty())
                                {
                                    boundary = true;
                                }
                            }
                        }
                        Some(v) => push(&mut fields, &mut boundary, &v),
                        // An unknown variable: its value is not read (a
                        // stated limit), its name stays visible.
                        None => push(&mut fields, &mut boundary, &format!("${name}")),
                    }
                }
                Part::Subst(inner) => {
                    push(&mut fields, &mut boundary, "");
                    if let Some(f) = fields.last_mut() {
                        f.subst = true;
                        f.candidates = printed_words(inner);
                    }
                }
                Part::Opaque => {
                    push(&mut fields, &mut boundary, "");
                    if let Some(f) = fields.last_mut() {
                        f.subst = true;
                        f.candidates = None;
                    }
                }
            }
        }
        if !any_text {
            return Vec::new();
        }
        fields.retain(|f| {
            !f.text.is_empty()
                || f.subst
                || word.parts.iter().any(|p| matches!(p, Part::Lit(_, true)))
        });
        fields
    }

    /// The rule broken by running `argv`.
    fn argv(&mut self, argv: &[Field], stdin: Stdin<'_>) -> Option<&'static str> {
        if self.depth > MAX_DEPTH {
            return Some(UNREADABLE);
        }
        let first = argv.first()?;
        if first.subst {
            // The command name is a substitution's output.
            let Some(candidates) = first.candidates.clone() else {
                return Some(UNREADABLE);
            };
            for candidate in candidates {
                let mut alt = argv.to_vec();
                alt[0] = Field::literal(&candidate);
                if let Some(rule) = self.nested(|r| r.argv(&alt, stdin)) {
                    return Some(rule);
                }
            }
            return None;
        }
        let name = name_of(&first.text);
        let args = &argv[1..];
        let static_rule = self.rule(&name, args, stdin);
        if static_rule.is_some() {
            return static_rule;
        }
        if is_guarded(&name, args) && args.iter().any(|f| f.subst) {
            return Some(UNREADABLE);
        }
        None
    }

    fn rule(&mut self, name: &str, args: &[Field], stdin: Stdin<'_>) -> Option<&'static str> {
        if is_sql_client(name) {
            if let Some(rule) = args.iter().find_map(|f| sql_of_argument(&f.text)) {
                return Some(rule);
            }
            if let Stdin::Text(bodies) = stdin {
                return bodies.iter().find_map(|b| sql::rule(b));
            }
            return None;
        }
        if let Some(rule) = self.wrapper(name, args, stdin) {
            return rule;
        }
        if let Some(rule) = self.interpreter(name, args, stdin) {
            return rule;
        }
        match name {
            "rm" => {
                let p = parse_options(args, RM, false);
                (p.has("recursive") || p.has("no-preserve-root")).then_some("recursive-rm")
            }
            "rimraf" => Some("recursive-rm"),
            n if n.ends_with("rmtree") => Some("recursive-rm"),
            "find" => self.find(args),
            "git" => self.git(args, &HashMap::new()),
            "dd" => args
                .iter()
                .find_map(|f| f.text.strip_prefix("of="))
                .map(|target| {
                    if is_block_device(target, self.cwd.as_deref()) {
                        "write-to-device"
                    } else {
                        "dd-write"
                    }
                }),
            "tee" => {
                let p = parse_options(args, TEE, false);
                p.operands(args)
                    .any(|f| is_block_device(&f.text, self.cwd.as_deref()))
                    .then_some("write-to-device")
            }
            "cp" | "mv" => {
                let p = parse_options(args, CP, false);
                let target = p
                    .value("target-directory")
                    .or_else(|| p.operands(args).last().map(|f| f.text.clone()))?;
                let device = is_block_device(&target, self.cwd.as_deref());
                let null =
                    normalize_path(&target, self.cwd.as_deref()).as_deref() == Some("/dev/null");
                (device || (name == "mv" && null)).then_some("write-to-device")
            }
            "chmod" | "chown" | "chgrp" => {
                let p = parse_options(args, CHMOD, false);
                (p.has("recursive") && p.operands(args).any(|f| is_system_target(&f.text)))
                    .then_some("recursive-chmod-system")
            }
            "shutdown" | "reboot" | "halt" | "poweroff" => Some("power-control"),
            "init" | "telinit" => args
                .first()
                .is_some_and(|w| matches!(w.text.as_str(), "0" | "6"))
                .then_some("power-control"),
            "systemctl" => args
                .iter()
                .any(|w| {
                    matches!(
                        w.text.as_str(),
                        "poweroff"
                            | "reboot"
                            | "halt"
                            | "kexec"
                            | "poweroff.target"
                            | "reboot.target"
                            | "halt.target"
                    )
                })
                .then_some("power-control"),
            "kill" => {
                let words: Vec<&str> = args.iter().map(|f| f.text.as_str()).collect();
                (words == ["-1"] || words.iter().skip(1).any(|w| *w == "-1")).then_some("kill-all")
            }
            "shred" | "wipefs" | "mke2fs" | "mkswap" | "blkdiscard" => Some("wipe-filesystem"),
            n if n.starts_with("mkfs") => Some("wipe-filesystem"),
            "eval" => {
                if args.iter().any(|f| f.subst) {
                    return Some(UNREADABLE);
                }
                let code = join(args);
                self.nested(|r| r.text(&code))
            }
            "trap" => {
                let code = args.first().filter(|f| !f.text.starts_with('-'))?;
                if code.subst {
                    return Some(UNREADABLE);
                }
                let code = code.text.clone();
                self.nested(|r| r.text(&code))
            }
            "alias" => args.iter().find_map(|f| {
                let (_, value) = f.text.split_once('=')?;
                let value = value.to_owned();
                self.nested(|r| r.text(&value))
            }),
            _ => None,
        }
    }

    fn find(&mut self, args: &[Field]) -> Option<&'static str> {
        let mut i = 0;
        while i < args.len() {
            let w = args[i].text.as_str();
            if w == "-delete" {
                return Some("find-delete");
            }
            if matches!(w, "-exec" | "-execdir" | "-ok" | "-okdir") {
                let start = i + 1;
                let mut end = start;
                while end < args.len() && !matches!(args[end].text.as_str(), ";" | "+") {
                    end += 1;
                }
                let nested = &args[start..end];
                if nested
                    .first()
                    .is_some_and(|c| matches!(name_of(&c.text).as_str(), "rm" | "shred" | "unlink"))
                {
                    return Some("find-delete");
                }
                if let Some(rule) = self.nested(|r| r.argv(nested, Stdin::Terminal)) {
                    return Some(rule);
                }
                i = end;
            }
            i += 1;
        }
        None
    }

    fn git(&mut self, args: &[Field], aliases: &HashMap<String, String>) -> Option<&'static str> {
        let mut aliases = aliases.clone();
        let mut require_force = true;
        let mut i = 0;
        while let Some(f) = args.get(i) {
            let w = f.text.as_str();
            if !w.starts_with('-') || f.subst {
                break;
            }
            let takes_value = matches!(
                w,
                "-C" | "-c"
                    | "--git-dir"
                    | "--work-tree"
                    | "--namespace"
                    | "--config-env"
                    | "--super-prefix"
                    | "--exec-path"
                    | "--list-cmds"
            );
            if w == "-c"
                && let Some(setting) = args.get(i + 1)
            {
                let (key, value) = setting
                    .text
                    .split_once('=')
                    .unwrap_or((&setting.text, "true"));
                let key = key.to_ascii_lowercase();
                if let Some(alias) = key.strip_prefix("alias.") {
                    aliases.insert(alias.to_owned(), value.to_owned());
                }
                if key == "clean.requireforce"
                    && matches!(
                        value.to_ascii_lowercase().as_str(),
                        "false" | "0" | "no" | "off"
                    )
                {
                    require_force = false;
                }
            }
            i += if takes_value { 2 } else { 1 };
        }
        let sub = args.get(i)?;
        if sub.subst {
            return Some(UNREADABLE);
        }
        let rest = &args[i + 1..];
        if let Some(value) = aliases.get(&sub.text.to_ascii_lowercase()).cloned() {
            if self.depth > MAX_DEPTH {
                return Some(UNREADABLE);
            }
            if let Some(code) = value.strip_prefix('!') {
                let code = format!("{code} {}", join(rest));
                return self.nested(|r| r.text(&code));
            }
            let mut expanded = words_of(&value)?;
            expanded.extend(rest.iter().cloned());
            return self.nested(|r| r.git(&expanded, &aliases));
        }
        let whole_tree = |p: &Parsed| p.operands(rest).any(|f| is_whole_tree(&f.text));
        match sub.text.as_str() {
            "push" => {
                let p = parse_options(rest, GIT_PUSH, false);
                (p.has("force")
                    || p.has("force-with-lease")
                    || p.has("delete")
                    || p.has("mirror")
                    || p.has("prune")
                    || p.operands(rest)
                        .any(|f| f.text.starts_with('+') || f.text.starts_with(':')))
                .then_some("git-force-push")
            }
            "reset" => parse_options(rest, GIT_RESET, false)
                .has("hard")
                .then_some("git-reset-hard"),
            "clean" => {
                let p = parse_options(rest, GIT_CLEAN, false);
                let dry = p.has("dry-run") || p.has("interactive");
                (p.has("force") || (!require_force && !dry)).then_some("git-clean-force")
            }
            "branch" => {
                let p = parse_options(rest, GIT_BRANCH, false);
                (p.has("=D") || (p.has("delete") && p.has("force")))
                    .then_some("git-branch-force-delete")
            }
            "checkout" => {
                let p = parse_options(rest, GIT_CHECKOUT, false);
                (p.has("force") || whole_tree(&p)).then_some("git-checkout-discard")
            }
            "restore" => {
                let p = parse_options(rest, GIT_RESTORE, false);
                let worktree = p.has("worktree") || !p.has("staged");
                (worktree && whole_tree(&p)).then_some("git-checkout-discard")
            }
            "switch" => {
                let p = parse_options(rest, GIT_SWITCH, false);
                (p.has("force") || p.has("discard-changes")).then_some("git-checkout-discard")
            }
            _ => None,
        }
    }

    /// `Some(verdict)` when `name` is a wrapper that runs another command.
    fn wrapper(
        &mut self,
        name: &str,
        args: &[Field],
        stdin: Stdin<'_>,
    ) -> Option<Option<&'static str>> {
        let (table, skip_operands, assignments): (&[Opt], usize, bool) = match name {
            "env" => (ENV, 0, true),
            "sudo" => (SUDO, 0, true),
            "doas" => (DOAS, 0, false),
            "nice" => (NICE, 0, false),
            "ionice" => (IONICE, 0, false),
            "nohup" | "builtin" | "unbuffer" | "fakeroot" | "catchsegv" | "caffeinate" => {
                (&[], 0, false)
            }
            "timeout" => (TIMEOUT, 1, false),
            "command" => (COMMAND, 0, false),
            "exec" => (EXEC, 0, false),
            "time" => (TIME, 0, false),
            "stdbuf" => (STDBUF, 0, false),
            "setsid" => (SETSID, 0, false),
            "chroot" => (CHROOT, 1, false),
            "taskset" => (TASKSET, 1, false),
            "chrt" => (CHRT, 1, false),
            "xargs" => (XARGS, 0, false),
            "busybox" => (&[], 0, false),
            "pkexec" => (PKEXEC, 0, false),
            "npx" | "pnpx" | "bunx" => (NPX, 0, false),
            "flock" => (FLOCK, 1, false),
            "su" | "runuser" => (SU, 0, false),
            "script" => (SCRIPT, 0, false),
            "ssh" => (SSH, 1, false),
            "watch" => (WATCH, 0, false),
            _ => return None,
        };
        let p = parse_options(args, table, !matches!(name, "su" | "runuser"));
        // Code given as an option value (`su -c`, `flock -c`, `script -c`, `npx -c`).
        if matches!(
            name,
            "su" | "runuser" | "flock" | "script" | "npx" | "pnpx" | "bunx"
        ) && let Some(code) = p.field("command", args)
        {
            if code.subst {
                return Some(Some(UNREADABLE));
            }
            let code = code.text;
            if let Some(rule) = self.nested(|r| r.text(&code)) {
                return Some(Some(rule));
            }
        }
        if p.unknown && !matches!(name, "su" | "runuser") {
            // An option this table does not know may take a value: try every
            // later word as the command (fail closed).
            for i in 1..args.len() {
                if let Some(rule) = self.nested(|r| r.argv(&args[i..], stdin)) {
                    return Some(Some(rule));
                }
            }
            return Some(None);
        }
        if name == "command" && (p.has("v") || p.has("V")) {
            return Some(None);
        }
        let mut rest: Vec<Field> = args[p.first_operand.min(args.len())..].to_vec();
        if assignments {
            while rest.first().is_some_and(|f| assignment(&f.text).is_some()) {
                rest.remove(0);
            }
        }
        if name == "env"
            && let Some(split) = p.value("split-string")
        {
            let mut words = words_of(&split).unwrap_or_default();
            if words.is_empty() && !split.trim().is_empty() {
                return Some(Some(UNREADABLE));
            }
            words.extend(rest);
            rest = words;
        }
        if matches!(name, "su" | "runuser") {
            // `su USER -c CODE` was read above; `runuser -u USER CMD…` runs
            // its operands.
            if !p.has("user") {
                return Some(None);
            }
            let operands: Vec<Field> = p.operands(args).cloned().collect();
            return Some(self.nested(|r| r.argv(&operands, stdin)));
        }
        let rest = &rest[skip_operands.min(rest.len())..];
        if rest.is_empty() {
            return Some(None);
        }
        if matches!(name, "ssh" | "watch") {
            // The words are joined and run by a shell (`watch` without -x).
            if !(name == "watch" && p.has("exec")) {
                if rest.iter().any(|f| f.subst) {
                    return Some(Some(UNREADABLE));
                }
                let code = join(rest);
                if let Some(rule) = self.nested(|r| r.text(&code)) {
                    return Some(Some(rule));
                }
            }
        }
        Some(self.nested(|r| r.argv(rest, stdin)))
    }

    /// `Some(verdict)` when `name` is an interpreter.
    fn interpreter(
        &mut self,
        name: &str,
        args: &[Field],
        stdin: Stdin<'_>,
    ) -> Option<Option<&'static str>> {
        if is_shell(name) {
            return Some(self.shell(args, stdin));
        }
        let lang = script_language(name)?;
        let code: Vec<String> = match lang {
            Lang::Opaque => return Some(opaque_interpreter(name, args, stdin)),
            Lang::Code(code_flags, rest_flags) => {
                let mut code = Vec::new();
                let mut file = false;
                let mut i = 0;
                while i < args.len() {
                    let f = &args[i];
                    let w = f.text.as_str();
                    if w == "--" || !w.starts_with('-') || w == "-" {
                        file = w != "-" && w != "--";
                        break;
                    }
                    if let Some((long, value)) = w
                        .strip_prefix("--")
                        .map(|l| l.split_once('=').unwrap_or((l, "")))
                    {
                        if matches!(long, "eval" | "print") {
                            if value.is_empty() {
                                i += 1;
                                code.push(args.get(i).map(|f| f.text.clone()).unwrap_or_default());
                            } else {
                                code.push(value.to_owned());
                            }
                        }
                        i += 1;
                        continue;
                    }
                    let letters: Vec<char> = w[1..].chars().collect();
                    for (k, c) in letters.iter().enumerate() {
                        if code_flags.contains(*c) {
                            let attached: String = letters[k + 1..].iter().collect();
                            if attached.is_empty() {
                                i += 1;
                                match args.get(i) {
                                    Some(f) if f.subst => return Some(Some(UNREADABLE)),
                                    Some(f) => code.push(f.text.clone()),
                                    None => {}
                                }
                            } else {
                                code.push(attached);
                            }
                            break;
                        }
                        if rest_flags.contains(*c) {
                            if k + 1 == letters.len() && "WXmrI".contains(*c) {
                                i += 1;
                            }
                            break;
                        }
                    }
                    i += 1;
                }
                if args
                    .get(..i.min(args.len()))
                    .is_some_and(|a| a.iter().any(|f| f.subst))
                {
                    return Some(Some(UNREADABLE));
                }
                if code.is_empty() {
                    if name.contains("awk") {
                        code.extend(
                            args.iter()
                                .find(|f| !f.text.starts_with('-'))
                                .map(|f| f.text.clone()),
                        );
                    } else if !file {
                        return Some(match stdin {
                            Stdin::Pipe => Some(UNREADABLE),
                            Stdin::Text(bodies) => bodies.iter().find_map(|b| self.code(b)),
                            Stdin::Terminal => None,
                        });
                    }
                }
                code
            }
        };
        Some(code.iter().find_map(|c| self.code(c)))
    }

    /// A shell's arguments: `-c CODE`, a script file, or code on stdin.
    fn shell(&mut self, args: &[Field], stdin: Stdin<'_>) -> Option<&'static str> {
        let mut command_mode = false;
        let mut stdin_mode = false;
        let mut i = 0;
        while let Some(f) = args.get(i) {
            let w = f.text.as_str();
            if w == "--" || w == "-" {
                i += 1;
                break;
            }
            if let Some(long) = w.strip_prefix("--") {
                i += if matches!(long, "rcfile" | "init-file") {
                    2
                } else {
                    1
                };
                continue;
            }
            if (w.starts_with('-') || w.starts_with('+')) && w.len() > 1 && !f.subst {
                for c in w[1..].chars() {
                    match c {
                        'c' => command_mode = true,
                        's' => stdin_mode = true,
                        'o' | 'O' => i += 1,
                        _ => {}
                    }
                }
                i += 1;
                continue;
            }
            break;
        }
        if command_mode {
            let code = args.get(i)?;
            if code.subst {
                return Some(UNREADABLE);
            }
            let code = code.text.clone();
            return self.nested(|r| r.text(&code));
        }
        if args.get(i).is_some() && !stdin_mode {
            if args[i].subst {
                return Some(UNREADABLE);
            }
            // A script file: not read.
            return None;
        }
        match stdin {
            Stdin::Pipe => Some(UNREADABLE),
            Stdin::Text(bodies) => {
                let bodies = bodies.to_vec();
                bodies.iter().find_map(|b| self.nested(|r| r.text(b)))
            }
            Stdin::Terminal => None,
        }
    }

    /// Code in another language: its string literals read as commands (or
    /// argv when several sit in one list), SQL and recursive-delete APIs.
    fn code(&mut self, code: &str) -> Option<&'static str> {
        let recursive_api = [
            "rmtree",
            "rm_rf",
            "rm_r(",
            "remove_tree",
            "rimraf",
            "RemoveAll",
        ]
        .iter()
        .any(|api| code.contains(api));
        let js_recursive = ["rmSync", "rmdirSync", "fs.rm(", ".rmdir(", "promises.rm("]
            .iter()
            .any(|api| code.contains(api))
            && code.contains("recursive");
        if recursive_api || js_recursive {
            return Some("recursive-rm");
        }
        let literals = string_literals(code);
        for (_, _, text) in &literals {
            if let Some(rule) = sql::rule(text).or_else(|| self.nested(|r| r.text(text))) {
                return Some(rule);
            }
        }
        // Adjacent literals in one list: an argv (`['rm', '-rf', '/']`).
        let mut group: Vec<Field> = Vec::new();
        let mut last_end = 0;
        for (start, end, text) in &literals {
            let between = &code[last_end.min(*start)..*start];
            if group.is_empty()
                || !between
                    .chars()
                    .all(|c| c.is_whitespace() || "[](),".contains(c))
            {
                if group.len() > 1
                    && let Some(rule) = self.nested(|r| r.argv(&group, Stdin::Terminal))
                {
                    return Some(rule);
                }
                group.clear();
            }
            group.push(Field::literal(text));
            last_end = *end;
        }
        if group.len() > 1 {
            return self.nested(|r| r.argv(&group, Stdin::Terminal));
        }
        None
    }

    /// Text the parser could not read, read pessimistically: cut at every
    /// operator, every word tried as a command name.
    fn loosely(&mut self, raw: &str) -> Option<&'static str> {
        let text = loose_normalize(raw);
        let mut redirected = false;
        for piece in text.split_inclusive(is_loose_separator) {
            let (segment, next_redirected) = match piece.chars().next_back() {
                Some(c) if is_loose_separator(c) => {
                    (&piece[..piece.len() - c.len_utf8()], c == '>')
                }
                _ => (piece, false),
            };
            let words: Vec<Field> = segment
                .split(' ')
                .filter(|w| !w.is_empty())
                .map(Field::literal)
                .collect();
            if redirected
                && words
                    .first()
                    .is_some_and(|w| is_block_device(&w.text, None))
            {
                return Some("write-to-device");
            }
            redirected = next_redirected;
            for i in 0..words.len() {
                if let Some(rule) = self.nested(|r| r.argv(&words[i..], Stdin::Terminal)) {
                    return Some(rule);
                }
            }
        }
        None
    }
}

fn name_is_powershell(name: &str) -> bool {
    matches!(name, "pwsh" | "powershell" | "powershell.exe" | "pwsh.exe")
}

/// An interpreter whose language this guard does not read: refused when
/// given inline code or a program on a pipe, allowed with a script file.
fn opaque_interpreter(name: &str, args: &[Field], stdin: Stdin<'_>) -> Option<&'static str> {
    if name_is_powershell(name) || matches!(name, "cmd" | "cmd.exe") {
        // PowerShell runs its words as a command unless given `-File`.
        let file = args.iter().any(|f| {
            let w = f.text.to_ascii_lowercase();
            matches!(w.as_str(), "-f" | "-file" | "/f" | "-fi" | "-fil")
        });
        return match (args.is_empty(), file) {
            (_, true) => None,
            (true, false) => matches!(stdin, Stdin::Pipe).then_some(UNREADABLE),
            (false, false) => Some(UNREADABLE),
        };
    }
    let code = args.iter().any(|f| {
        let w = f.text.as_str();
        matches!(w, "-e" | "-c" | "--eval" | "-eval" | "-E" | "--command")
            || ((w.starts_with("-e") || w.starts_with("-c")) && !w.starts_with("--") && w.len() > 2)
    });
    let no_program = args.iter().all(|f| f.text.starts_with('-'));
    (code || (no_program && matches!(stdin, Stdin::Pipe))).then_some(UNREADABLE)
}

enum Lang {
    /// Code flags, flags that take the rest of their cluster (or the next word).
    Code(&'static str, &'static str),
    /// An interpreter this guard cannot read.
    Opaque,
}

fn script_language(name: &str) -> Option<Lang> {
    let python = name.starts_with("python") || name.starts_with("pypy");
    if python
        && name
            .trim_start_matches(|c: char| c.is_ascii_alphabetic())
            .chars()
            .all(|c| c.is_ascii_digit() || c == '.')
    {
        return Some(Lang::Code("c", "WXm"));
    }
    Some(match name {
        "perl" | "perl5" => Lang::Code("eE", "ilo0MmIxCdDF"),
        "ruby" | "irb" => Lang::Code("e", "IrCEFKTWx0"),
        "node" | "nodejs" | "bun" | "deno" => Lang::Code("ep", "r"),
        "php" => Lang::Code("r", "dc"),
        "awk" | "gawk" | "mawk" | "nawk" => Lang::Code("", "Fvf"),
        "lua" | "luajit" | "rscript" | "julia" | "osascript" | "expect" | "guile" | "racket"
        | "elixir" | "erl" | "groovy" | "tclsh" | "wish" | "pwsh" | "powershell" | "pwsh.exe"
        | "powershell.exe" | "cmd" | "cmd.exe" => Lang::Opaque,
        _ => return None,
    })
}

fn is_shell(name: &str) -> bool {
    matches!(
        name,
        "sh" | "bash"
            | "zsh"
            | "dash"
            | "ksh"
            | "mksh"
            | "ash"
            | "yash"
            | "posh"
            | "rbash"
            | "lksh"
            | "fish"
            | "at"
            | "batch"
    )
}

fn is_sql_client(name: &str) -> bool {
    matches!(
        name,
        "psql"
            | "mysql"
            | "mariadb"
            | "sqlite3"
            | "sqlite"
            | "duckdb"
            | "clickhouse-client"
            | "cockroach"
            | "sqlcmd"
            | "usql"
            | "pgcli"
            | "mycli"
            | "litecli"
            | "isql"
            | "sqlplus"
    )
}

/// SQL in a client's argument, with an attached option name removed
/// (`-e"DROP …"`, `--command=DROP …`).
fn sql_of_argument(text: &str) -> Option<&'static str> {
    sql::rule(text).or_else(|| {
        let rest = if let Some(long) = text.strip_prefix("--") {
            long.split_once('=')?.1
        } else {
            text.strip_prefix('-').and_then(|t| t.get(1..))?
        };
        sql::rule(rest)
    })
}

/// Commands whose arguments decide whether they destroy: a command
/// substitution among them is refused unread.
fn is_guarded(name: &str, args: &[Field]) -> bool {
    match name {
        "rm" | "find" | "dd" | "tee" | "cp" | "mv" | "chmod" | "chown" | "chgrp" | "kill"
        | "init" | "telinit" | "systemctl" => true,
        "git" => args.iter().any(|f| {
            matches!(
                f.text.as_str(),
                "push" | "reset" | "clean" | "branch" | "checkout" | "restore" | "switch"
            )
        }),
        n => is_sql_client(n),
    }
}

/// The words a command substitution prints when it only prints its own
/// words (`which rm`, `echo rm`, `printf rm`, `command -v rm`).
fn printed_words(inner: &Script) -> Option<Vec<String>> {
    let [cmd] = inner.commands.as_slice() else {
        return None;
    };
    if !cmd.redirects.is_empty() || cmd.piped || !cmd.input.is_empty() {
        return None;
    }
    let reader = Reader::new();
    let fields: Vec<Field> = cmd.words.iter().flat_map(|w| reader.expand(w)).collect();
    if fields.iter().any(|f| f.subst) {
        return None;
    }
    let (first, rest) = fields.split_first()?;
    let printer = matches!(
        name_of(&first.text).as_str(),
        "echo"
            | "printf"
            | "which"
            | "command"
            | "type"
            | "whereis"
            | "realpath"
            | "readlink"
            | "basename"
            | "dirname"
    );
    if !printer
        || rest
            .iter()
            .any(|f| f.text.contains('\\') || f.text.contains('%'))
    {
        return None;
    }
    Some(
        rest.iter()
            .filter(|f| !f.text.starts_with('-'))
            .map(|f| f.text.clone())
            .collect(),
    )
}

/// Words of a static command line (`env -S`, a git alias), `None` when it
/// holds expansions or does not parse.
fn words_of(text: &str) -> Option<Vec<Field>> {
    let script = shell::parse(text).ok()?;
    let reader = Reader::new();
    let mut out = Vec::new();
    for cmd in &script.commands {
        for w in &cmd.words {
            out.extend(reader.expand(w));
        }
    }
    Some(out)
}

fn join(fields: &[Field]) -> String {
    fields
        .iter()
        .map(|f| f.text.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A command word's name: its basename, lowercased.
fn name_of(word: &str) -> String {
    let base = word.rsplit('/').next().unwrap_or(word);
    base.to_ascii_lowercase()
}

fn assignment(text: &str) -> Option<(&str, &str)> {
    let (name, value) = text.split_once('=')?;
    let mut chars = name.chars();
    (chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric()))
    .then_some((name, value))
}

/// An absolute path with `.`, `..` and repeated or trailing slashes
/// resolved lexically; a relative one against `cwd` when it is known.
fn normalize_path(path: &str, cwd: Option<&str>) -> Option<String> {
    let joined;
    let path = if path.starts_with('/') {
        path
    } else {
        joined = format!("{}/{path}", cwd?);
        &joined
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    Some(format!("/{}", parts.join("/")))
}

pub(super) fn is_block_device(path: &str, cwd: Option<&str>) -> bool {
    let Some(path) = normalize_path(path, cwd) else {
        return false;
    };
    let Some(dev) = path.strip_prefix("/dev/") else {
        return false;
    };
    [
        "sd", "hd", "vd", "xvd", "nvme", "mmcblk", "disk", "md", "dm-", "loop", "mapper/", "sr",
        "block/", "root",
    ]
    .iter()
    .any(|p| dev.starts_with(p))
}

fn is_system_target(word: &str) -> bool {
    let home = word
        .strip_prefix('~')
        .or_else(|| word.strip_prefix("$HOME"))
        .or_else(|| word.strip_prefix("${HOME}"));
    if let Some(rest) = home {
        return rest.trim_matches(['/', '*', '.']).is_empty();
    }
    if !word.starts_with('/') {
        return false;
    }
    let Some(path) = normalize_path(word, None) else {
        return false;
    };
    // `/`, `/etc`, `/usr/`, `/*`, but not `/srv/app/data`.
    let path = path.trim_end_matches(['/', '*']);
    path.matches('/').count() <= 1
}

fn is_whole_tree(path: &str) -> bool {
    let p = path.trim_end_matches('/');
    matches!(
        p,
        "." | ":" | ":/" | "*" | "./*" | ":/*" | ":(top)" | "" | "./."
    ) || (p.starts_with("./")
        && p.trim_start_matches("./")
            .trim_matches(['.', '/'])
            .is_empty())
}

/// Python, JavaScript, Perl, Ruby and PHP string literals: (start, end, text).
fn string_literals(code: &str) -> Vec<(usize, usize, String)> {
    let bytes: Vec<(usize, char)> = code.char_indices().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let (start, c) = bytes[i];
        if c == '#' {
            while i < bytes.len() && bytes[i].1 != '\n' {
                i += 1;
            }
            continue;
        }
        if !matches!(c, '\'' | '"' | '`') {
            i += 1;
            continue;
        }
        let triple = i + 2 < bytes.len() && bytes[i + 1].1 == c && bytes[i + 2].1 == c && c != '`';
        let mut j = if triple { i + 3 } else { i + 1 };
        let mut text = String::new();
        while let Some(&(_, d)) = bytes.get(j) {
            if d == '\\' {
                match bytes.get(j + 1).map(|b| b.1) {
                    Some('n') => text.push('\n'),
                    Some('t') => text.push('\t'),
                    Some(e) => text.push(e),
                    None => {}
                }
                j += 2;
                continue;
            }
            if d == c
                && (!triple
                    || (bytes.get(j + 1).map(|b| b.1) == Some(c)
                        && bytes.get(j + 2).map(|b| b.1) == Some(c)))
            {
                j += if triple { 3 } else { 1 };
                break;
            }
            text.push(d);
            j += 1;
        }
        let end = bytes.get(j).map_or(code.len(), |b| b.0);
        out.push((start, end, text));
        i = j;
    }
    out
}

fn is_loose_separator(c: char) -> bool {
    matches!(
        c,
        ';' | '&' | '|' | '(' | ')' | '{' | '}' | '<' | '>' | '`' | '[' | ']'
    )
}

/// For the pessimistic reading: quotes and backslashes removed (a
/// continuation with its newline), `$IFS` and commas spaced, Unicode spaces
/// made ASCII spaces, newlines made `;`, zero-width characters dropped.
fn loose_normalize(raw: &str) -> String {
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
            '\\' if raw[i..].starts_with("\\\r\n") => {
                chars.nth(1);
            }
            '\\' if raw[i..].starts_with("\\\n") => {
                chars.next();
            }
            '\'' | '"' | '\\' => {}
            '\n' | '\r' | '\u{2028}' | '\u{2029}' => out.push(';'),
            ',' => out.push(' '),
            c if c.is_ascii() && !c.is_ascii_control() => out.push(c),
            c if c.is_whitespace() || c.is_control() => out.push(' '),
            '\u{200b}'..='\u{200f}' | '\u{2060}'..='\u{2064}' | '\u{feff}' | '\u{00ad}' => {}
            c => out.push(c),
        }
    }
    out
}

/// One option of a tool: its short letter (`'\0'` for none), its long name
/// (a name starting with `=` is short-only and never matched by `--`), and
/// whether it takes a value.
#[derive(Debug)]
pub(super) struct Opt(char, &'static str, bool);

/// Options found, by long name, and where operands are.
#[derive(Debug, Default)]
struct Parsed {
    found: Vec<(&'static str, Option<String>, Option<usize>)>,
    operands: Vec<usize>,
    first_operand: usize,
    unknown: bool,
}

impl Parsed {
    fn has(&self, long: &str) -> bool {
        self.found.iter().any(|(l, _, _)| *l == long)
    }

    fn value(&self, long: &str) -> Option<String> {
        self.found
            .iter()
            .find(|(l, _, _)| *l == long)
            .and_then(|(_, v, _)| v.clone())
    }

    /// An option's value as a field (an attached value is plain text).
    fn field(&self, long: &str, args: &[Field]) -> Option<Field> {
        let (_, value, index) = self.found.iter().find(|(l, _, _)| *l == long)?;
        match index {
            Some(i) => args.get(*i).cloned(),
            None => value.as_deref().map(Field::literal),
        }
    }

    fn operands<'a>(&self, args: &'a [Field]) -> impl Iterator<Item = &'a Field> + use<'a, '_> {
        self.operands.iter().filter_map(move |&i| args.get(i))
    }
}

/// Reads `args` with GNU getopt_long rules: clustered short options, a
/// value attached or in the next word, long options by any unambiguous
/// prefix (an ambiguous prefix counts as every option it could be: fail
/// closed), `--` ends options; `posix` stops at the first operand.
fn parse_options(args: &[Field], table: &'static [Opt], posix: bool) -> Parsed {
    let mut p = Parsed {
        first_operand: args.len(),
        ..Parsed::default()
    };
    let mut i = 0;
    while i < args.len() {
        let f = &args[i];
        let w = f.text.as_str();
        if w == "--" {
            p.first_operand = p.first_operand.min(i + 1);
            p.operands.extend(i + 1..args.len());
            break;
        }
        if f.subst || !w.starts_with('-') || w == "-" {
            if posix {
                p.first_operand = i;
                p.operands.extend(i..args.len());
                break;
            }
            p.operands.push(i);
            p.first_operand = p.first_operand.min(i);
            i += 1;
            continue;
        }
        if let Some(long) = w.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_owned())),
                None => (long, None),
            };
            let exact: Vec<&Opt> = table.iter().filter(|o| o.1 == name).collect();
            let matches: Vec<&Opt> = if exact.is_empty() {
                table
                    .iter()
                    .filter(|o| !o.1.starts_with('=') && o.1.starts_with(name))
                    .collect()
            } else {
                exact
            };
            if matches.is_empty() {
                p.unknown = true;
            }
            let takes = matches.iter().any(|o| o.2);
            let (value, index) = match value {
                Some(v) => (Some(v), None),
                None if takes && matches.len() == 1 => {
                    i += 1;
                    (args.get(i).map(|f| f.text.clone()), Some(i))
                }
                None => (None, None),
            };
            for o in matches {
                p.found.push((o.1, value.clone(), index));
            }
            i += 1;
            continue;
        }
        let letters: Vec<char> = w[1..].chars().collect();
        for (k, c) in letters.iter().enumerate() {
            match table.iter().find(|o| o.0 == *c) {
                Some(o) if o.2 => {
                    let attached: String = letters[k + 1..].iter().collect();
                    if attached.is_empty() {
                        i += 1;
                        p.found
                            .push((o.1, args.get(i).map(|f| f.text.clone()), Some(i)));
                    } else {
                        p.found.push((o.1, Some(attached), None));
                    }
                    break;
                }
                Some(o) => p.found.push((o.1, None, None)),
                None => p.unknown = true,
            }
        }
        i += 1;
    }
    p
}

macro_rules! table {
    ($name:ident: $($short:literal $long:literal $arg:literal),* $(,)?) => {
        const $name: &[Opt] = &[$(Opt($short, $long, $arg)),*];
    };
}

table!(RM: 'f' "force" false, 'i' "=i" false, 'I' "=I" false, '\0' "interactive" false,
    '\0' "one-file-system" false, '\0' "no-preserve-root" false, '\0' "preserve-root" false,
    'r' "recursive" false, 'R' "recursive" false, 'd' "dir" false, 'v' "verbose" false,
    '\0' "help" false, '\0' "version" false);
table!(TEE: 'a' "append" false, 'i' "ignore-interrupts" false, 'p' "=p" false,
    '\0' "output-error" false, '\0' "help" false, '\0' "version" false);
table!(CP: 't' "target-directory" true, 'S' "suffix" true, 'T' "no-target-directory" false,
    'a' "archive" false, 'b' "=b" false, '\0' "backup" false, 'd' "=d" false, 'f' "force" false,
    'i' "interactive" false, 'H' "=H" false, 'l' "link" false, 'L' "dereference" false,
    'n' "no-clobber" false, 'P' "no-dereference" false, 'p' "=p" false, '\0' "preserve" false,
    '\0' "no-preserve" false, '\0' "parents" false, 'R' "recursive" false, 'r' "recursive" false,
    '\0' "reflink" false, '\0' "remove-destination" false, '\0' "sparse" true,
    '\0' "strip-trailing-slashes" false, 's' "symbolic-link" false, 'u' "update" false,
    'v' "verbose" false, 'x' "one-file-system" false, 'Z' "=Z" false, '\0' "context" false,
    '\0' "debug" false, '\0' "attributes-only" false, '\0' "copy-contents" false,
    '\0' "exchange" false, '\0' "keep-directory-symlink" false);
table!(CHMOD: 'R' "recursive" false, 'c' "changes" false, 'f' "silent" false, '\0' "quiet" false,
    'v' "verbose" false, '\0' "no-preserve-root" false, '\0' "preserve-root" false,
    '\0' "reference" true, 'h' "no-dereference" false, '\0' "dereference" false,
    '\0' "from" true, 'H' "=H" false, 'L' "=L" false, 'P' "=P" false, '\0' "help" false,
    '\0' "version" false);
table!(GIT_PUSH: 'f' "force" false, '\0' "force-with-lease" false, '\0' "no-force-with-lease" false,
    '\0' "force-if-includes" false, '\0' "no-force-if-includes" false, 'd' "delete" false,
    '\0' "mirror" false, '\0' "prune" false, '\0' "all" false, '\0' "branches" false,
    '\0' "tags" false, '\0' "follow-tags" false, '\0' "no-follow-tags" false, 'n' "dry-run" false,
    '\0' "porcelain" false, 'q' "quiet" false, 'v' "verbose" false, 'u' "set-upstream" false,
    'o' "push-option" true, '\0' "repo" true, '\0' "receive-pack" true, '\0' "exec" true,
    '\0' "thin" false, '\0' "no-thin" false, '\0' "verify" false, '\0' "no-verify" false,
    '\0' "signed" false, '\0' "no-signed" false, '\0' "atomic" false, '\0' "no-atomic" false,
    '\0' "progress" false, '\0' "no-progress" false, '\0' "recurse-submodules" false,
    '\0' "no-recurse-submodules" false, '4' "ipv4" false, '6' "ipv6" false);
table!(GIT_RESET: '\0' "soft" false, '\0' "mixed" false, '\0' "hard" false, '\0' "merge" false,
    '\0' "keep" false, 'q' "quiet" false, '\0' "no-quiet" false, 'p' "patch" false,
    'N' "intent-to-add" false, '\0' "pathspec-from-file" true, '\0' "pathspec-file-nul" false,
    '\0' "recurse-submodules" false, '\0' "no-recurse-submodules" false, '\0' "refresh" false,
    '\0' "no-refresh" false);
table!(GIT_CLEAN: 'd' "=d" false, 'f' "force" false, 'i' "interactive" false, 'n' "dry-run" false,
    'q' "quiet" false, 'e' "exclude" true, 'x' "=x" false, 'X' "=X" false);
table!(GIT_BRANCH: 'D' "=D" false, 'd' "delete" false, 'f' "force" false, 'M' "=M" false,
    'm' "move" false, 'C' "=C" false, 'c' "copy" false, 'l' "list" false, 'a' "all" false,
    'r' "remotes" false, 'v' "verbose" false, 'q' "quiet" false, 't' "track" false,
    '\0' "no-track" false, 'u' "set-upstream-to" true, '\0' "unset-upstream" false,
    '\0' "edit-description" false, '\0' "contains" false, '\0' "no-contains" false,
    '\0' "merged" false, '\0' "no-merged" false, '\0' "points-at" true, '\0' "format" true,
    '\0' "sort" true, '\0' "column" false, '\0' "no-column" false, '\0' "color" false,
    '\0' "no-color" false, 'i' "ignore-case" false, '\0' "show-current" false,
    '\0' "create-reflog" false, '\0' "recurse-submodules" false, '\0' "omit-empty" false,
    '\0' "abbrev" false, '\0' "no-abbrev" false);
table!(GIT_CHECKOUT: 'b' "=b" true, 'B' "=B" true, '\0' "orphan" true, 'l' "=l" false,
    'f' "force" false, 'm' "merge" false, 'p' "patch" false, 'q' "quiet" false, 't' "track" false,
    '\0' "no-track" false, 'd' "detach" false, '2' "ours" false, '3' "theirs" false,
    '\0' "conflict" true, '\0' "overlay" false, '\0' "no-overlay" false, '\0' "guess" false,
    '\0' "no-guess" false, '\0' "ignore-other-worktrees" false, '\0' "recurse-submodules" false,
    '\0' "pathspec-from-file" true, '\0' "pathspec-file-nul" false, '\0' "progress" false,
    '\0' "no-progress" false, '\0' "ignore-skip-worktree-bits" false);
table!(GIT_RESTORE: 's' "source" true, 'S' "staged" false, 'W' "worktree" false, 'p' "patch" false,
    'q' "quiet" false, '\0' "ours" false, '\0' "theirs" false, 'm' "merge" false,
    '\0' "conflict" true, '\0' "ignore-unmerged" false, '\0' "overlay" false,
    '\0' "no-overlay" false, '\0' "pathspec-from-file" true, '\0' "pathspec-file-nul" false,
    '\0' "recurse-submodules" false, '\0' "progress" false, '\0' "ignore-skip-worktree-bits" false);
table!(GIT_SWITCH: 'c' "create" true, 'C' "force-create" true, 'd' "detach" false, '\0' "guess" false,
    '\0' "no-guess" false, 'f' "force" false, '\0' "discard-changes" false, 'm' "merge" false,
    '\0' "conflict" true, 'q' "quiet" false, 't' "track" false, '\0' "no-track" false,
    '\0' "orphan" true, '\0' "ignore-other-worktrees" false, '\0' "recurse-submodules" false,
    '\0' "progress" false);
table!(ENV: 'i' "ignore-environment" false, '0' "null" false, 'u' "unset" true, 'C' "chdir" true,
    'S' "split-string" true, 'v' "debug" false, 'a' "argv0" true, '\0' "block-signal" false,
    '\0' "default-signal" false, '\0' "ignore-signal" false, '\0' "list-signal-handling" false,
    '\0' "help" false, '\0' "version" false);
table!(SUDO: 'u' "user" true, 'g' "group" true, 'h' "host" true, 'p' "prompt" true, 'r' "role" true,
    't' "type" true, 'C' "close-from" true, 'D' "chdir" true, 'T' "command-timeout" true,
    'U' "other-user" true, 'A' "askpass" false, 'b' "background" false, 'E' "preserve-env" false,
    'H' "set-home" false, 'i' "login" false, 'k' "reset-timestamp" false,
    'K' "remove-timestamp" false, 'n' "non-interactive" false, 'P' "preserve-groups" false,
    'S' "stdin" false, 's' "shell" false, 'B' "bell" false, 'N' "no-update" false,
    'R' "chroot" true, '\0' "help" false);
table!(DOAS: 'u' "=u" true, 'C' "=C" true, 'n' "=n" false, 's' "=s" false, 'L' "=L" false);
table!(NICE: 'n' "adjustment" true, '\0' "help" false, '\0' "version" false,
    '0' "=0" false, '1' "=1" false, '2' "=2" false, '3' "=3" false, '4' "=4" false, '5' "=5" false,
    '6' "=6" false, '7' "=7" false, '8' "=8" false, '9' "=9" false);
table!(IONICE: 'c' "class" true, 'n' "classdata" true, 'p' "pid" false, 'P' "pgid" false,
    'u' "uid" false, 't' "ignore" false);
table!(TIMEOUT: 'k' "kill-after" true, 's' "signal" true, '\0' "foreground" false,
    '\0' "preserve-status" false, 'v' "verbose" false);
table!(COMMAND: 'p' "=p" false, 'v' "v" false, 'V' "V" false);
table!(EXEC: 'a' "=a" true, 'c' "=c" false, 'l' "=l" false);
table!(TIME: 'p' "portability" false, 'f' "format" true, 'o' "output" true, 'a' "append" false,
    'v' "verbose" false, 'q' "quiet" false);
table!(STDBUF: 'i' "input" true, 'o' "output" true, 'e' "error" true);
table!(SETSID: 'c' "ctty" false, 'f' "fork" false, 'w' "wait" false);
table!(CHROOT: '\0' "userspec" true, '\0' "groups" true, '\0' "skip-chdir" false);
table!(TASKSET: 'a' "all-tasks" false, 'c' "cpu-list" false, 'p' "pid" false);
table!(CHRT: 'b' "batch" false, 'd' "deadline" false, 'f' "fifo" false, 'i' "idle" false,
    'o' "other" false, 'r' "rr" false, 'R' "reset-on-fork" false, 'a' "all-tasks" false,
    'm' "max" false, 'p' "pid" false, 'v' "verbose" false, 'T' "sched-runtime" true,
    'P' "sched-period" true, 'D' "sched-deadline" true);
table!(XARGS: '0' "null" false, 'a' "arg-file" true, 'd' "delimiter" true, 'E' "=E" true,
    'e' "eof" false, 'I' "=I" true, 'i' "replace" false, 'L' "=L" true, 'l' "max-lines" false,
    'n' "max-args" true, 'P' "max-procs" true, 'p' "interactive" false, 'r' "no-run-if-empty" false,
    's' "max-chars" true, 't' "verbose" false, 'x' "exit" false, '\0' "process-slot-var" true,
    '\0' "show-limits" false, 'o' "open-tty" false);
table!(PKEXEC: '\0' "user" true, '\0' "disable-internal-agent" false, '\0' "keep-cwd" false);
table!(NPX: 'y' "yes" false, '\0' "no" false, 'p' "package" true, 'c' "command" true,
    'q' "quiet" false, '\0' "no-install" false);
table!(FLOCK: 's' "shared" false, 'x' "exclusive" false, 'u' "unlock" false, 'n' "nonblock" false,
    'w' "timeout" true, 'E' "conflict-exit-code" true, 'o' "close" false, 'c' "command" true,
    'F' "no-fork" false, 'v' "verbose" false);
table!(SU: 'c' "command" true, 'l' "login" false, 'm' "preserve-environment" false,
    'p' "=p" false, 's' "shell" true, 'g' "group" true, 'G' "supp-group" true, 'u' "user" true,
    'f' "fast" false, 'P' "pty" false, 'w' "whitelist-environment" true,
    '\0' "session-command" true);
table!(SCRIPT: 'c' "command" true, 'a' "append" false, 'e' "return" false, 'f' "flush" false,
    'q' "quiet" false, 't' "timing" false, 'T' "log-timing" true, 'I' "log-in" true,
    'O' "log-out" true, 'B' "log-io" true, 'E' "echo" true, 'm' "logging-format" true);
table!(SSH: 'B' "=B" true, 'b' "=b" true, 'c' "=c" true, 'D' "=D" true, 'E' "=E" true, 'e' "=e" true,
    'F' "=F" true, 'I' "=I" true, 'i' "=i" true, 'J' "=J" true, 'L' "=L" true, 'l' "=l" true,
    'm' "=m" true, 'O' "=O" true, 'o' "=o" true, 'p' "=p" true, 'Q' "=Q" true, 'R' "=R" true,
    'S' "=S" true, 'W' "=W" true, 'w' "=w" true, '4' "=4" false, '6' "=6" false, 'A' "=A" false,
    'a' "=a" false, 'C' "=C" false, 'f' "=f" false, 'G' "=G" false, 'g' "=g" false, 'K' "=K" false,
    'k' "=k" false, 'M' "=M" false, 'N' "=N" false, 'n' "=n" false, 'q' "=q" false, 's' "=s" false,
    'T' "=T" false, 't' "=t" false, 'V' "=V" false, 'v' "=v" false, 'X' "=X" false, 'x' "=x" false,
    'Y' "=Y" false, 'y' "=y" false);
table!(WATCH: 'n' "interval" true, 'd' "differences" false, 't' "no-title" false, 'b' "beep" false,
    'e' "errexit" false, 'g' "chgexit" false, 'c' "color" false, 'x' "exec" false,
    'p' "precise" false, 'w' "no-wrap" false, 'q' "equexit" true, 'r' "no-rerun" false);
