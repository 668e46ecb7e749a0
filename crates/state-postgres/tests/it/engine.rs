//! Opening engines: typed connection errors, the redacted URL, migrations
//! (checksums, a schema newer than the build, concurrent openers), the
//! read-only modes and the daemon's advisory lock.

use std::time::Duration;

use lifecycle_core::{Actor, ActorType, InitialCommand, Reason};
use state_postgres::{DbUrl, PgConfig, PgEngine, PgStore, PgStoreError, TickLock, schema_version};

use crate::common::{Schema, server};

fn create(store: &PgStore, id: &str) -> Result<(), PgStoreError> {
    store
        .create(&InitialCommand {
            entity_type: "session".into(),
            entity_id: id.into(),
            status: "running".into(),
            reason: Reason::new("run.started.ok"),
            actor: Actor::new(ActorType::Executor, "t"),
            patch: Default::default(),
        })
        .map(|_| ())
}

#[test]
fn a_url_never_shows_its_password() {
    for (raw, shown) in [
        (
            "postgres://lionrt:s3cret@db.internal:5432/lionrt?sslmode=disable",
            "postgres://lionrt:***@db.internal:5432/lionrt?sslmode=disable",
        ),
        (
            "postgresql://u:p%40ss@h/d?password=again&x=1",
            "postgresql://u:***@h/d?password=***&x=1",
        ),
        (
            "host=/run/pg user=u password=s3cret dbname=d",
            "host=/run/pg user=u password=*** dbname=d",
        ),
        (
            r"host=h password = 'it\'s s3cret' dbname=d",
            "host=h password =*** dbname=d",
        ),
        ("postgres://u@h/d", "postgres://u@h/d"),
    ] {
        let url = DbUrl::new(raw);
        assert_eq!(url.to_string(), shown, "{raw}");
        let debug = format!("{url:?}");
        assert!(
            !debug.contains("s3cret") && !debug.contains("p%40ss"),
            "{debug}"
        );
        assert_eq!(url.expose(), raw);
    }
    // An error naming the target names it redacted.
    let cfg = PgConfig::new("host=/nonexistent-lionrt-dir user=u password=s3cret dbname=d");
    let err = PgEngine::open(&cfg).expect_err("no server there");
    let text = format!("{err} {err:?}");
    assert!(!text.contains("s3cret"), "{text}");
    assert!(
        matches!(err, PgStoreError::ConnectionRefused { .. }),
        "{err:?}"
    );
}

#[test]
fn a_closed_port_is_connection_refused() {
    // Port 1 on loopback: nothing listens there.
    let cfg = PgConfig::new("host=127.0.0.1 port=1 user=u dbname=d connect_timeout=2");
    let err = PgEngine::open(&cfg).expect_err("refused");
    assert!(
        matches!(err, PgStoreError::ConnectionRefused { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("no PostgreSQL server answers"));
}

#[test]
fn a_role_that_may_not_log_in_is_an_authentication_error() {
    let Some(url) = server("auth") else { return };
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    let role = format!("t_nologin_{}", std::process::id());
    admin
        .batch_execute(&format!(
            "DROP ROLE IF EXISTS {role}; CREATE ROLE {role} NOLOGIN"
        ))
        .expect("role");
    let cfg = PgConfig::new(format!("{url} user={role}"));
    let err = PgEngine::open(&cfg).expect_err("nologin");
    admin
        .batch_execute(&format!("DROP ROLE {role}"))
        .expect("drop role");
    assert!(
        matches!(err, PgStoreError::Authentication { .. }),
        "{err:?}"
    );
}

#[test]
fn migrations_apply_once_even_with_concurrent_openers() {
    let Some(url) = server("migrate") else { return };
    let schema = Schema::new(&url, "migrate");
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let cfg = schema.config();
            std::thread::spawn(move || PgEngine::open(&cfg).map(|_| ()))
        })
        .collect();
    for h in handles {
        h.join().expect("thread").expect("open");
    }
    let mut c = schema.client();
    let n: i64 = c
        .query_one("SELECT count(*) FROM schema_migrations", &[])
        .expect("count")
        .get(0);
    assert_eq!(
        n,
        i64::try_from(state_postgres::MIGRATIONS.len()).expect("len")
    );
    assert_eq!(
        schema_version(&mut c, &schema.name).expect("version"),
        state_postgres::MIGRATIONS.last().expect("one").version
    );
}

#[test]
fn a_schema_newer_than_the_build_or_with_a_changed_migration_is_refused() {
    let Some(url) = server("newer") else { return };
    let schema = Schema::new(&url, "newer");
    drop(schema.engine());
    let mut c = schema.client();
    c.batch_execute(
        "INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (999, 'future', 'x', 0)",
    )
    .expect("future migration");
    let err = PgEngine::open(&schema.config()).expect_err("too new");
    assert!(
        matches!(err, PgStoreError::SchemaTooNew { found: 999, .. }),
        "{err:?}"
    );
    let err = PgEngine::open_read_only(&schema.config()).expect_err("too new (ro)");
    assert!(matches!(err, PgStoreError::SchemaTooNew { .. }), "{err:?}");
    c.batch_execute(
        "DELETE FROM schema_migrations WHERE version = 999;
         UPDATE schema_migrations SET checksum = 'tampered' WHERE version = 1",
    )
    .expect("tamper");
    let err = PgEngine::open(&schema.config()).expect_err("checksum");
    assert!(
        matches!(err, PgStoreError::MigrationChecksum { version: 1 }),
        "{err:?}"
    );
}

