//! Optional cgroup containment: reported, used where available, never required.

use std::time::Duration;

use cli_supervisor::{
    Containment, ContainmentPolicy, Leg, LegSpec, ProcTable, ProcessTable, StdinPolicy,
};
use tokio::io::AsyncWriteExt;

use crate::support::{alive, eventually, kill_pid, next_json, script};

#[tokio::test]
async fn default_containment_is_the_process_group() {
    let leg = Leg::spawn(LegSpec::new(["/bin/sh", "-c", "exit 0"]))
        .await
        .expect("spawn");
    assert_eq!(leg.containment(), Containment::ProcessGroup);
    leg.wait().await.expect("wait");
}

#[tokio::test]
async fn a_cgroup_leg_ends_even_a_setsid_escapee() {
    let mut spec = LegSpec::new(["/bin/sh".to_owned(), script("setsid-escapee-on-cue.sh")]);
    spec.stdin = StdinPolicy::Piped;
    spec.grace = Duration::from_millis(200);
    spec.containment = ContainmentPolicy::CgroupIfAvailable { parent: None };
    let mut leg = Leg::spawn(spec).await.expect("spawn");
    let containment = leg.containment();
    let mut stdin = leg.take_stdin().expect("piped stdin");
    stdin.write_all(b"go\n").await.expect("cue");
    drop(stdin);
    let escapee = next_json(&mut leg).await["escapee"]
        .as_i64()
        .and_then(|p| i32::try_from(p).ok())
        .expect("escapee pid");
    assert!(
        eventually(|| ProcTable.pgid(escapee) == Some(escapee)),
        "escapee left the group"
    );
    leg.end().await.expect("end");
    match containment {
        Containment::Cgroup { path } => {
            // cgroup.kill reaches what the process group cannot.
            assert!(
                eventually(|| !alive(escapee)),
                "escapee survived cgroup.kill"
            );
            assert!(eventually(|| !path.exists()), "leg cgroup removed");
        }
        Containment::ProcessGroup => {
            // No writable cgroup v2 here: the documented limit applies.
            assert!(alive(escapee));
            kill_pid(escapee);
        }
    }
}
