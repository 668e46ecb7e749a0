//! Dropping the store's values inside a tokio runtime: the synchronous
//! driver closes a connection with a `block_on` of its own, which panics
//! on a runtime's thread, so whatever may close connections (the pool's
//! last handle, a broken pooled connection, a connection of its own) is
//! closed off that thread. Each case runs on a multi-thread runtime (in
//! `block_on` and in a spawned task) and on a current-thread runtime, and
//! checks the server really ended the sessions afterwards.

use std::time::{Duration, Instant};

use state_postgres::{PgConn, PgEngine, PgStore, TickLock};

use crate::common::{Schema, server};

fn backend_pid(conn: &mut postgres::Client) -> i32 {
    conn.query_one("SELECT pg_backend_pid()", &[])
        .expect("pid")
        .get(0)
}

/// Polls (generous deadline) until none of `pids` is a live backend.
fn wait_gone(schema: &Schema, pids: &[i32]) {
    let mut c = schema.client();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let live: i64 = c
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1)",
                &[&pids],
            )
            .expect("pg_stat_activity")
            .get(0);
        if live == 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{live} of the sessions {pids:?} still live after the drop"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// What the runtime is given to drop: made on a plain thread (the driver
/// may not connect on the runtime's thread either).
struct Handles {
    store: PgStore,
    engine: PgEngine,
    /// Outlives both the store and the engine: holds the pool's last handle.
    held: PgConn,
    /// Its session was ended by the server: the pool closes it on return.
    broken: PgConn,
    lock: TickLock,
    listener: state_postgres::DueListener,
    pids: Vec<i32>,
}

fn handles(schema: &Schema) -> Handles {
    let store = schema.store();
    let engine = store.engine().clone();
    let mut held = engine.conn().expect("conn");
    let mut broken = engine.conn().expect("conn");
    let mut idle = engine.conn().expect("conn");
    let pids = vec![
        backend_pid(&mut held),
        backend_pid(&mut broken),
        backend_pid(&mut idle),
    ];
    drop(idle); // back in the pool, idle: closed with the pool
    let mut killer = schema.client();
    killer
        .execute("SELECT pg_terminate_backend($1)", &[&pids[1]])
        .expect("terminate");
    // The driver notices the end on its next use of the connection.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !broken.is_closed() {
        let _ = broken.simple_query("SELECT 1");
        assert!(Instant::now() < deadline, "the ended session never showed");
        std::thread::sleep(Duration::from_millis(20));
    }
    let lock = TickLock::try_acquire(&engine, "drop_test")
        .expect("lock")
        .expect("free");
    let listener = schema.outbox().listener().expect("listener");
    Handles {
        store,
        engine,
        held,
        broken,
        lock,
        listener,
        pids,
    }
}

/// Drops everything in the order that leaves the last pool handle to the
/// connection, as code inside a runtime might.
fn drop_all(h: Handles) {
    let Handles {
        store,
        engine,
        held,
        broken,
        lock,
        listener,
        pids: _,
    } = h;
    drop(broken);
    drop(store);
    drop(engine);
    drop(lock);
    drop(listener);
    drop(held);
}

fn lock_is_free(schema: &Schema) {
    let engine = schema.engine();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if TickLock::try_acquire(&engine, "drop_test")
            .expect("lock")
            .is_some()
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the dropped lock's session still holds it"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn dropping_the_store_and_its_connections_in_a_multi_thread_runtime_does_not_panic() {
    let Some(url) = server("drop_in_multi_thread_runtime") else {
        return;
    };
    let schema = Schema::new(&url, "rtdrop_mt");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    drop_in_block_on_then_in_a_task(&rt, &schema);
}

#[test]
fn dropping_the_store_and_its_connections_in_a_current_thread_runtime_does_not_panic() {
    let Some(url) = server("drop_in_current_thread_runtime") else {
        return;
    };
    let schema = Schema::new(&url, "rtdrop_ct");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    drop_in_block_on_then_in_a_task(&rt, &schema);
}

/// Drops a store and its connections on the thread running `block_on`,
/// then in a spawned task (on a worker thread when `rt` has any), and
/// checks each time that the sessions end and the lock is free.
fn drop_in_block_on_then_in_a_task(rt: &tokio::runtime::Runtime, schema: &Schema) {
    let h = handles(schema);
    let pids = h.pids.clone();
    rt.block_on(async move { drop_all(h) });
    wait_gone(schema, &pids);
    lock_is_free(schema);
    let h = handles(schema);
    let pids = h.pids.clone();
    rt.block_on(async move {
        tokio::spawn(async move { drop_all(h) })
            .await
            .expect("the task dropping the store did not panic")
    });
    wait_gone(schema, &pids);
    lock_is_free(schema);
}
