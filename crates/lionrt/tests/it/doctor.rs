//! `lionrt doctor`, `completions`, the default `--db` and the help of the
//! reading verbs, end to end.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

fn bin(home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lionrt"));
    cmd.env_remove("LIONRT_DB")
        .env_remove("LIONAGI_HOME")
        .env_remove("LIONAGI_SETTINGS_FILE")
        .env_remove("LIONAGI_PLUGINS_DIR")
        .env("HOME", home);
    cmd
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"))
}

fn check<'a>(v: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    v["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["check"] == name)
        .unwrap_or_else(|| panic!("no {name} check in {v}"))
}

#[test]
fn doctor_reports_agents_settings_and_the_database() {
    let home = tempfile::tempdir().expect("tempdir");
    let path = home.path().join("bin");
    std::fs::create_dir(&path).expect("bin");
    let fake = path.join("claude");
    std::fs::write(&fake, "#!/bin/sh\necho '2.1.9 (Claude Code)'\n").expect("write");
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let hang = path.join("codex");
    let sleep = ["/bin/sleep", "/usr/bin/sleep"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("a sleep binary");
    std::fs::write(&hang, format!("#!/bin/sh\nexec {sleep} 30\n")).expect("write");
    std::fs::set_permissions(&hang, std::fs::Permissions::from_mode(0o755)).expect("chmod");

    let run = |extra: &[&str]| {
        bin(home.path())
            .env("PATH", &path)
            .args(["--json", "doctor", "--version-timeout", "1"])
            .args(extra)
            .output()
            .expect("doctor")
    };
    let out = run(&[]);
    assert!(out.status.success(), "{out:?}");
    let v = json(&out);
    assert_eq!(check(&v, "agent claude")["level"], "ok");
    assert!(
        check(&v, "agent claude")["detail"]
            .as_str()
            .expect("detail")
            .contains("2.1.9 (Claude Code)"),
        "{v}"
    );
    assert_eq!(check(&v, "agent codex")["level"], "warn");
    assert!(
        check(&v, "agent codex")["detail"]
            .as_str()
            .expect("d")
            .contains("did not answer")
    );
    assert_eq!(check(&v, "agent pi")["level"], "warn");
    assert!(
        check(&v, "sqlite")["detail"]
            .as_str()
            .expect("d")
            .contains("WAL-reset fix")
    );
    assert!(
        check(&v, "database")["detail"]
            .as_str()
            .expect("d")
            .contains("does not exist yet")
    );
    assert!(
        !home.path().join(".lionagi").exists(),
        "doctor creates nothing"
    );
    assert!(["ok", "warn"].contains(&check(&v, "pidfd")["level"].as_str().expect("l")));
    assert!(["ok", "warn"].contains(&check(&v, "cgroup")["level"].as_str().expect("l")));

    // A settings file that does not parse fails the check and the exit.
    std::fs::create_dir(home.path().join(".lionagi")).expect("dir");
    std::fs::write(
        home.path().join(".lionagi/settings.yaml"),
        "trusted_plugins: [unclosed\n",
    )
    .expect("write");
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(check(&json(&out), "settings")["level"], "fail");

    // A file that parses but breaks the settings schema fails too, naming
    // the JSON path at fault.
    std::fs::write(
        home.path().join(".lionagi/settings.yaml"),
        "# mine\nsecrets:\n  lookup:\n    argv: []\n",
    )
    .expect("write");
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let v = json(&out);
    assert_eq!(check(&v, "settings")["level"], "fail", "{v}");
    let detail = check(&v, "settings")["detail"].as_str().expect("detail");
    assert!(detail.contains("argv"), "{detail}");

    // Text output names every check.
    std::fs::remove_file(home.path().join(".lionagi/settings.yaml")).expect("rm");
    let out = bin(home.path())
        .env("PATH", &path)
        .env("NO_COLOR", "1")
        .args(["doctor", "--version-timeout", "1"])
        .output()
        .expect("doctor");
    let text = String::from_utf8_lossy(&out.stdout);
    for name in [
        "sqlite",
        "database",
        "settings",
        "plugins",
        "agent claude",
        "cgroup",
        "pidfd",
    ] {
        assert!(text.contains(name), "{name}: {text}");
    }
    assert!(!text.contains('\x1b'), "{text}");
}

#[test]
fn the_default_database_lives_under_lionagi_home() {
    let home = tempfile::tempdir().expect("tempdir");
    let work = tempfile::tempdir().expect("tempdir");
    // A fresh machine: no --db, no LIONRT_DB; the first run creates
    // ~/.lionagi/lionrt/state.db (and its directories), beside the place
    // of li's own store.
    let out = bin(home.path())
        .current_dir(work.path())
        .args(["run", "--session", "first"])
        .output()
        .expect("run");
    assert!(out.status.success(), "{out:?}");
    let db = home.path().join(".lionagi/lionrt/state.db");
    assert!(db.exists(), "{out:?}");
    assert!(!home.path().join(".lionagi/state.db").exists());
    assert!(!work.path().join("state.db").exists());
    let mode = std::fs::metadata(home.path().join(".lionagi"))
        .expect("dir")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);
    let out = bin(home.path())
        .args(["--json", "sessions", "ls"])
        .output()
        .expect("ls");
    assert_eq!(json(&out)[0]["id"], "first");

    // $LIONAGI_HOME moves it; LIONRT_DB and --db override both.
    let elsewhere = home.path().join("lh");
    let out = bin(home.path())
        .current_dir(work.path())
        .env("LIONAGI_HOME", &elsewhere)
        .args(["run", "--session", "second"])
        .output()
        .expect("run");
    assert!(out.status.success(), "{out:?}");
    assert!(elsewhere.join("lionrt/state.db").exists());
    let explicit = work.path().join("x.db");
    let out = bin(home.path())
        .env("LIONAGI_HOME", &elsewhere)
        .env("LIONRT_DB", &explicit)
        .args(["state", "init"])
        .output()
        .expect("init");
    assert!(out.status.success() && explicit.exists(), "{out:?}");

    // A reading verb on a missing database says what to do, creates nothing.
    let none = home.path().join("none/state.db");
    let out = bin(home.path())
        .arg("--db")
        .arg(&none)
        .args(["sessions", "ls"])
        .output()
        .expect("ls");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no database at"),
        "{out:?}"
    );
    assert!(!none.parent().expect("parent").exists());
}