// contract: SQL-007
// PostgreSQL has no mode=ro: read-only access is a session setting or,
// enforced by the server, a role with SELECT grants only.
#[test]
fn read_only_engines_and_roles_refuse_writes() {
    let Some(url) = server("readonly") else {
        return;
    };
    let schema = Schema::new(&url, "readonly");
    let rw = schema.store();
    create(&rw, "s1").expect("create");

    let ro = PgStore::new(PgEngine::open_read_only(&schema.config()).expect("open ro"));
    assert_eq!(
        ro.status_of("session", "s1")
            .expect("read")
            .map(|s| s.0)
            .as_deref(),
        Some("running")
    );
    let err = create(&ro, "s2").expect_err("write through a read-only engine");
    assert!(matches!(err, PgStoreError::ReadOnly(_)), "{err:?}");

    // A read-only open never migrates.
    let fresh = Schema::new(&url, "readonly_fresh");
    let err = PgEngine::open_read_only(&fresh.config()).expect_err("not migrated");
    assert!(matches!(err, PgStoreError::NotMigrated { .. }), "{err:?}");

    // A role with SELECT only: even a session that turns read-only off
    // cannot write.
    let role = format!("t_reader_{}", std::process::id());
    rw.engine()
        .provision_read_only_role(&role)
        .expect("provision");
    let cfg = PgConfig::new(format!("{url} user={role}")).with_schema(schema.name.clone());
    let reader = PgStore::new(PgEngine::open_read_only(&cfg).expect("open as reader"));
    assert!(reader.history("session", "s1").expect("read").len() == 1);
    let mut c = reader.engine().connect_direct().expect("direct");
    c.batch_execute("SET default_transaction_read_only = off")
        .expect("a session may turn the setting off");
    let err = c
        .batch_execute(
            "INSERT INTO teams (id, status, created_at, updated_at) VALUES ('x', 'active', 0, 0)",
        )
        .expect_err("no insert grant");
    assert_eq!(
        err.code(),
        Some(&postgres::error::SqlState::INSUFFICIENT_PRIVILEGE)
    );
    drop(c);
    drop(reader);
    let mut admin = schema.client();
    admin
        .batch_execute(&format!("DROP OWNED BY {role}; DROP ROLE {role}"))
        .expect("drop role");
    let err = PgEngine::provision_read_only_role(rw.engine(), "Bad-Name").expect_err("identifier");
    assert!(matches!(err, PgStoreError::BadIdentifier { .. }));
}

#[test]
fn one_daemon_holds_the_tick_lock_and_its_death_frees_it() {
    let Some(url) = server("ticklock") else {
        return;
    };
    let schema = Schema::new(&url, "ticklock");
    let engine = schema.engine();
    let mut first = TickLock::try_acquire(&engine, "tick")
        .expect("try")
        .expect("free lock");
    assert!(first.is_held());
    assert!(
        TickLock::try_acquire(&engine, "tick")
            .expect("try")
            .is_none()
    );
    // Another name is another lock; another schema is another store.
    assert!(
        TickLock::try_acquire(&engine, "other")
            .expect("try")
            .is_some()
    );
    drop(first);
    let second = TickLock::try_acquire(&engine, "tick").expect("try");
    assert!(second.is_some(), "released on drop");
    drop(second);

    // A holder that dies without unlocking: the server ends its session and
    // the lock is free again.
    let mut holder = engine.connect_direct().expect("direct");
    let key: bool = holder
        .query_one("SELECT pg_try_advisory_lock($1)", &[&lock_key_of(&engine)])
        .expect("lock")
        .get(0);
    assert!(key);
    assert!(
        TickLock::try_acquire(&engine, "tick")
            .expect("try")
            .is_none()
    );
    let pid: i32 = holder
        .query_one("SELECT pg_backend_pid()", &[])
        .expect("pid")
        .get(0);
    let mut admin = schema.client();
    admin
        .execute("SELECT pg_terminate_backend($1)", &[&pid])
        .expect("terminate");
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        if TickLock::try_acquire(&engine, "tick")
            .expect("try")
            .is_some()
        {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "lock never freed");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn lock_key_of(engine: &PgEngine) -> i64 {
    TickLock::try_acquire(engine, "tick")
        .expect("try")
        .expect("free")
        .key()
}

proptest::proptest! {
    // The redaction holds whatever the password, in both string forms.
    #[test]
    fn no_password_survives_redaction(
        pw in "[A-Za-z0-9%._~!$*+,;-]{1,24}",
        spaced in "[A-Za-z0-9 !#$%&()*+,./:;<=>?@^_`{|}~-]{1,24}",
        user in "[a-z]{1,8}",
    ) {
        let secret = format!("QZ{pw}");
        let url = DbUrl::new(format!("postgres://{user}:{secret}@db.example:5432/lionrt?sslmode=disable"));
        proptest::prop_assert!(!url.to_string().contains(&secret), "{}", url);
        let debug = format!("{url:?}");
        proptest::prop_assert!(!debug.contains(&secret), "{}", debug);
        let quoted = format!("QZ{}", spaced.replace('\'', ""));
        let kv = DbUrl::new(format!("host=/run/pg user={user} password='{quoted}' dbname=d"));
        proptest::prop_assert!(!kv.to_string().contains(&quoted), "{}", kv);
        let bare = DbUrl::new(format!("user={user} password={secret} host=/run/pg"));
        proptest::prop_assert!(!bare.to_string().contains(&secret), "{}", bare);
    }
}
