//! Detects command strings that only a shell would run as meant.

/// Whether `command` uses a shell feature that splitting into words would
/// silently drop: outside quotes, an unescaped `|`, `&`, `;`, `<`, `>`,
/// `(`, `)`, `$`, a backquote or a newline; inside double quotes, an
/// unescaped `$` or backquote (a shell would expand them). Single-quoted
/// text and backslash-escaped characters are literal.
///
/// Reading a feature where there is none only refuses a command (fail
/// closed); the reverse would run something other than what was written.
pub fn needs_shell(command: &str) -> bool {
    #[derive(Clone, Copy, PartialEq)]
    enum Quote {
        None,
        Single,
        Double,
    }
    let mut quote = Quote::None;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match quote {
            Quote::Single => {
                if c == '\'' {
                    quote = Quote::None;
                }
            }
            Quote::Double => match c {
                '\\' => {
                    chars.next();
                }
                '"' => quote = Quote::None,
                '$' | '`' => return true,
                _ => {}
            },
            Quote::None => match c {
                '\\' => {
                    chars.next();
                }
                '\'' => quote = Quote::Single,
                '"' => quote = Quote::Double,
                '|' | '&' | ';' | '<' | '>' | '(' | ')' | '$' | '`' | '\n' => return true,
                _ => {}
            },
        }
    }
    false
}
