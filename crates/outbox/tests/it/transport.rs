//! The exec transport: direct exec, whole argv elements, inert shell syntax.

use std::path::Path;
use std::time::{Duration, Instant};

use outbox::{
    Delivery, DispatchStatus, ExecTransport, NewDispatch, OutboxError, ScanConfig, Template,
    Transport, deliver_due, enqueue_dispatch,
};

use crate::common::{actor, clock, db};

/// A program that writes each of its arguments after the first,
/// NUL-terminated, to the file named by its first argument. It quotes every
/// expansion, so what lands in the file is exactly the argv it was given.
fn argv_dumper(dir: &Path) -> String {
    let path = dir.join("dump-argv");
    std::fs::write(
        &path,
        "#!/bin/sh\nout=\"$1\"\nshift\nfor a in \"$@\"; do printf '%s\\0' \"$a\"; done > \"$out\"\n",
    )
    .expect("write script");
    let mut perms = std::fs::metadata(&path).expect("meta").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&path, perms).expect("chmod");
    path.to_string_lossy().into_owned()
}

fn dumped(path: &Path) -> Vec<String> {
    let bytes = std::fs::read(path).expect("dump written");
    bytes
        .split(|b| *b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect()
}

fn template(argv: &[&str]) -> Template {
    Template::new(argv.iter().map(|s| (*s).to_owned()).collect()).expect("template")
}

// contract: OBX-003
#[test]
fn payload_and_destination_are_whole_argv_elements() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dumper = argv_dumper(dir.path());
    let out = dir.path().join("argv");
    let marker = dir.path().join("pwned");
    let payload = format!(
        "x; rm -rf ~ $(id) `touch {}` \"quoted\" 'single'\nline2",
        marker.display()
    );
    let deliver_to = format!("chan $(touch {}) && echo", marker.display());
    let t = template(&[
        &dumper,
        &out.to_string_lossy(),
        "--to",
        "{deliver_to}",
        "{payload}",
        "{id}",
        "{attempt}",
    ]);
    let db = db();
    let clock = clock();
    let mut new = NewDispatch::new(payload.clone());
    new.deliver_to = Some(deliver_to.clone());
    new.template = Some(t);
    let id = enqueue_dispatch(&db.store, &clock, &new, &actor())
        .expect("enqueue")
        .id;
    let report = deliver_due(
        &db.store,
        &ExecTransport::default(),
        &clock,
        &ScanConfig::default(),
    )
    .expect("scan");
    assert_eq!(report.delivered, 1, "{report:?}");
    assert_eq!(
        dumped(&out),
        [
            "--to",
            deliver_to.as_str(),
            payload.as_str(),
            id.as_str(),
            "1"
        ]
    );
    assert!(!marker.exists(), "no substitution ever ran");
}

// contract: OBX-004
#[test]
fn shell_syntax_in_template_payload_and_destination_is_inert() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dumper = argv_dumper(dir.path());
    let out = dir.path().join("argv");
    let marker = dir.path().join("pwned");
    let m = marker.display();
    let touch = format!("; touch {m}");
    let subst = format!("$(touch {m})");
    let pipe = format!("| touch {m} &");
    let t = template(&[
        &dumper,
        &out.to_string_lossy(),
        &touch,
        &subst,
        "{payload}",
        "{deliver_to}",
        &pipe,
    ]);
    let exec = ExecTransport::new(Some(t));
    let payload = format!("`touch {m}`");
    let deliver_to = format!("> {m}");
    exec.send(&Delivery {
        id: "d1",
        payload: &payload,
        deliver_to: Some(&deliver_to),
        template: None,
        attempt: 1,
    })
    .expect("send");
    assert_eq!(
        dumped(&out),
        [
            touch.as_str(),
            subst.as_str(),
            payload.as_str(),
            deliver_to.as_str(),
            pipe.as_str()
        ]
    );
    assert!(!marker.exists());
    // A whole command line as the program is one (missing) file name, not a
    // script: the send fails and nothing runs.
    let line = ExecTransport::new(Some(template(&[&format!("touch {m}; true"), "{payload}"])));
    let err = line
        .send(&Delivery {
            id: "d2",
            payload: "x",
            deliver_to: None,
            template: None,
            attempt: 1,
        })
        .expect_err("no such program");
    assert!(err.0.contains("cannot run"), "{err}");
    assert!(!marker.exists());
}

#[test]
fn templates_refuse_spliced_placeholders() {
    for bad in [
        vec![],
        vec![""],
        vec!["{payload}"],
        vec!["/bin/echo", "--msg={payload}"],
        vec!["/bin/echo", "to:{deliver_to}"],
    ] {
        let argv: Vec<String> = bad.iter().map(|s| (*s).to_owned()).collect();
        assert!(
            matches!(Template::new(argv.clone()), Err(OutboxError::Template(_))),
            "{argv:?}"
        );
        let json = serde_json::to_string(&argv).expect("json");
        assert!(serde_json::from_str::<Template>(&json).is_err(), "{json}");
    }
    assert!(Template::new(vec!["/bin/echo".into(), "{x}".into()]).is_ok());
}

