//! Dropping the driver's values off an async runtime's thread.
//!
//! The synchronous `postgres` driver owns a small runtime per connection
//! and closes a connection with that runtime's `block_on`, which panics
//! ("Cannot start a runtime from within a runtime") when the dropping
//! thread is inside a tokio runtime. Whatever may close connections (the
//! pool's last handle, a broken pooled connection, a connection of its
//! own) is dropped through [`drop_off_runtime`]: inline on a plain thread,
//! on a short-lived plain thread (joined) inside a runtime.

use std::sync::mpsc;

/// Whether this thread is inside a tokio runtime (entered or running one),
/// where the driver may not block.
pub(crate) fn in_runtime() -> bool {
    tokio::runtime::Handle::try_current().is_ok()
}

/// Drops `value` here on a plain thread; inside a tokio runtime, on a
/// plain thread of its own, waiting for it (so connections are closed
/// when this returns). Should that thread fail to start, the value is
/// leaked with a warning (the server ends the sessions when the process
/// exits) rather than dropped here, where it would panic.
pub(crate) fn drop_off_runtime<T: Send + 'static>(what: &'static str, value: T) {
    run_off_runtime(what, move || drop(value));
}

/// Runs `f` (which may block on the driver) here on a plain thread;
/// inside a tokio runtime, on a plain thread of its own, waiting for it.
/// Should that thread fail to start, `f` (with what it holds) is leaked
/// with a warning instead of run or dropped here.
pub(crate) fn run_off_runtime<F: FnOnce() + Send + 'static>(what: &'static str, f: F) {
    if !in_runtime() {
        f();
        return;
    }
    let (tx, rx) = mpsc::channel::<F>();
    let spawned = std::thread::Builder::new()
        .name("pg-close".into())
        .spawn(move || {
            if let Ok(f) = rx.recv() {
                f();
            }
        });
    match spawned {
        Ok(handle) => {
            if let Err(mpsc::SendError(f)) = tx.send(f) {
                // The thread is gone already: never drop it here.
                tracing::warn!(what, "closing thread vanished; leaking the value");
                std::mem::forget(f);
            }
            drop(tx);
            if handle.join().is_err() {
                tracing::warn!(what, "closing off the runtime panicked");
            }
        }
        Err(e) => {
            tracing::warn!(what, error = %e, "no thread to close off the runtime; leaking the value");
            std::mem::forget(f);
        }
    }
}

/// A connection of its own (outside the pool) that closes off any tokio
/// runtime's thread when dropped.
pub(crate) struct OwnClient(Option<postgres::Client>);

impl OwnClient {
    pub(crate) fn new(client: postgres::Client) -> Self {
        OwnClient(Some(client))
    }
}

impl std::ops::Deref for OwnClient {
    type Target = postgres::Client;

    fn deref(&self) -> &postgres::Client {
        // Taken only by `drop`.
        self.0.as_ref().expect("the client lives until dropped")
    }
}

impl std::ops::DerefMut for OwnClient {
    fn deref_mut(&mut self) -> &mut postgres::Client {
        self.0.as_mut().expect("the client lives until dropped")
    }
}

impl Drop for OwnClient {
    fn drop(&mut self) {
        if let Some(client) = self.0.take() {
            drop_off_runtime("connection", client);
        }
    }
}
