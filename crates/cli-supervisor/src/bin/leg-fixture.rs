//! A test fixture standing in for an agent CLI: real process behaviour on demand.
//!
//! Usage: `leg-fixture <mode> [args...]`; trailing arguments a mode does not
//! use are ignored (tests append a unique marker to find the process in /proc).
//!
//! - `lines N INTERVAL_MS PAD`: N NDJSON lines, PAD bytes of padding each.
//! - `bytes TOTAL LINE_LEN`: about TOTAL bytes of LINE_LEN-byte NDJSON lines, fast.
//! - `silent MS`: nothing for MS milliseconds, then one line.
//! - `big BYTES`: one line of BYTES non-JSON bytes, then `{"after":true}`.
//! - `invalid`: `{not json`, then `{"ok":1}`.
//! - `fail CODE`: a line, then stderr text, then exit CODE.
//! - `env NAME...`: one line `{"NAME": value-or-null, ...}`.
//! - `env-hash NAME...`: one line `{"NAME": FNV-1a-64-hex-or-null, ...}`
//!   (proves a value reached the environment without echoing it).
//! - `leak NAME...`: writes each variable's value to stdout (as a JSON
//!   string, and inside an escaped JSON text) and to stderr, then exits 3.
//! - `envcount`: one line `{"count": number-of-variables}`.
//! - `stdin`: echoes each stdin line back wrapped as `{"echo": line}`.
//! - `hang`: one line, then sleeps forever.

#![forbid(unsafe_code)]
#![allow(
    clippy::print_stderr,
    reason = "a test fixture: writing to stderr is what it is for"
)]

use std::io::{BufRead, Write};
use std::time::Duration;

/// FNV-1a, 64 bits (the tests compute the same).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).map(String::as_str).unwrap_or("");
    let num = |i: usize| arg(i).parse::<u64>().unwrap_or(0);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let result = match arg(0) {
        "lines" => (|| {
            let pad = "x".repeat(num(3) as usize);
            for i in 0..num(1) {
                writeln!(out, "{{\"i\":{i},\"pad\":\"{pad}\"}}")?;
                out.flush()?;
                if num(2) > 0 {
                    std::thread::sleep(Duration::from_millis(num(2)));
                }
            }
            Ok(())
        })(),
        "bytes" => (|| {
            let line_len = (num(2) as usize).max(16);
            let mut line = format!("{{\"pad\":\"{}\"}}", "y".repeat(line_len - 11));
            line.push('\n');
            let mut written = 0u64;
            while written < num(1) {
                out.write_all(line.as_bytes())?;
                written += line.len() as u64;
            }
            out.flush()
        })(),
        "silent" => (|| {
            std::thread::sleep(Duration::from_millis(num(1)));
            writeln!(out, "{{\"woke\":true}}")?;
            out.flush()
        })(),
        "big" => (|| {
            let chunk = vec![b'a'; 64 * 1024];
            let mut left = num(1) as usize;
            while left > 0 {
                let n = left.min(chunk.len());
                out.write_all(&chunk[..n])?;
                left -= n;
            }
            writeln!(out)?;
            writeln!(out, "{{\"after\":true}}")?;
            out.flush()
        })(),
        "invalid" => (|| {
            writeln!(out, "{{not json")?;
            writeln!(out, "{{\"ok\":1}}")?;
            out.flush()
        })(),
        "fail" => (|| {
            writeln!(out, "{{\"started\":true}}")?;
            out.flush()?;
            eprintln!("fixture failing on purpose");
            std::process::exit(num(1) as i32)
        })(),
        "env" => (|| {
            let fields: Vec<String> = args[1..]
                .iter()
                .map(|name| match std::env::var(name) {
                    Ok(value) => format!("{name:?}:{value:?}"),
                    Err(_) => format!("{name:?}:null"),
                })
                .collect();
            writeln!(out, "{{{}}}", fields.join(","))?;
            out.flush()
        })(),
        "env-hash" => (|| {
            let fields: Vec<String> = args[1..]
                .iter()
                .map(|name| match std::env::var(name) {
                    Ok(value) => format!("{name:?}:\"{:016x}\"", fnv1a(value.as_bytes())),
                    Err(_) => format!("{name:?}:null"),
                })
                .collect();
            writeln!(out, "{{{}}}", fields.join(","))?;
            out.flush()
        })(),
        "leak" => (|| {
            for name in &args[1..] {
                let value = std::env::var(name).unwrap_or_default();
                let inner = serde_json::json!({ name.as_str(): value }).to_string();
                let line = serde_json::json!({ "value": value, "nested": inner, name.as_str(): 1 });
                writeln!(out, "{line}")?;
                eprintln!("{name}={value}");
            }
            out.flush()?;
            std::process::exit(3)
        })(),
        "envcount" => (|| {
            writeln!(out, "{{\"count\":{}}}", std::env::vars_os().count())?;
            out.flush()
        })(),
        "stdin" => (|| {
            for line in std::io::stdin().lock().lines() {
                writeln!(out, "{{\"echo\":{:?}}}", line?)?;
                out.flush()?;
            }
            Ok(())
        })(),
        "hang" => (|| {
            writeln!(out, "{{\"hanging\":true}}")?;
            out.flush()?;
            loop {
                std::thread::sleep(Duration::from_secs(3600));
            }
        })(),
        other => {
            eprintln!("unknown mode {other:?}");
            std::process::exit(2)
        }
    };
    if result.is_err() {
        std::process::exit(3);
    }
}
