//! Generated spellings of destructive and benign commands: option prefixes,
//! split and combined flags, redirections anywhere, nested wrappers and
//! interpreters, quoting and path spellings, as strings and as argv arrays.
//! Every destructive spelling must be refused and every benign one allowed;
//! the counting test reports misses and false refusals over a fixed sample.

use std::io::Write;

use proptest::prelude::*;
use serde_json::{Value, json};
use tool_gate::DestructiveGuard;

/// A token: a word to spell (quoted at random) or, with a leading `@`, raw
/// shell syntax (a redirection) kept as written and absent from argv form.
type Tokens = &'static [&'static str];

/// Destructive commands; `{ROOT}`, `{HOME}`, `{DEV}`, `{ETC}` are replaced
/// by a generated spelling of that path.
const DESTRUCTIVE: &[Tokens] = &[
    &["rm", "-rf", "{ROOT}"],
    &["rm", "-fr", "{HOME}"],
    &["rm", "-r", "-f", "build"],
    &["rm", "-f", "-R", "build"],
    &["rm", "-vrf", "build"],
    &["rm", "build", "-r"],
    &["rm", "--recursive", "build"],
    &["rm", "--rec", "--force", "{ROOT}"],
    &["rm", "--recu", "build"],
    &["rm", "--no-preserve-root", "-f", "{ROOT}"],
    &["rm", "--no-p", "-rf", "{ROOT}"],
    &["rm", "-i", "-r", "--", "x"],
    &["rimraf", "node_modules"],
    &["find", ".", "-delete"],
    &["find", "{ROOT}", "-name", "x", "-exec", "rm", "{}", "+"],
    &["find", ".", "-execdir", "/bin/rm", "-f", "{}", ";"],
    &["git", "push", "--force", "origin", "main"],
    &["git", "push", "--forc", "origin", "main"],
    &["git", "push", "--force-w", "origin", "main"],
    &["git", "push", "--force-with-lease=main", "origin", "main"],
    &["git", "push", "-f"],
    &["git", "push", "-uf", "origin", "main"],
    &["git", "push", "-fu", "origin", "main"],
    &["git", "push", "origin", "+main"],
    &["git", "push", "origin", ":main"],
    &["git", "push", "--mir", "backup"],
    &["git", "push", "--delete", "origin", "x"],
    &["git", "push", "-d", "origin", "x"],
    &["git", "-C", "/repo", "push", "-f"],
    &["git", "--no-pager", "-c", "a.b=c", "push", "--force"],
    &["git", "reset", "--hard"],
    &["git", "reset", "--har", "HEAD~1"],
    &["git", "reset", "-q", "--hard", "HEAD"],
    &["git", "clean", "-f"],
    &["git", "clean", "-fd"],
    &["git", "clean", "-d", "-f"],
    &["git", "clean", "-xdf"],
    &["git", "clean", "--force"],
    &["git", "clean", "--fo"],
    &["git", "branch", "-D", "feature"],
    &["git", "branch", "-df", "feature"],
    &["git", "branch", "-d", "-f", "feature"],
    &["git", "branch", "--delete", "--force", "feature"],
    &["git", "branch", "--del", "--for", "feature"],
    &["git", "checkout", "--", "."],
    &["git", "checkout", "-f", "main"],
    &["git", "checkout", "--force", "main"],
    &["git", "restore", "."],
    &["mkfs.ext4", "{DEV}"],
    &["mke2fs", "{DEV}"],
    &["wipefs", "-a", "{DEV}"],
    &["shred", "-u", "secrets.txt"],
    &["dd", "if=/dev/zero", "of={DEV}", "bs=1M"],
    &["dd", "if=in.img", "of=out.img"],
    &["cat", "disk.img", "@>{DEV}"],
    &["cat", "disk.img", "@>>{DEV}"],
    &["@1>{DEV}", "cat", "disk.img"],
    &["cat", "@&>{DEV}", "disk.img"],
    &["cp", "disk.img", "{DEV}"],
    &["cp", "-t", "{DEV}", "disk.img"],
    &["tee", "{DEV}"],
    &["tee", "-a", "log", "{DEV}"],
    &["mv", "important.db", "/dev/null"],
    &["chmod", "-R", "777", "{ROOT}"],
    &["chmod", "777", "-R", "{ETC}"],
    &["chmod", "--rec", "000", "{HOME}"],
    &["chown", "-R", "nobody", "{ETC}"],
    &["chgrp", "--recursive", "staff", "{ROOT}"],
    &["shutdown", "-h", "now"],
    &["reboot"],
    &["poweroff"],
    &["systemctl", "reboot"],
    &["systemctl", "-i", "poweroff"],
    &["init", "0"],
    &["kill", "-9", "-1"],
    &["kill", "-s", "KILL", "-1"],
    &["kill", "--", "-1"],
    &["psql", "-c", "DROP TABLE users"],
    &["psql", "--command=drop table users"],
    &["mysql", "-e", "drop database prod"],
    &["sqlite3", "app.db", "DELETE FROM users"],
    &["sqlite3", "app.db", "delete from users;"],
    &["psql", "-c", "TRUNCATE audit"],
    &["mysql", "-e", "Truncate Table audit"],
    &["psql", "-c", "drop schema app cascade"],
];

