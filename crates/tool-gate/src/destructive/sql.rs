//! SQL that destroys data: `DROP TABLE|DATABASE|SCHEMA`, `TRUNCATE`, and
//! `DELETE FROM` without `WHERE`, each as the first words of a statement,
//! any case, comments skipped.

/// The rule the first destructive statement in `text` breaks, if any.
pub(super) fn rule(text: &str) -> Option<&'static str> {
    text.split(';').find_map(statement)
}

fn statement(text: &str) -> Option<&'static str> {
    let tokens = tokens(text);
    let word = |i: usize| tokens.get(i).map(String::as_str).unwrap_or("");
    let is = |i: usize, k: &str| word(i).eq_ignore_ascii_case(k);
    if is(0, "drop") {
        let next = if is(1, "temporary") || is(1, "temp") {
            2
        } else {
            1
        };
        return (["table", "database", "schema"].iter().any(|k| is(next, k))
            && !word(next + 1).is_empty())
        .then_some("sql-drop");
    }
    if is(0, "truncate") {
        let target = if is(1, "table") { 2 } else { 1 };
        // A table name, not an option: `truncate -s 0 file` is coreutils.
        let name = word(target).trim_start_matches(['"', '`', '[', '\\', '\'']);
        return name
            .starts_with(|c: char| c == '_' || c.is_alphabetic())
            .then_some("sql-truncate");
    }
    if is(0, "delete") && is(1, "from") && !word(2).is_empty() {
        return (!tokens.iter().any(|t| t.eq_ignore_ascii_case("where")))
            .then_some("sql-delete-all");
    }
    None
}

/// Words of a statement: split at blanks, punctuation and comments.
fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    let flush = |current: &mut String, out: &mut Vec<String>| {
        if !current.is_empty() {
            out.push(std::mem::take(current));
        }
    };
    while i < chars.len() {
        let c = chars[i];
        if c == '-' && chars.get(i + 1) == Some(&'-') {
            flush(&mut current, &mut out);
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if c == '/' && chars.get(i + 1) == Some(&'*') {
            flush(&mut current, &mut out);
            i += 2;
            while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                i += 1;
            }
            i += 2;
            continue;
        }
        if c.is_whitespace() || matches!(c, '(' | ')' | ',') {
            flush(&mut current, &mut out);
        } else {
            current.push(c);
        }
        i += 1;
    }
    flush(&mut current, &mut out);
    out
}
