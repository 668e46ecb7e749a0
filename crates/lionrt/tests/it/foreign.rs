//! lionrt beside the original lionagi: li's own state.db (written by the
//! `li` command of lionagi 0.36.0, `fixtures/lionagi-import/li-state.db`)
//! and any other program's file are recognised and refused by every verb
//! with not a byte changed and no side file left; lionrt's default store
//! lives beside li's; reading verbs create nothing; `run` refuses a session
//! id that exists and a real provider without a prompt; `state import
//! --from-lionagi` finds li's store by itself.

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::{lionrt, stdout_json};

fn li_fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/lionagi-import/li-state.db")
}

/// `HOME` and `LIONAGI_HOME` in `home`, no `--db`, no `LIONRT_DB`.
fn bin(home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lionrt"));
    cmd.env_remove("LIONRT_DB")
        .env_remove("LIONAGI_SETTINGS_FILE")
        .env("HOME", home)
        .env("LIONAGI_HOME", home.join(".lionagi"))
        .current_dir(home);
    cmd
}

fn listing(dir: &Path) -> Vec<OsString> {
    let mut names: Vec<OsString> = std::fs::read_dir(dir)
        .expect("ls")
        .map(|e| e.expect("entry").file_name())
        .collect();
    names.sort();
    names
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Every verb that touches `--db`, with arguments that would work on a
/// lionrt store.
const VERBS: &[&[&str]] = &[
    &["run", "--session", "s1"],
    &["state", "init"],
    &[
        "state",
        "create",
        "session",
        "s1",
        "running",
        "--reason",
        "run.started.ok",
    ],
    &[
        "state",
        "transition",
        "session",
        "s1",
        "completed",
        "--reason",
        "run.completed.ok",
    ],
    &["state", "history", "session", "s1"],
    &["state", "health"],
    &["state", "stats"],
    &["state", "checkpoint"],
    &["state", "vacuum"],
    &["state", "prune", "--dry-run"],
    &["state", "doctor", "--dry-run"],
    &["outbox", "ls"],
    &["outbox", "show", "x"],
    &["schedule", "ls"],
    &["schedule", "runs"],
    &["schedule", "show", "x"],
    &["kill", "--all-stale", "--dry-run"],
    &["kill", "s1"],
    &["sessions", "ls"],
    &["sessions", "show", "s1"],
    &["sessions", "messages", "s1"],
    &["monitor"],
    &["lifecycle", "s1"],
    &["mirror", "--once"],
];

/// Runs every verb on `db` and checks each refuses, saying `what`, in a
/// few lines, with the file's bytes and its directory unchanged.
fn every_verb_refuses(home: &Path, db: &Path, what: &str) {
    let before = std::fs::read(db).expect("read");
    let names = listing(db.parent().expect("dir"));
    for verb in VERBS {
        let out = bin(home)
            .arg("--db")
            .arg(db)
            .args(*verb)
            .output()
            .expect("run");
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{verb:?} on {what}: {out:?}");
        assert!(err.contains(what), "{verb:?}: {err}");
        assert!(
            err.contains("lionrt state import --from-lionagi") || what != "lionagi's store",
            "{verb:?}: {err}"
        );
        assert!(err.lines().count() <= 3, "{verb:?} printed a wall: {err}");
        assert_eq!(
            std::fs::read(db).expect("read"),
            before,
            "{verb:?} changed the file"
        );
        assert_eq!(
            listing(db.parent().expect("dir")),
            names,
            "{verb:?} left a side file"
        );
    }
}

#[test]
fn every_verb_refuses_lis_store_and_changes_not_a_byte() {
    let home = tempfile::tempdir().expect("tempdir");
    let li_home = home.path().join(".lionagi");
    std::fs::create_dir(&li_home).expect("mkdir");
    let li = li_home.join("state.db");
    std::fs::copy(li_fixture(), &li).expect("copy");
    every_verb_refuses(home.path(), &li, "lionagi's store");
    // The refusal says where lionrt keeps its own store instead.
    let out = bin(home.path())
        .arg("--db")
        .arg(&li)
        .args(["sessions", "ls"])
        .output()
        .expect("ls");
    assert!(
        stderr(&out).contains(&li_home.join("lionrt/state.db").display().to_string()),
        "{out:?}"
    );
}

#[test]
fn every_verb_refuses_another_programs_database() {
    let home = tempfile::tempdir().expect("tempdir");
    let db = home.path().join("other.db");
    let conn = rusqlite::Connection::open(&db).expect("open");
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; CREATE TABLE sessions (id TEXT PRIMARY KEY, name TEXT);
         INSERT INTO sessions VALUES ('s1', 'not lionrt''s');",
    )
    .expect("create");
    drop(conn);
    every_verb_refuses(home.path(), &db, "not a lionrt store");
    // A file lionrt once damaged this way (an empty schema_migrations left
    // by a failed first migration) is still not lionrt's.
    let conn = rusqlite::Connection::open(&db).expect("open");
    conn.execute_batch(
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, checksum TEXT NOT NULL, applied_at INTEGER NOT NULL)",
    )
    .expect("create");
    drop(conn);
    every_verb_refuses(home.path(), &db, "no lionrt migration was ever applied");
}