#[test]
fn failures_and_timeouts_are_send_errors() {
    let exec = ExecTransport::new(Some(template(&["/bin/false"])));
    let d = Delivery {
        id: "d",
        payload: "p",
        deliver_to: None,
        template: None,
        attempt: 1,
    };
    assert_eq!(
        exec.send(&d).expect_err("false").0,
        "transport exited with status 1"
    );
    let missing = ExecTransport::new(Some(template(&["/bin/echo", "{deliver_to}"])));
    assert!(
        missing
            .send(&d)
            .expect_err("no destination")
            .0
            .contains("deliver_to")
    );
    assert!(
        ExecTransport::default()
            .send(&d)
            .expect_err("no template")
            .0
            .contains("template")
    );
    let slow = ExecTransport {
        default_template: Some(template(&["/bin/sleep", "30"])),
        timeout: Some(Duration::from_millis(200)),
        live: None,
    };
    let start = Instant::now();
    let err = slow.send(&d).expect_err("timeout");
    assert!(err.0.contains("timed out"), "{err}");
    assert!(start.elapsed() < Duration::from_secs(10));
    let quick = ExecTransport {
        default_template: Some(template(&["/bin/true"])),
        timeout: Some(Duration::from_secs(10)),
        live: None,
    };
    quick.send(&d).expect("true within the deadline");
}

#[test]
fn a_failing_template_leaves_the_row_for_retry() {
    let db = db();
    let clock = clock();
    let mut new = NewDispatch::new("p");
    new.template = Some(template(&["/bin/false"]));
    let id = enqueue_dispatch(&db.store, &clock, &new, &actor())
        .expect("enqueue")
        .id;
    deliver_due(
        &db.store,
        &ExecTransport::default(),
        &clock,
        &ScanConfig::default(),
    )
    .expect("scan");
    let row = outbox::OutboxStore::get(&db.store, &id)
        .expect("get")
        .expect("row");
    assert_eq!(row.status, DispatchStatus::Pending);
    assert_eq!(
        row.last_error.as_deref(),
        Some("transport exited with status 1")
    );
}

/// A send registered in a `LiveGroups` is ended with its whole group by
/// `kill_all`, fails as a signalled transport, and leaves the registry.
#[test]
fn kill_all_ends_a_running_send_and_its_group() {
    use outbox::LiveGroups;
    use std::sync::Arc;
    let dir = tempfile::tempdir().expect("tempdir");
    let pids = dir.path().join("pids");
    let live = Arc::new(LiveGroups::new());
    let hung = ExecTransport {
        default_template: Some(template(&[
            "/bin/sh",
            "-c",
            "sleep 1000 & echo $$ $! > \"$0\"; wait",
            pids.to_str().expect("utf-8"),
        ])),
        timeout: Some(Duration::from_secs(300)),
        live: Some(Arc::clone(&live)),
    };
    let sender = std::thread::spawn(move || {
        hung.send(&Delivery {
            id: "d",
            payload: "p",
            deliver_to: None,
            template: None,
            attempt: 1,
        })
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(&pids).is_ok_and(|s| s.ends_with('\n')) {
        assert!(Instant::now() < deadline, "the send never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(live.len(), 1, "the running send is registered");
    assert_eq!(live.kill_all(), 1);
    let err = sender
        .join()
        .expect("no panic")
        .expect_err("a killed send fails");
    assert!(err.0.contains("signal 9"), "{err:?}");
    assert!(live.is_empty(), "the ended send left the registry");
    // After a shutdown's kill_all no send starts.
    let late = ExecTransport {
        default_template: Some(template(&["/bin/true"])),
        timeout: Some(Duration::from_secs(10)),
        live: Some(Arc::clone(&live)),
    };
    let refused = late
        .send(&Delivery {
            id: "d2",
            payload: "p",
            deliver_to: None,
            template: None,
            attempt: 1,
        })
        .expect_err("refused after kill_all");
    assert!(refused.0.contains("shutting down"), "{refused:?}");
    let grandchild: i32 = std::fs::read_to_string(&pids)
        .expect("pids")
        .split_whitespace()
        .nth(1)
        .expect("two pids")
        .parse()
        .expect("a pid");
    let gone = || {
        std::fs::read_to_string(format!("/proc/{grandchild}/stat")).map_or(true, |stat| {
            stat.rsplit_once(") ")
                .is_some_and(|(_, rest)| rest.starts_with('Z'))
        })
    };
    while !gone() {
        assert!(
            Instant::now() < deadline,
            "the group's grandchild outlived kill_all"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}