#[test]
fn completions_are_printed_for_each_shell() {
    let home = tempfile::tempdir().expect("tempdir");
    for (shell, marker) in [
        ("bash", "_lionrt()"),
        ("zsh", "#compdef lionrt"),
        ("fish", "complete -c lionrt"),
    ] {
        let out = bin(home.path())
            .args(["completions", shell])
            .output()
            .expect("completions");
        assert!(out.status.success(), "{out:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains(marker),
            "{shell}: {}",
            &text[..text.len().min(200)]
        );
        assert!(
            text.contains("sessions") && text.contains("monitor"),
            "{shell}"
        );
    }
    let out = bin(home.path())
        .args(["completions", "tcsh"])
        .output()
        .expect("completions");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn every_reading_verb_explains_itself() {
    let home = tempfile::tempdir().expect("tempdir");
    for (args, needle) in [
        (&["sessions", "ls", "--help"][..], "--since"),
        (&["sessions", "show", "--help"], "unique prefix"),
        (&["sessions", "messages", "--help"], "--follow"),
        (&["monitor", "--help"], "--watch"),
        (&["lifecycle", "--help"], "invocation"),
        (&["doctor", "--help"], "agent CLIs"),
        (&["state", "stats", "--help"], "Row counts"),
        (&["state", "checkpoint", "--help"], "write-ahead log"),
        (&["state", "vacuum", "--help"], "free pages"),
        (&["state", "prune", "--help"], "--older-than"),
        (&["state", "health", "--help"], "--all"),
        (&["completions", "--help"], "bash"),
    ] {
        let out = bin(home.path()).args(args).output().expect("help");
        assert!(out.status.success(), "{args:?}: {out:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(needle), "{args:?}: {text}");
    }
}