#[test]
fn lionrt_and_li_keep_their_stores_side_by_side_in_one_home() {
    let home = tempfile::tempdir().expect("tempdir");
    let li_home = home.path().join(".lionagi");
    std::fs::create_dir(&li_home).expect("mkdir");
    let li = li_home.join("state.db");
    std::fs::copy(li_fixture(), &li).expect("copy");
    let before = std::fs::read(&li).expect("read");
    let out = bin(home.path())
        .args(["run", "--session", "mine"])
        .output()
        .expect("run");
    assert!(out.status.success(), "{out:?}");
    assert!(li_home.join("lionrt/state.db").exists());
    assert_eq!(
        std::fs::read(&li).expect("read"),
        before,
        "li's file changed"
    );
    assert_eq!(
        listing(&li_home),
        ["lionrt", "state.db"].map(OsString::from)
    );
    let out = bin(home.path())
        .args(["--json", "sessions", "ls"])
        .output()
        .expect("ls");
    assert_eq!(stdout_json(&out)[0]["id"], "mine", "{out:?}");

    // doctor says what each file is.
    let out = bin(home.path())
        .args(["--json", "doctor"])
        .output()
        .expect("doctor");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let find = |name: &str| {
        v["checks"]
            .as_array()
            .expect("checks")
            .iter()
            .find(|c| c["check"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no {name} check: {v}"))
    };
    assert_eq!(find("database")["level"], "ok", "{v}");
    let lionagi = find("lionagi");
    assert!(
        lionagi["detail"]
            .as_str()
            .expect("detail")
            .contains("lionagi's store"),
        "{v}"
    );
    let out = bin(home.path())
        .arg("--db")
        .arg(&li)
        .args(["--json", "doctor"])
        .output()
        .expect("doctor");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let db = v["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["check"] == "database")
        .cloned()
        .expect("database check");
    assert_eq!(db["level"], "fail", "{v}");
    assert!(
        db["detail"]
            .as_str()
            .expect("detail")
            .contains("lionagi's store"),
        "{v}"
    );
    assert_eq!(
        std::fs::read(&li).expect("read"),
        before,
        "doctor changed li's file"
    );
}

#[test]
fn reading_verbs_create_nothing_and_say_where_they_looked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("none/state.db");
    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, b"").expect("write");
    let reading: &[&[&str]] = &[
        &["sessions", "ls"],
        &["sessions", "show", "s1"],
        &["schedule", "ls"],
        &["schedule", "runs"],
        &["schedule", "show", "x"],
        &["outbox", "ls"],
        &["monitor"],
        &["lifecycle", "s1"],
        &["state", "history", "session", "s1"],
        &["state", "health"],
        &["state", "stats"],
    ];
    for verb in reading {
        let out = lionrt(&missing, verb);
        assert_eq!(out.status.code(), Some(1), "{verb:?}: {out:?}");
        let err = stderr(&out);
        assert!(
            err.contains(&missing.display().to_string()) && err.contains("no database at"),
            "{verb:?}: {err}"
        );
        assert!(
            !missing.parent().expect("dir").exists(),
            "{verb:?} created a directory"
        );
        let out = lionrt(&empty, verb);
        assert_eq!(out.status.code(), Some(1), "{verb:?}: {out:?}");
        assert!(stderr(&out).contains("empty file"), "{verb:?}: {out:?}");
        assert_eq!(
            std::fs::metadata(&empty).expect("meta").len(),
            0,
            "{verb:?} wrote"
        );
    }
    assert_eq!(listing(dir.path()), ["empty.db"].map(OsString::from));
}

#[test]
fn bad_db_paths_get_clear_messages() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = lionrt(dir.path(), &["sessions", "ls"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("is a directory"), "{out:?}");

    // A store from a newer lionrt: read with a warning, never written.
    let db = dir.path().join("newer.db");
    assert!(lionrt(&db, &["run", "--session", "a"]).status.success());
    let conn = rusqlite::Connection::open(&db).expect("open");
    conn.execute(
        "INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (999, 'future', 'x', 0)",
        [],
    )
    .expect("insert");
    drop(conn);
    let out = lionrt(&db, &["--json", "sessions", "ls"]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        stderr(&out).contains("newer than this lionrt knows"),
        "{out:?}"
    );
    assert_eq!(stdout_json(&out)[0]["id"], "a");
    let out = lionrt(&db, &["run", "--session", "b"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        stderr(&out).contains("newer than this lionrt knows"),
        "{out:?}"
    );
}

/// `id -u`, without unsafe code.
fn euid() -> u32 {
    let out = Command::new("id").arg("-u").output().expect("id");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("uid")
}

#[test]
fn a_store_that_cannot_be_created_names_the_real_cause() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).expect("mkdir");
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).expect("chmod");
    let db = ro.join("state.db");
    // root writes anywhere: run as nobody then (setpriv), else as is.
    let mut cmd = if euid() == 0 {
        let mut c = Command::new("setpriv");
        c.args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            env!("CARGO_BIN_EXE_lionrt"),
        ]);
        c
    } else {
        Command::new(env!("CARGO_BIN_EXE_lionrt"))
    };
    let out = cmd
        .env_remove("LIONRT_DB")
        .env("HOME", dir.path())
        .current_dir(dir.path())
        .arg("--db")
        .arg(&db)
        .args(["run", "--session", "x"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = stderr(&out);
    assert!(
        err.contains("cannot create the database") && err.contains("ermission denied"),
        "{err}"
    );
    assert!(!err.contains("state init"), "{err}");
    assert!(!db.exists());
}

#[test]
fn a_session_id_that_exists_is_refused_before_anything_starts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let first = lionrt(&db, &["--json", "run", "--session", "same"]);
    assert!(first.status.success(), "{first:?}");
    let messages = |db: &Path| {
        let out = lionrt(db, &["--json", "sessions", "messages", "same"]);
        stdout_json(&out).as_array().map(Vec::len)
    };
    let had = messages(&db);
    let out = lionrt(&db, &["--json", "run", "--session", "same"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(stderr(&out).contains("already exists"), "{out:?}");
    assert_eq!(messages(&db), had);
    for bad in ["", " ", "a\nb", " lead"] {
        let fresh = dir.path().join("fresh.db");
        let out = lionrt(&fresh, &["run", "--session", bad]);
        assert_eq!(out.status.code(), Some(1), "{bad:?}: {out:?}");
        assert!(stderr(&out).contains("--session"), "{out:?}");
        assert!(!fresh.exists(), "{bad:?} created a store");
    }
}

#[test]
fn a_real_provider_needs_a_prompt() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    for provider in ["claude", "codex", "gemini", "pi"] {
        for prompt in [None, Some(""), Some("  ")] {
            let mut args = vec!["run", "--provider", provider];
            if let Some(p) = prompt {
                args.extend(["--prompt", p]);
            }
            let out = lionrt(&db, &args);
            assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
            assert!(stderr(&out).contains("--prompt"), "{args:?}: {out:?}");
            assert!(!db.exists(), "{args:?} created a store");
        }
    }
    // The scripted demo keeps its default.
    assert!(lionrt(&db, &["run"]).status.success());
}

#[test]
fn import_finds_lis_store_by_itself_and_twice_changes_nothing() {
    let home = tempfile::tempdir().expect("tempdir");
    let li_home = home.path().join(".lionagi");
    std::fs::create_dir(&li_home).expect("mkdir");
    let li = li_home.join("state.db");
    std::fs::copy(li_fixture(), &li).expect("copy");
    let before = std::fs::read(&li).expect("read");
    let own = li_home.join("lionrt/state.db");

    let out = bin(home.path())
        .args(["--json", "state", "import", "--from-lionagi", "--dry-run"])
        .output()
        .expect("dry run");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(stdout_json(&out)["sessions_imported"], 2, "{out:?}");
    assert_eq!(
        listing(&li_home),
        ["state.db"].map(OsString::from),
        "a dry run wrote"
    );

    let out = bin(home.path())
        .args(["--json", "state", "import", "--from-lionagi"])
        .output()
        .expect("import");
    assert!(out.status.success(), "{out:?}");
    let r = stdout_json(&out);
    assert_eq!(r["sessions_imported"], 2, "{r}");
    assert_eq!(r["messages_imported"], 13, "{r}");
    // li's invocation, its agent schedule (disabled: lionagi's scheduler may
    // still own it) and its ended run come too; its command schedule
    // cannot be a lionrt one and is reported.
    assert_eq!(r["invocations_imported"], 1, "{r}");
    assert_eq!(r["schedules_imported"], 1, "{r}");
    assert_eq!(r["schedule_runs_imported"], 1, "{r}");
    assert_eq!(
        r["schedules_skipped"].as_object().map(|m| m.len()),
        Some(1),
        "{r}"
    );
    assert!(own.exists());
    let schedules = stdout_json(
        &bin(home.path())
            .args(["--json", "schedule", "ls"])
            .output()
            .expect("ls"),
    );
    assert_eq!(schedules[0]["spec"]["name"], "acme.triage", "{schedules}");
    assert_eq!(schedules[0]["status"], "disabled", "{schedules}");
    let runs = stdout_json(
        &bin(home.path())
            .args(["--json", "schedule", "runs"])
            .output()
            .expect("runs"),
    );
    assert_eq!(runs[0]["id"], "run-1", "{runs}");
    assert_eq!(
        std::fs::read(&li).expect("read"),
        before,
        "li's file changed"
    );
    let ls = stdout_json(
        &bin(home.path())
            .args(["--json", "sessions", "ls"])
            .output()
            .expect("ls"),
    );
    assert_eq!(ls.as_array().map(Vec::len), Some(2), "{ls}");

    let again = bin(home.path())
        .args(["--json", "state", "import", "--from-lionagi"])
        .output()
        .expect("again");
    assert!(again.status.success(), "{again:?}");
    let r = stdout_json(&again);
    assert_eq!(
        (
            r["sessions_imported"].clone(),
            r["messages_imported"].clone()
        ),
        (0.into(), 0.into()),
        "{r}"
    );
    let ls2 = stdout_json(
        &bin(home.path())
            .args(["--json", "sessions", "ls"])
            .output()
            .expect("ls"),
    );
    assert_eq!(ls, ls2);

    // Importing into li's own file is refused by name.
    let out = bin(home.path())
        .arg("--db")
        .arg(&li)
        .args(["state", "import", "--from-lionagi"])
        .output()
        .expect("self");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(std::fs::read(&li).expect("read"), before);
}

#[test]
fn a_corrupt_source_is_named_as_the_users_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("broken.db");
    let mut bytes = std::fs::read(li_fixture()).expect("read");
    // Keep the header and the first page, scramble the rest.
    for (i, b) in bytes.iter_mut().enumerate().skip(4096) {
        *b = u8::try_from(i % 251).unwrap_or(0);
    }
    std::fs::write(&bad, &bytes).expect("write");
    let db = dir.path().join("state.db");
    let out = lionrt(
        &db,
        &[
            "state",
            "import",
            "--from-lionagi",
            bad.to_str().expect("utf8"),
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = stderr(&out);
    assert!(err.contains(&bad.display().to_string()), "{err}");
    assert!(
        !err.contains("lionagi-state.db"),
        "names the temporary copy: {err}"
    );
    let out = lionrt(
        &db,
        &[
            "state",
            "import",
            "--from-lionagi",
            dir.path().join("gone.db").to_str().expect("utf8"),
        ],
    );
    assert!(stderr(&out).contains("gone.db"), "{out:?}");
}

#[test]
fn reading_verbs_never_migrate_an_older_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    // As an older lionrt left it: every migration but the last applied.
    let conn = rusqlite::Connection::open(&db).expect("open");
    conn.execute_batch(
        "PRAGMA journal_mode = WAL;
         CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY NOT NULL, name TEXT NOT NULL,
             checksum TEXT NOT NULL, applied_at INTEGER NOT NULL)",
    )
    .expect("create");
    let all = state_sqlite::MIGRATIONS;
    for m in &all[..all.len() - 1] {
        conn.execute_batch(m.sql).expect("migrate");
        conn.execute(
            "INSERT INTO schema_migrations VALUES (?1, ?2, ?3, 0)",
            rusqlite::params![m.version, m.name, m.checksum()],
        )
        .expect("record");
    }
    drop(conn);
    let version = |db: &Path| -> i64 {
        rusqlite::Connection::open(db)
            .expect("open")
            .query_row("SELECT MAX(version) FROM schema_migrations", [], |r| {
                r.get(0)
            })
            .expect("version")
    };
    let older = version(&db);
    for verb in [
        &["schedule", "ls"][..],
        &["schedule", "runs"],
        &["schedule", "show", "x"],
        &["outbox", "ls"],
        &["outbox", "show", "x"],
    ] {
        let out = lionrt(&db, verb);
        assert_eq!(out.status.code(), Some(1), "{verb:?}: {out:?}");
        assert!(
            stderr(&out).contains("does not migrate"),
            "{verb:?}: {out:?}"
        );
        assert_eq!(version(&db), older, "{verb:?} migrated the store");
    }
    // The read-only verbs read it as it is.
    assert!(lionrt(&db, &["sessions", "ls"]).status.success());
    assert!(lionrt(&db, &["state", "init"]).status.success());
    assert!(version(&db) > older);
    assert!(lionrt(&db, &["schedule", "ls"]).status.success());
}

