//! Signals to `lionrt run` end the leg's whole group and cancel the session.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn alive(pid: &str) -> bool {
    // A zombie waiting for its reaper is not alive.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| !rest.starts_with('Z')))
        .unwrap_or(false)
}

fn wait_for(path: &Path) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(text) = std::fs::read_to_string(path)
            && text.ends_with('\n')
        {
            return text.trim().to_owned();
        }
        assert!(Instant::now() < deadline, "the stub agent never started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn sigint_and_sigterm_cancel_the_session_and_end_the_group() {
    for (signal, reason, code) in [
        ("-INT", "run.cancelled.sigint", 130),
        ("-TERM", "run.cancelled.sigterm", 143),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).expect("mkdir");
        let marker = dir.path().join("pids");
        // A stand-in `claude` CLI: announces itself, starts a grandchild
        // that would outlive it, and waits.
        let stub = bin.join("claude");
        std::fs::write(
            &stub,
            format!(
                "#!/bin/sh\nsleep 300 &\necho \"$$ $!\" > {}.tmp\nmv {}.tmp {}\necho '{{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"stub\"}}'\nwait\n",
                marker.display(),
                marker.display(),
                marker.display()
            ),
        )
        .expect("stub");
        std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let db = dir.path().join("state.db");
        let child = Command::new(env!("CARGO_BIN_EXE_lionrt"))
            .args(["--json", "--db"])
            .arg(&db)
            .args([
                "run",
                "--prompt",
                "Update the README with a short usage note.",
                "--provider",
                "claude",
                "--session",
                "c",
            ])
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn lionrt");
        let pids = wait_for(&marker);
        let (stub_pid, grandchild) = pids.split_once(' ').expect("two pids");
        // lionrt installed its handlers before spawning the stub, so the
        // signal cannot beat them.
        let status = Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .expect("kill");
        assert!(status.success());
        let out = child.wait_with_output().expect("lionrt output");
        // 128 + the signal: a shell sees the run was interrupted.
        assert_eq!(out.status.code(), Some(code), "{out:?}");
        // `--json` streams the events first; the report is the last line.
        let v = crate::stdout_json(&out);
        let last = v["history"]
            .as_array()
            .and_then(|h| h.last())
            .cloned()
            .unwrap_or_default();
        assert_eq!(last["to_status"], "cancelled", "{v}");
        assert_eq!(last["reason_code"], reason);
        assert!(!alive(stub_pid), "the stub agent survived");
        assert!(!alive(grandchild), "its grandchild survived");
    }
}
