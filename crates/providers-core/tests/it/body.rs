//! Replayable request bodies.

use std::io::{Cursor, Read, Seek, SeekFrom};

use providers_core::{BodySource, EndpointRetry, Error, replayable_body};

fn read_all(mut r: Box<dyn Read + Send>) -> Vec<u8> {
    let mut v = Vec::new();
    r.read_to_end(&mut v).expect("read");
    v
}

/// Three attempts of the same factory.
fn three(f: &mut providers_core::BodyFactory) -> Vec<Vec<u8>> {
    (0..3)
        .map(|_| read_all(f.next_body().expect("body")))
        .collect()
}

#[test]
fn bytes_are_snapshotted_once() {
    // contract: PRV-074
    let mut buf = b"audio bytes".to_vec();
    let mut f = replayable_body(BodySource::Bytes(&buf), true).unwrap();
    buf.clear();
    buf.extend_from_slice(b"changed");
    assert_eq!(
        three(&mut f),
        [
            b"audio bytes".to_vec(),
            b"audio bytes".to_vec(),
            b"audio bytes".to_vec()
        ]
    );
    assert!(f.is_replayable());
}

#[test]
fn seekable_stream_replays_from_its_start_position() {
    // contract: PRV-075
    let mut s = Cursor::new(b"HEADERpayload".to_vec());
    s.seek(SeekFrom::Start(6)).unwrap();
    let mut f = replayable_body(BodySource::Seekable(&mut s), true).unwrap();
    assert_eq!(
        three(&mut f),
        [
            b"payload".to_vec(),
            b"payload".to_vec(),
            b"payload".to_vec()
        ]
    );
}

/// A stream that can only be read.
struct OneShot(
    Cursor<Vec<u8>>,
    std::sync::Arc<std::sync::atomic::AtomicBool>,
);
impl Read for OneShot {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.1.store(true, std::sync::atomic::Ordering::SeqCst);
        self.0.read(buf)
    }
}

#[test]
fn one_shot_stream_is_refused_before_any_io_when_a_retry_could_happen() {
    // contract: PRV-076, PRV-050
    let touched = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let retry = EndpointRetry {
        max_retries: 3,
        ..Default::default()
    };
    let src = BodySource::OneShot(Box::new(OneShot(
        Cursor::new(b"x".to_vec()),
        touched.clone(),
    )));
    assert!(matches!(
        replayable_body(src, retry.can_retry()),
        Err(Error::NotReplayable)
    ));
    assert!(
        !touched.load(std::sync::atomic::Ordering::SeqCst),
        "nothing was read"
    );

    // Single-shot endpoint: handed through exactly once.
    let single = EndpointRetry {
        max_retries: 1,
        ..Default::default()
    };
    let src = BodySource::OneShot(Box::new(OneShot(
        Cursor::new(b"once".to_vec()),
        touched.clone(),
    )));
    let mut f = replayable_body(src, single.can_retry()).unwrap();
    assert!(!f.is_replayable());
    assert_eq!(read_all(f.next_body().unwrap()), b"once");
    assert!(matches!(f.next_body(), Err(Error::BodyConsumed)));
}

#[test]
fn rebuilding_the_factory_around_a_read_stream_still_sends_everything() {
    // contract: PRV-077
    let mut s = Cursor::new(b"whole file".to_vec());
    let mut first = replayable_body(BodySource::Seekable(&mut s), true).unwrap();
    assert_eq!(read_all(first.next_body().unwrap()), b"whole file");
    // An outer retry rebuilds the factory around the very same stream.
    assert_eq!(
        s.position(),
        0,
        "position restored right after the snapshot"
    );
    let mut second = replayable_body(BodySource::Seekable(&mut s), true).unwrap();
    assert_eq!(read_all(second.next_body().unwrap()), b"whole file");
}