/// With lionagi 0.36.0 itself (`LIONRT_TEST_LI`, installed by CI): a home
/// holding li's store, li's settings with its trust record and a plugin
/// bundle goes through every lionrt verb (on li's store: each refused;
/// on lionrt's own default store: `run`, `import`, `plugin ls`), and
/// afterwards li's files are byte-identical and `li state ls` and `li plugin
/// list` still work, the plugin still trusted.
#[test]
fn li_still_works_in_its_home_after_every_lionrt_verb() {
    let Some(li) = std::env::var_os("LIONRT_TEST_LI") else {
        #[allow(clippy::print_stderr, reason = "a skipped test says why")]
        {
            eprintln!("skipping the li home test: LIONRT_TEST_LI (the path of li) is not set");
        }
        return;
    };
    let home = tempfile::tempdir().expect("tempdir");
    let li_home = home.path().join(".lionagi");
    let plugins = li_home.join("plugins");
    std::fs::create_dir_all(&plugins).expect("mkdir");
    let db = li_home.join("state.db");
    std::fs::copy(li_fixture(), &db).expect("copy");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/plugins");
    let status = Command::new("cp")
        .arg("-r")
        .arg(fixtures.join("hello"))
        .arg(&plugins)
        .status()
        .expect("cp");
    assert!(status.success());
    let bundle = std::fs::canonicalize(plugins.join("hello")).expect("canonical");
    let settings = li_home.join("settings.yaml");
    let record = std::fs::read_to_string(fixtures.join("li-written/settings.yaml"))
        .expect("li's record")
        .replace("@BUNDLE@", bundle.to_str().expect("utf-8"));
    std::fs::write(&settings, record).expect("write");
    let li_files = || [&db, &settings].map(|f| std::fs::read(f).expect("read li's file"));
    let before = li_files();

    every_verb_refuses(home.path(), &db, "lionagi's store");
    for verb in [
        &["run", "--session", "beside-li"][..],
        &["state", "import", "--from-lionagi"],
        &["--json", "plugin", "ls"],
        &["sessions", "ls"],
        &["doctor"],
    ] {
        let out = bin(home.path()).args(verb).output().expect("lionrt");
        assert!(
            out.status.success() || verb == ["doctor"],
            "{verb:?}: {out:?}"
        );
    }
    assert_eq!(li_files(), before, "a lionrt verb changed li's files");

    let li_says = |args: &[&str]| -> String {
        let out = crate::offline(&li)
            .args(args)
            .env("HOME", home.path())
            .env_remove("LIONAGI_HOME")
            .output()
            .expect("li");
        assert!(out.status.success(), "li {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let ls = li_says(&["state", "ls"]);
    assert!(!ls.trim().is_empty(), "li state ls printed nothing");
    let plugins_listed = li_says(&["plugin", "list"]);
    assert!(
        plugins_listed
            .lines()
            .any(|l| l.starts_with("hello ") && l.contains("active")),
        "{plugins_listed}"
    );
}
