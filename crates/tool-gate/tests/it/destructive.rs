//! The destructive-command guard against the attack shapes it names.

use serde_json::{Value, json};
use tool_gate::{Control, DestructiveGuard, ToolCall};

pub(crate) fn verdict(args: &Value) -> Option<&'static str> {
    DestructiveGuard::default()
        .find(args)
        .expect("within budget")
        .map(|f| f.rule)
}

fn command(text: &str) -> Option<&'static str> {
    verdict(&json!({"command": text}))
}

#[test]
fn destructive_commands_are_refused_in_their_common_spellings() {
    let cases = [
        ("rm -rf /", "recursive-rm"),
        ("rm -fr ~", "recursive-rm"),
        ("rm -r -f build", "recursive-rm"),
        ("rm -Rf /var", "recursive-rm"),
        ("rm --recursive --force /srv", "recursive-rm"),
        ("rm --no-preserve-root -f /", "recursive-rm"),
        ("/bin/rm -rf /", "recursive-rm"),
        ("sudo rm -rf /", "recursive-rm"),
        ("env LANG=C nice -n 5 rm -rf /", "recursive-rm"),
        ("echo ok && rm -rf /", "recursive-rm"),
        ("ls; rm -rf /", "recursive-rm"),
        ("true || rm -rf /", "recursive-rm"),
        ("find / -name x | xargs rm -rf", "recursive-rm"),
        ("bash -c 'rm -rf /'", "recursive-rm"),
        ("sh -c \"rm -rf /\"", "recursive-rm"),
        ("eval \"rm -rf ~\"", "recursive-rm"),
        ("$(rm -rf /)", "recursive-rm"),
        ("`rm -rf /`", "recursive-rm"),
        ("find . -delete", "find-delete"),
        ("find . -type f -exec rm {} \\;", "find-delete"),
        ("find . -execdir /bin/rm {} +", "find-delete"),
        ("git push --force origin main", "git-force-push"),
        ("git push -f", "git-force-push"),
        ("git push origin +main", "git-force-push"),
        ("git push --force-with-lease", "git-force-push"),
        ("git push --mirror backup", "git-force-push"),
        ("git push origin :main", "git-force-push"),
        (
            "python -c \"import shutil; shutil.rmtree('/srv')\"",
            "recursive-rm",
        ),
        ("npx rimraf node_modules", "recursive-rm"),
        ("git -C /repo push -f", "git-force-push"),
        ("git reset --hard HEAD~3", "git-reset-hard"),
        ("git clean -fdx", "git-clean-force"),
        ("git branch -D feature", "git-branch-force-delete"),
        ("mkfs.ext4 /dev/sda1", "wipe-filesystem"),
        ("mke2fs /dev/sdb", "wipe-filesystem"),
        ("wipefs -a /dev/sda", "wipe-filesystem"),
        ("shred -u secrets.txt", "wipe-filesystem"),
        ("dd if=/dev/zero of=/dev/sda bs=1M", "write-to-device"),
        ("dd if=in.img of=out.img", "dd-write"),
        ("cat image > /dev/nvme0n1", "write-to-device"),
        ("mv important.db /dev/null", "write-to-device"),
        (
            "cat image | sudo tee /dev/sdb > /dev/null",
            "write-to-device",
        ),
        ("cat x 1>/dev/sda", "write-to-device"),
        ("chmod -R 777 /", "recursive-chmod-system"),
        ("chown -R nobody /etc", "recursive-chmod-system"),
        ("chmod --recursive 000 ~", "recursive-chmod-system"),
        ("shutdown -h now", "power-control"),
        ("reboot", "power-control"),
        ("systemctl poweroff", "power-control"),
        ("init 0", "power-control"),
        ("kill -9 -1", "kill-all"),
        (":(){ :|:& };:", "fork-bomb"),
        ("psql -c 'DROP TABLE users'", "sql-drop"),
        ("drop database prod;", "sql-drop"),
        ("TRUNCATE TABLE audit", "sql-truncate"),
    ];
    for (text, rule) in cases {
        assert_eq!(command(text), Some(rule), "{text}");
    }
}