/// Harmless commands, including near-misses of the destructive ones.
const BENIGN: &[Tokens] = &[
    &["ls", "-la"],
    &["cat", "README.md"],
    &["git", "status"],
    &["git", "push", "origin", "main"],
    &["git", "push", "--follow-tags", "origin", "main"],
    &["git", "push", "--fol", "origin", "main"],
    &["git", "push", "-u", "origin", "main"],
    &["git", "reset", "--soft", "HEAD~1"],
    &["git", "reset", "HEAD", "file.rs"],
    &["git", "clean", "-n"],
    &["git", "clean", "-nd"],
    &["git", "branch", "-d", "merged"],
    &["git", "branch", "-M", "main"],
    &["git", "checkout", "main"],
    &["git", "checkout", "-b", "feature"],
    &["git", "restore", "--staged", "."],
    &["git", "log", "--grep", "reboot"],
    &["cargo", "build", "--release"],
    &["rm", "notes.txt"],
    &["rm", "-f", "build.log"],
    &["rm", "-i", "a.txt", "b.txt"],
    &["rm", "--", "-rf"],
    &["rm", "-v", "--force", "x.o"],
    &["echo", "hello"],
    &["echo", "rm", "-rf", "/"],
    &["grep", "-rn", "shutdown", "src"],
    &["grep", "-r", "DROP TABLE", "migrations"],
    &["chmod", "-R", "755", "build"],
    &["chmod", "644", "/etc/hosts"],
    &["cp", "build.log", "/dev/null"],
    &["cp", "-f", "a.txt", "/dev/null"],
    &["cp", "-r", "src", "dst"],
    &["cat", "x", "@>/dev/null"],
    &["make", "@2>/dev/null"],
    &["@>/dev/null", "make", "test"],
    &["cat", "/dev/sda", "@>mbr.bin"],
    &["dd", "if=in.img"],
    &["tee", "build.log"],
    &["mv", "a.txt", "b.txt"],
    &["kill", "-1", "1234"],
    &["kill", "-9", "1234"],
    &["find", ".", "-name", "*.rs"],
    &[
        "find", ".", "-type", "f", "-exec", "grep", "-l", "x", "{}", "+",
    ],
    &["systemctl", "status", "nginx"],
    &["sqlite3", "app.db", "select * from users"],
    &["sqlite3", "app.db", "DELETE FROM users WHERE id = 1"],
    &["psql", "-c", "select count(*) from audit"],
    &["truncate", "-s", "0", "app.log"],
    &["printf", "%s\\n", "done"],
];

/// Words that reach the next command: (tokens, whether the inner command
/// is passed as one shell string rather than as argv).
const WRAPPERS: &[(&[&str], bool)] = &[
    (&["sudo"], false),
    (&["sudo", "-u", "root"], false),
    (&["sudo", "-E", "--"], false),
    (&["doas"], false),
    (&["env", "A=1"], false),
    (&["env", "-i", "PATH=/bin"], false),
    (&["/usr/bin/env"], false),
    (&["env", "-u", "HOME", "-C", "/tmp"], false),
    (&["nice"], false),
    (&["nice", "-n", "5"], false),
    (&["nice", "--adjustment=5"], false),
    (&["ionice", "-c", "3"], false),
    (&["nohup"], false),
    (&["timeout", "10"], false),
    (&["timeout", "-s", "KILL", "5"], false),
    (&["timeout", "--kill-after=3", "10"], false),
    (&["command"], false),
    (&["exec"], false),
    (&["stdbuf", "-o0"], false),
    (&["setsid"], false),
    (&["time"], false),
    (&["xargs"], false),
    (&["xargs", "-0", "-n", "1"], false),
    (&["busybox"], false),
    (&["sh", "-c"], true),
    (&["bash", "-c"], true),
    (&["bash", "-lc"], true),
    (&["bash", "-e", "-o", "pipefail", "-c"], true),
    (&["dash", "-c"], true),
    (&["zsh", "-c"], true),
    (&["eval"], true),
    (&["su", "root", "-c"], true),
    (&["ssh", "-p", "22", "host"], true),
    (&["watch", "-n", "5"], false),
];

