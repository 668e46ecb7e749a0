//! Finding the fixture servers a test started: every test passes a unique
//! tag among a server's arguments, and after teardown checks `/proc` for
//! live processes that still carry it.

/// Live (non-zombie) processes whose command line carries `tag`.
pub fn live_with_tag(tag: &str) -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if !cmdline.split(|b| *b == 0).any(|arg| arg == tag.as_bytes()) {
            continue;
        }
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // The state follows the parenthesised command name.
        let state = stat
            .rsplit_once(") ")
            .and_then(|(_, rest)| rest.chars().next());
        if state != Some('Z') && state.is_some() {
            out.push(pid);
        }
    }
    out
}