#[test]
fn obfuscated_spellings_are_refused_too() {
    let cases = [
        "r'm' -rf /",
        "\"rm\" -rf /",
        "\\rm -rf /",
        "r\\m -rf /",
        "rm${IFS}-rf${IFS}/",
        "rm$IFS-rf$IFS/",
        "rm\t-rf\t/",
        "rm\u{a0}-rf\u{a0}/",
        "rm\u{3000}-rf /",
        "r\u{200b}m -rf /",
        "RM -RF /",
        "echo hi\nrm -rf /",
        "$'rm' -rf /",
        "{ rm -rf /; }",
        "(rm -rf /)",
        "git\tpush\t-f",
        "r\\\nm -rf /",
        "rm -r\\\r\nf /",
        "{rm,-rf,/}",
        "git push origin\\\n --force",
    ];
    for text in cases {
        assert!(command(text).is_some(), "{text:?} was allowed");
    }
}

#[test]
fn commands_are_found_under_any_key_in_arrays_and_nested_values() {
    assert!(verdict(&json!({"input": "rm -rf /"})).is_some());
    assert!(verdict(&json!({"argv": ["rm", "-rf", "/"]})).is_some());
    assert!(verdict(&json!({"argv": ["/usr/bin/git", "push", "--force"]})).is_some());
    assert!(verdict(&json!({"steps": [{"run": {"script": "git reset --hard"}}]})).is_some());
    assert!(
        verdict(&json!({"payload": "{\"cmd\": \"rm -rf /\"}"})).is_some(),
        "JSON inside a string"
    );
    assert!(verdict(&json!({"rm -rf /": true})).is_some(), "a key");
    assert!(
        verdict(&json!("rm -rf /")).is_some(),
        "bare string arguments"
    );
    let finding = DestructiveGuard::default()
        .find(&json!({"a": [{"b/c": "git clean -f"}]}))
        .expect("budget")
        .expect("finding");
    assert_eq!(finding.pointer, "/a/0/b~1c");
}

#[test]
fn ordinary_commands_pass() {
    let cases = [
        "ls -la",
        "rm notes.txt",
        "rm -f build.log",
        "git status",
        "git push origin main",
        "git reset --soft HEAD~1",
        "git clean -n",
        "git branch -d merged",
        "grep -r pattern src",
        "cp -r src dst",
        "dd if=in.img",
        "chmod -R 755 ./build",
        "chmod 700 /home/me/project/script.sh",
        "echo > /dev/null",
        "echo ok | tee build.log",
        "kill -1 1234",
        "cargo test -p tool-gate",
        "find . -name '*.rs'",
        "select * from users where id = 1",
        "format the report",
    ];
    for text in cases {
        assert_eq!(command(text), None, "{text}");
    }
    assert_eq!(verdict(&json!({"n": 1, "ok": true, "x": null})), None);
}

#[test]
fn arguments_beyond_the_budget_are_refused_unread() {
    let mut deep = json!("leaf");
    for _ in 0..100 {
        deep = json!([deep]);
    }
    let guard = DestructiveGuard::default();
    assert!(guard.find(&deep).is_err());
    let wide = Value::Array((0..20_000).map(|i| json!(i)).collect());
    assert!(guard.find(&wide).is_err());
    let result = guard.evaluate(&ToolCall::new("s", "t", deep));
    assert!(result.is_denied() && !result.errored());
}

/// Commands judged by lionagi 0.36.0's `guard_destructive` (black box, see
/// fixtures/tool-gate/gen_destructive_oracle.py).
const ORACLE: &str = include_str!("../../../../fixtures/tool-gate/destructive_oracle.jsonl");

/// Commands the original refuses for their text though they only print it.
const ECHOES: &[&str] = &["echo rm -rf /"];

#[test]
fn every_command_the_original_refuses_is_refused_here_too() {
    let mut original_denies = 0;
    let mut only_here = 0;
    for line in ORACLE.lines().filter(|l| !l.trim().is_empty()) {
        let case: Value = serde_json::from_str(line).expect("fixture line");
        let text = case["command"].as_str().expect("command");
        let ours = command(text);
        match case["oracle"].as_str().expect("oracle") {
            // The original matches text: `echo` prints the words, the shell
            // runs nothing destructive, and this guard reads the command.
            "deny" if ECHOES.contains(&text) => {
                original_denies += 1;
                assert_eq!(ours, None, "{text:?} only prints");
            }
            "deny" => {
                original_denies += 1;
                assert!(
                    ours.is_some(),
                    "the original refuses {text:?}; we allowed it"
                );
            }
            "allow" => only_here += usize::from(ours.is_some()),
            other => panic!("unexpected oracle verdict {other}"),
        }
    }
    assert_eq!(original_denies, 28);
    // The original reads only a `command` string and a fixed pattern list;
    // this guard refuses strictly more (obfuscated spellings, more commands).
    assert!(only_here > 0);
}