fn pick<'a, T>(rng: &mut u64, items: &'a [T]) -> &'a T {
    &items[(next(rng) % items.len() as u64) as usize]
}

fn next(state: &mut u64) -> u64 {
    // splitmix64
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn path(rng: &mut u64, placeholder: &str) -> Option<&'static str> {
    let choices: &[&str] = match placeholder {
        "{ROOT}" => &["/", "//", "/.", "/./", "///", "/*"],
        "{HOME}" => &["~", "~/", "$HOME", "${HOME}", "~/*"],
        "{DEV}" => &[
            "/dev/sda",
            "//dev//sda",
            "/dev/./sda",
            "/dev/../dev/sda",
            "/dev/nvme0n1",
            "/dev/disk/by-id/wwn-0x5000",
            "/dev/mapper/root",
        ],
        "{ETC}" => &["/etc", "/etc/", "//etc", "/usr/../etc", "/etc/."],
        _ => return None,
    };
    Some(*pick(rng, choices))
}

/// `text` as one single-quoted shell word.
fn single_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// One spelling of a word the shell reads back as `word`.
fn spell_word(rng: &mut u64, word: &str) -> String {
    // `$HOME` must stay expandable: unquoted or double-quoted only.
    if word.contains('$') {
        return match next(rng) % 2 {
            0 => word.to_owned(),
            _ => format!("\"{word}\""),
        };
    }
    // `~`, globs and `{}` mean something only unquoted.
    if word.starts_with('~') || word.contains('*') || word == "{}" {
        return word.to_owned();
    }
    if word == ";" {
        return pick(rng, &["\\;", "';'", "\";\""]).to_string();
    }
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./=+:~,@%".contains(c);
    match next(rng) % 6 {
        0 => single_quoted(word),
        1 if !word.contains(['"', '\\', '`', '$']) => format!("\"{word}\""),
        2 if word.len() > 1 && word.chars().all(safe) => {
            let cut = 1 + (next(rng) as usize) % (word.len() - 1);
            format!("{}''{}", &word[..cut], &word[cut..])
        }
        3 if word.len() > 1 && word.chars().all(safe) => format!("\\{word}"),
        4 if word.len() > 1 && word.chars().all(safe) => {
            let cut = 1 + (next(rng) as usize) % (word.len() - 1);
            format!("\"{}\"{}", &word[..cut], &word[cut..])
        }
        _ if word.chars().all(safe) => word.to_owned(),
        _ => single_quoted(word),
    }
}

/// A generated case: the argument object and its command text.
#[derive(Debug, Clone)]
pub(crate) struct Case {
    pub(crate) args: Value,
    pub(crate) text: String,
}

