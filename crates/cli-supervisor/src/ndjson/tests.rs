//! Unit tests for the bounded line decoder.

use proptest::prelude::*;

use super::{Event, LineDecoder, LineFormat};

fn decode_in_chunks(input: &[u8], max: usize, chunk: usize) -> (Vec<Event>, usize) {
    decode_as(LineFormat::Value, input, max, chunk)
}

pub(super) fn decode_as(
    format: LineFormat,
    input: &[u8],
    max: usize,
    chunk: usize,
) -> (Vec<Event>, usize) {
    let chunk = chunk.max(1);
    let mut decoder = LineDecoder::new(max, format, chunk);
    let mut out = Vec::new();
    let mut peak = 0;
    for piece in input.chunks(chunk) {
        decoder.read_buf()[..piece.len()].copy_from_slice(piece);
        decoder.filled(piece.len());
        while let Some(event) = decoder.next_event() {
            out.push(event);
        }
        peak = peak.max(decoder.partial.capacity());
    }
    out.extend(decoder.finish());
    (out, peak)
}

#[test]
fn over_long_line_is_discarded_with_bounded_memory() {
    let mut input = vec![b'a'; 10 * 1024 * 1024];
    input.extend_from_slice(b"\n{\"after\":1}\n");
    let max = 64 * 1024;
    let (events, peak) = decode_in_chunks(&input, max, 64 * 1024);
    assert_eq!(
        events,
        vec![
            Event::LineTooLong {
                line: 1,
                len: 10 * 1024 * 1024
            },
            Event::Json {
                line: 2,
                value: serde_json::json!({"after": 1})
            },
        ]
    );
    assert!(peak <= 2 * max, "buffer stayed bounded: {peak}");
}

#[test]
fn final_line_without_newline_and_blank_lines() {
    let (events, _) = decode_in_chunks(b"\n  \r\n{\"a\":1}\r\n{\"b\":2}", 1024, 3);
    assert_eq!(
        events,
        vec![
            Event::Json {
                line: 3,
                value: serde_json::json!({"a": 1})
            },
            Event::Json {
                line: 4,
                value: serde_json::json!({"b": 2})
            },
        ]
    );
    let (events, _) = decode_in_chunks(b"aaaaaaaaaa", 4, 3);
    assert_eq!(events, vec![Event::LineTooLong { line: 1, len: 10 }]);
}

#[test]
fn raw_format_validates_and_keeps_the_text() {
    let (events, _) = decode_as(
        LineFormat::Raw,
        b" {\"a\": [1, 2]} \n{bad\n\xff\xfe\n",
        1024,
        5,
    );
    assert_eq!(events.len(), 3);
    assert_eq!(
        events[0],
        Event::RawJson {
            line: 1,
            json: "{\"a\": [1, 2]}".into()
        }
    );
    assert!(matches!(events[1], Event::InvalidJson { line: 2, .. }));
    assert!(matches!(events[2], Event::InvalidJson { line: 3, .. }));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

    /// However the stream is chunked, the events are the same.
    #[test]
    fn chunking_does_not_change_events(
        lines in proptest::collection::vec("[a-z{}\":0-9 ]{0,40}", 0..20),
        max in 1usize..48,
        chunk_a in 1usize..64,
        chunk_b in 1usize..64,
    ) {
        let input = lines.join("\n").into_bytes();
        let (a, _) = decode_in_chunks(&input, max, chunk_a);
        let (b, _) = decode_in_chunks(&input, max, chunk_b);
        prop_assert_eq!(a, b);
    }
}
