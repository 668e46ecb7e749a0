//! Deterministic ids: the same transcript event always yields the same
//! message id, in any process, so re-reading adds nothing.

use sha2::{Digest, Sha256};

/// A UUID-shaped id (version 8, RFC 9562 variant) from the SHA-256 of the
/// parts, each length-prefixed so `("ab", "c")` and `("a", "bc")` differ.
pub fn derive_id(parts: &[&str]) -> String {
    format_id(digest(parts))
}

/// Like [`derive_id`], with the first 48 bits replaced by the event time in
/// milliseconds (the UUIDv7 layout): ids of one transcript sort by time, so
/// the store's id indexes grow at their end instead of at random pages.
pub fn derive_timed_id(at_micros: i64, parts: &[&str]) -> String {
    let mut b = digest(parts);
    let ms = u64::try_from(at_micros.div_euclid(1000)).unwrap_or(0);
    b[..6].copy_from_slice(&ms.to_be_bytes()[2..]);
    format_id(b)
}

fn digest(parts: &[&str]) -> [u8; 16] {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p.as_bytes());
    }
    let d = h.finalize();
    let mut b = [0u8; 16];
    b.copy_from_slice(&d[..16]);
    b
}

fn format_id(mut b: [u8; 16]) -> String {
    b[6] = (b[6] & 0x0f) | 0x80;
    b[8] = (b[8] & 0x3f) | 0x80;
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(36);
    for (i, byte) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push('-');
        }
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    out
}

/// The branch id of a mirrored session.
pub fn branch_id(session_id: &str) -> String {
    derive_id(&["branch", session_id])
}

/// The progression id of a mirrored session's branch.
pub fn progression_id(session_id: &str) -> String {
    derive_id(&["progression", session_id])
}

#[cfg(test)]
mod tests {
    use super::derive_id;

    #[test]
    fn ids_are_stable_uuid_shaped_and_unambiguous() {
        let a = derive_id(&["claude", "s", "u", "0"]);
        assert_eq!(a, derive_id(&["claude", "s", "u", "0"]));
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "8");
        assert_ne!(derive_id(&["ab", "c"]), derive_id(&["a", "bc"]));
        let early = super::derive_timed_id(1_700_000_000_000_000, &["z"]);
        let late = super::derive_timed_id(1_700_000_000_001_000, &["a"]);
        assert!(early < late, "{early} < {late}");
        assert_eq!(&early[14..15], "8");
        assert_eq!(early, super::derive_timed_id(1_700_000_000_000_999, &["z"]));
    }
}