fn generate(seed: u64, tokens: Tokens) -> Case {
    let mut rng = seed;
    let rng = &mut rng;
    // Resolve placeholders once so string and argv forms agree.
    let words: Vec<(bool, String)> = tokens
        .iter()
        .map(|t| {
            let (raw, t) = match t.strip_prefix('@') {
                Some(rest) => (true, rest),
                None => (false, *t),
            };
            let mut out = t.to_owned();
            for p in ["{ROOT}", "{HOME}", "{DEV}", "{ETC}"] {
                if out.contains(p) {
                    out = out.replace(p, path(rng, p).expect("placeholder"));
                }
            }
            (raw, out)
        })
        .collect();
    let has_raw = words.iter().any(|(raw, _)| *raw);
    // A harmless redirection inserted somewhere in the simple command.
    let mut spelled: Vec<String> = words
        .iter()
        .map(|(raw, w)| if *raw { w.clone() } else { spell_word(rng, w) })
        .collect();
    if next(rng).is_multiple_of(3) {
        let redirect = pick(rng, &["2>/dev/null", "2>&1", "</dev/null", ">/dev/null"]);
        // Never between `-exec` and its terminator for find, harmless
        // everywhere else.
        let at = (next(rng) as usize) % (spelled.len() + 1);
        let keep_out =
            (tokens[0] == "find" && at > 0) || tokens.contains(&"tee") || tokens[0] == "@1>{DEV}";
        if !keep_out {
            spelled.insert(at, redirect.to_string());
        }
    }
    let sep = *pick(rng, &[" ", "  ", "\t", " \\\n"]);
    let mut text = spelled.join(sep);
    let mut argv: Vec<String> = words
        .iter()
        .filter(|(r, _)| !r)
        .map(|(_, w)| w.clone())
        .collect();
    let wrappers = next(rng) % 4;
    let mut argv_ok = !has_raw;
    for _ in 0..wrappers {
        let (wrapper, as_string) = *pick(rng, WRAPPERS);
        if wrapper[0] == "busybox"
            && ![
                "rm", "dd", "find", "tee", "cp", "mv", "chmod", "chown", "kill", "reboot",
                "poweroff",
            ]
            .contains(&tokens[0])
        {
            continue;
        }
        if as_string {
            text = format!("{} {}", wrapper.join(" "), single_quoted(&text));
            argv_ok = false;
        } else {
            text = format!("{} {}", wrapper.join(" "), text);
            let mut w: Vec<String> = wrapper.iter().map(|s| s.to_string()).collect();
            w.extend(argv);
            argv = w;
        }
    }
    let text = match next(rng) % 10 {
        0 => format!("true && {text}"),
        1 => format!("{text}; echo done"),
        2 => format!("({text})"),
        3 => format!("{{ {text}; }}"),
        4 => format!("cd /tmp\n{text}"),
        5 => format!("false || {text}"),
        6 => format!("if true; then {text}; fi"),
        7 => format!("#!/bin/sh\n# step\n{text}"),
        8 => format!("ls | {text}"),
        _ => text,
    };
    let args = match next(rng) % 5 {
        0 if argv_ok => json!({ "cmd": argv }),
        1 => json!({ "input": { "steps": [text] } }),
        2 => json!(text),
        _ => json!({ "command": text }),
    };
    Case { args, text }
}

fn refused(case: &Case) -> bool {
    DestructiveGuard::default()
        .find(&case.args)
        .expect("within budget")
        .is_some()
}

/// Every destructive spelling refused, every benign one allowed, over
/// `PER_COMMAND` generated cases per command; prints the figures.
#[test]
fn generated_spellings_misses_and_false_refusals_are_counted() {
    const PER_COMMAND: u64 = 120;
    let mut misses = Vec::new();
    let mut false_refusals = Vec::new();
    let (mut n_destructive, mut n_benign) = (0, 0);
    for (i, tokens) in DESTRUCTIVE.iter().enumerate() {
        for k in 0..PER_COMMAND {
            let case = generate((i as u64) << 32 | k, tokens);
            n_destructive += 1;
            if !refused(&case) {
                misses.push(case);
            }
        }
    }
    for (i, tokens) in BENIGN.iter().enumerate() {
        for k in 0..PER_COMMAND {
            let case = generate(0xbe00_0000_0000 | (i as u64) << 32 | k, tokens);
            n_benign += 1;
            if refused(&case) {
                false_refusals.push(case);
            }
        }
    }
    let mut report = std::io::stderr();
    let _ = writeln!(
        report,
        "destructive-command guard: {} misses over {n_destructive} destructive spellings, \
         {} false refusals over {n_benign} benign spellings",
        misses.len(),
        false_refusals.len()
    );
    for case in misses.iter().take(15) {
        let _ = writeln!(report, "miss: {}", case.args);
    }
    for case in false_refusals.iter().take(15) {
        let _ = writeln!(report, "false refusal: {}", case.args);
    }
    assert!(
        misses.is_empty() && false_refusals.is_empty(),
        "{} misses / {n_destructive}, {} false refusals / {n_benign}",
        misses.len(),
        false_refusals.len()
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn every_generated_destructive_spelling_is_refused(
        tokens in prop::sample::select(DESTRUCTIVE.to_vec()),
        seed in any::<u64>(),
    ) {
        let case = generate(seed, tokens);
        prop_assert!(refused(&case), "allowed: {}", case.args);
    }

    #[test]
    fn every_generated_benign_spelling_is_allowed(
        tokens in prop::sample::select(BENIGN.to_vec()),
        seed in any::<u64>(),
    ) {
        let case = generate(seed, tokens);
        prop_assert!(!refused(&case), "refused: {} ({:?})", case.args, case.text);
    }
}
