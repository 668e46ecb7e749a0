//! A POSIX-shell (plus common bash) command-line reader: words with their
//! quoting, expansions and command substitutions, redirections, pipes,
//! lists, subshells and here-documents. It never runs anything.

/// A parsed command line, flattened: every simple command in the order the
/// shell meets it, whatever list, pipeline or group it sits in.
#[derive(Debug, Clone, Default)]
pub(super) struct Script {
    pub(super) commands: Vec<Command>,
}

/// One simple command.
#[derive(Debug, Clone, Default)]
pub(super) struct Command {
    /// Words, assignments included, brace expansion done.
    pub(super) words: Vec<Word>,
    pub(super) redirects: Vec<Redirect>,
    /// Standard input comes from the previous command of a pipeline.
    pub(super) piped: bool,
    /// Here-document and here-string bodies fed to standard input.
    pub(super) input: Vec<Word>,
}

/// A redirection.
#[derive(Debug, Clone)]
pub(super) struct Redirect {
    /// The target is opened for writing (`>`, `>>`, `>|`, `&>`, `<>`, `>&file`).
    pub(super) writes: bool,
    pub(super) target: Word,
}

/// A word as written: literal text and expansions.
#[derive(Debug, Clone, Default)]
pub(super) struct Word {
    pub(super) parts: Vec<Part>,
}

/// A piece of a word.
#[derive(Debug, Clone)]
pub(super) enum Part {
    /// Literal text; `true` when it was quoted or escaped.
    Lit(String, bool),
    /// `$NAME` / `${NAME}` / `$1`; `true` when double-quoted.
    Param(String, bool),
    /// `$(…)`, backquotes, `<(…)`, `>(…)`: a command that runs.
    Subst(Script),
    /// An expansion whose value cannot be read (`${x:-y}`, `$((…))`).
    Opaque,
}

/// Why a command line could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ParseError {
    /// An unterminated quote, substitution or group, or a stray `)`.
    Unbalanced,
    /// Syntax this reader does not model (`case` patterns, `;;`).
    Unsupported,
    /// Nesting or brace expansion beyond the reader's budget.
    TooLarge,
}

const MAX_DEPTH: usize = 48;
const MAX_BRACE_WORDS: usize = 512;

/// Parses a command line.
pub(super) fn parse(text: &str) -> Result<Script, ParseError> {
    let mut p = Parser {
        chars: text.chars().collect(),
        pos: 0,
        depth: 0,
    };
    let script = p.list(false)?;
    if p.pos < p.chars.len() {
        return Err(ParseError::Unbalanced);
    }
    Ok(script)
}

/// Reads `text` as the body of an unquoted here-document: the command
/// substitutions it holds (they run) and its text.
pub(super) fn heredoc_word(text: &str, depth: usize) -> Result<Word, ParseError> {
    let mut p = Parser {
        chars: text.chars().collect(),
        pos: 0,
        depth,
    };
    let mut word = Word::default();
    p.double_quoted(&mut word, None)?;
    Ok(word)
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
    depth: usize,
}

struct Pending {
    delimiter: String,
    strip_tabs: bool,
    expands: bool,
    command: usize,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, n: usize) -> Option<char> {
        self.chars.get(self.pos + n).copied()
    }

    fn descend(&mut self) -> Result<(), ParseError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            Err(ParseError::TooLarge)
        } else {
            Ok(())
        }
    }

    /// A command list up to the end of input or, inside `$(` / `(`, the
    /// closing `)` (consumed).
    fn list(&mut self, in_parens: bool) -> Result<Script, ParseError> {
        let mut script = Script::default();
        let mut current = Command::default();
        let mut pending: Vec<Pending> = Vec::new();
        let mut piped_next = false;
        loop {
            let Some(c) = self.peek() else {
                if in_parens {
                    return Err(ParseError::Unbalanced);
                }
                break;
            };
            match c {
                ' ' | '\t' | '\r' => self.pos += 1,
                '\n' => {
                    self.pos += 1;
                    finish(&mut script, &mut current, &mut piped_next, false);
                    self.read_heredocs(&mut script, &mut pending)?;
                }
                '#' => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.pos += 1;
                    }
                }
                ';' => {
                    if matches!(self.peek_at(1), Some(';' | '&')) {
                        return Err(ParseError::Unsupported);
                    }
                    self.pos += 1;
                    finish(&mut script, &mut current, &mut piped_next, false);
                }
                '&' if self.peek_at(1) == Some('>') => {
                    self.redirect(&mut current, &mut pending, &mut script)?
                }
                '&' => {
                    self.pos += if self.peek_at(1) == Some('&') { 2 } else { 1 };
                    finish(&mut script, &mut current, &mut piped_next, false);
                }
                '|' => {
                    let pipe = !matches!(self.peek_at(1), Some('|'));
                    self.pos += if matches!(self.peek_at(1), Some('|' | '&')) {
                        2
                    } else {
                        1
                    };
                    finish(&mut script, &mut current, &mut piped_next, pipe);
                }
                '(' => {
                    if current.words.len() == 1 && self.peek_at(1) == Some(')') {
                        // `name() { … }`: a function definition; its body
                        // is read as commands that run.
                        self.pos += 2;
                        current.words.clear();
                        continue;
                    }
                    if !current.words.is_empty() {
                        return Err(ParseError::Unbalanced);
                    }
                    if self.peek_at(1) == Some('(') {
                        // `(( … ))`: arithmetic, no command.
                        self.skip_arithmetic(2)?;
                        continue;
                    }
                    self.pos += 1;
                    self.descend()?;
                    let inner = self.list(true)?;
                    self.depth -= 1;
                    let piped = std::mem::take(&mut piped_next);
                    for (i, mut cmd) in inner.commands.into_iter().enumerate() {
                        if i == 0 {
                            cmd.piped |= piped;
                        }
                        script.commands.push(cmd);
                    }
                }
                ')' => {
                    if !in_parens {
                        return Err(ParseError::Unbalanced);
                    }
                    self.pos += 1;
                    finish(&mut script, &mut current, &mut piped_next, false);
                    if !pending.is_empty() {
                        return Err(ParseError::Unsupported);
                    }
                    return Ok(script);
                }
                '<' | '>' => {
                    if matches!(self.peek_at(1), Some('(')) {
                        // Process substitution: a command that runs.
                        self.pos += 2;
                        self.descend()?;
                        let inner = self.list(true)?;
                        self.depth -= 1;
                        let mut word = Word::default();
                        word.parts.push(Part::Subst(inner));
                        self.word_rest(&mut word)?;
                        push_words(&mut current, word)?;
                    } else {
                        self.redirect(&mut current, &mut pending, &mut script)?;
                    }
                }
                _ => {
                    let mut word = Word::default();
                    self.word_rest(&mut word)?;
                    // `2>file`: digits right before a redirection are its fd.
                    if matches!(self.peek(), Some('<' | '>'))
                        && is_fd_number(&word)
                        && self.peek_at(1) != Some('(')
                    {
                        self.redirect(&mut current, &mut pending, &mut script)?;
                        continue;
                    }
                    if current.words.is_empty() && is_literal(&word, "case") {
                        return Err(ParseError::Unsupported);
                    }
                    push_words(&mut current, word)?;
                }
            }
        }
        finish(&mut script, &mut current, &mut piped_next, false);
        if !pending.is_empty() {
            // A here-document with no newline after it: its body is empty.
            pending.clear();
        }
        Ok(script)
    }

    fn skip_arithmetic(&mut self, open: usize) -> Result<(), ParseError> {
        let mut depth = 0usize;
        self.pos += open;
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                '(' => depth += 1,
                ')' if depth == 0 => {
                    if self.peek() == Some(')') {
                        self.pos += 1;
                        return Ok(());
                    }
                    return Err(ParseError::Unbalanced);
                }
                ')' => depth -= 1,
                _ => {}
            }
        }
        Err(ParseError::Unbalanced)
    }

    fn redirect(
        &mut self,
        current: &mut Command,
        pending: &mut Vec<Pending>,
        script: &mut Script,
    ) -> Result<(), ParseError> {
        let rest: String = self.chars[self.pos..].iter().take(3).collect();
        let (op, len) = [
            ("&>>", 3),
            ("<<<", 3),
            ("<<-", 3),
            ("&>", 2),
            (">>", 2),
            (">|", 2),
            (">&", 2),
            ("<<", 2),
            ("<>", 2),
            ("<&", 2),
            (">", 1),
            ("<", 1),
        ]
        .into_iter()
        .find(|(op, _)| rest.starts_with(op))
        .ok_or(ParseError::Unbalanced)?;
        self.pos += len;
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.pos += 1;
        }
        let mut target = Word::default();
        self.word_rest(&mut target)?;
        if target.parts.is_empty() {
            return Err(ParseError::Unbalanced);
        }
        match op {
            "<<" | "<<-" => {
                let expands = !target.parts.iter().any(|p| matches!(p, Part::Lit(_, true)));
                pending.push(Pending {
                    delimiter: static_text(&target),
                    strip_tabs: op == "<<-",
                    expands,
                    command: script.commands.len(),
                });
            }
            "<<<" => current.input.push(target),
            "<" => {}
            ">&" | "<&" => {
                let t = static_text(&target);
                let dup = t == "-" || (!t.is_empty() && t.chars().all(|c| c.is_ascii_digit()));
                if !dup && op == ">&" {
                    current.redirects.push(Redirect {
                        writes: true,
                        target,
                    });
                } else {
                    current.redirects.push(Redirect {
                        writes: false,
                        target,
                    });
                }
            }
            _ => current.redirects.push(Redirect {
                writes: true,
                target,
            }),
        }
        Ok(())
    }

    /// Reads the bodies of the here-documents opened on the line just ended.
    fn read_heredocs(
        &mut self,
        script: &mut Script,
        pending: &mut Vec<Pending>,
    ) -> Result<(), ParseError> {
        for doc in pending.drain(..) {
            let mut body = String::new();
            loop {
                if self.pos >= self.chars.len() {
                    break;
                }
                let start = self.pos;
                while self.peek().is_some_and(|c| c != '\n') {
                    self.pos += 1;
                }
                let mut line: String = self.chars[start..self.pos].iter().collect();
                if self.peek() == Some('\n') {
                    self.pos += 1;
                }
                if doc.strip_tabs {
                    line = line.trim_start_matches('\t').to_owned();
                }
                if line == doc.delimiter {
                    break;
                }
                body.push_str(&line);
                body.push('\n');
            }
            let word = if doc.expands {
                heredoc_word(&body, self.depth + 1)?
            } else {
                Word {
                    parts: vec![Part::Lit(body, true)],
                }
            };
            // The here-document belongs to the command that opened it: the
            // last one finished before this newline at that index.
            let index = doc.command.min(script.commands.len().saturating_sub(1));
            if let Some(cmd) = script.commands.get_mut(index) {
                cmd.input.push(word);
            }
        }
        Ok(())
    }

    /// Appends the rest of a word (up to an unquoted blank or operator).
    fn word_rest(&mut self, word: &mut Word) -> Result<(), ParseError> {
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' | '\r' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>' => break,
                '\'' => {
                    self.pos += 1;
                    let start = self.pos;
                    while self.peek().is_some_and(|c| c != '\'') {
                        self.pos += 1;
                    }
                    if self.peek().is_none() {
                        return Err(ParseError::Unbalanced);
                    }
                    let text: String = self.chars[start..self.pos].iter().collect();
                    self.pos += 1;
                    lit(word, &text, true);
                }
                '"' => {
                    self.pos += 1;
                    self.double_quoted(word, Some('"'))?;
                }
                '\\' => {
                    match self.peek_at(1) {
                        Some('\n') => {}
                        Some(next) => lit(word, &next.to_string(), true),
                        None => lit(word, "\\", true),
                    }
                    self.pos += 2;
                }
                '`' => {
                    self.pos += 1;
                    let inner = self.backquoted()?;
                    word.parts.push(Part::Subst(inner));
                }
                '$' => self.dollar(word, false)?,
                _ => {
                    self.pos += 1;
                    lit(word, &c.to_string(), false);
                }
            }
        }
        Ok(())
    }

    /// The inside of `"…"` (or a here-document body when `close` is None).
    fn double_quoted(&mut self, word: &mut Word, close: Option<char>) -> Result<(), ParseError> {
        // An empty `""` is still a word.
        lit(word, "", true);
        loop {
            let Some(c) = self.peek() else {
                return if close.is_some() {
                    Err(ParseError::Unbalanced)
                } else {
                    Ok(())
                };
            };
            if Some(c) == close {
                self.pos += 1;
                return Ok(());
            }
            match c {
                '\\' => {
                    match self.peek_at(1) {
                        Some('\n') => {}
                        Some(n @ ('$' | '`' | '"' | '\\')) => lit(word, &n.to_string(), true),
                        Some(n) => lit(word, &format!("\\{n}"), true),
                        None => lit(word, "\\", true),
                    }
                    self.pos += 2;
                }
                '`' => {
                    self.pos += 1;
                    let inner = self.backquoted()?;
                    word.parts.push(Part::Subst(inner));
                }
                '$' => self.dollar(word, true)?,
                _ => {
                    self.pos += 1;
                    lit(word, &c.to_string(), true);
                }
            }
        }
    }

    fn backquoted(&mut self) -> Result<Script, ParseError> {
        let mut text = String::new();
        loop {
            match self.peek() {
                None => return Err(ParseError::Unbalanced),
                Some('`') => {
                    self.pos += 1;
                    break;
                }
                Some('\\') if matches!(self.peek_at(1), Some('$' | '`' | '\\')) => {
                    text.push(self.peek_at(1).unwrap_or('\\'));
                    self.pos += 2;
                }
                Some(c) => {
                    text.push(c);
                    self.pos += 1;
                }
            }
        }
        self.descend()?;
        let mut inner = Parser {
            chars: text.chars().collect(),
            pos: 0,
            depth: self.depth,
        };
        let script = inner.list(false);
        self.depth -= 1;
        script
    }

    fn dollar(&mut self, word: &mut Word, quoted: bool) -> Result<(), ParseError> {
        match self.peek_at(1) {
            Some('\'') if !quoted => {
                self.pos += 2;
                let text = self.ansi_c()?;
                lit(word, &text, true);
            }
            Some('"') if !quoted => {
                self.pos += 2;
                self.double_quoted(word, Some('"'))?;
            }
            Some('(') if self.peek_at(2) == Some('(') => {
                self.pos += 1;
                self.skip_arithmetic(2)?;
                word.parts.push(Part::Opaque);
            }
            Some('(') => {
                self.pos += 2;
                self.descend()?;
                let inner = self.list(true)?;
                self.depth -= 1;
                word.parts.push(Part::Subst(inner));
            }
            Some('{') => {
                self.pos += 2;
                let start = self.pos;
                let mut depth = 0usize;
                loop {
                    match self.peek() {
                        None => return Err(ParseError::Unbalanced),
                        Some('{') => depth += 1,
                        Some('}') if depth == 0 => break,
                        Some('}') => depth -= 1,
                        Some('\\') => self.pos += 1,
                        _ => {}
                    }
                    self.pos += 1;
                }
                let inside: String = self.chars[start..self.pos].iter().collect();
                self.pos += 1;
                if is_name(&inside) || is_special(&inside) {
                    word.parts.push(Part::Param(inside, quoted));
                } else {
                    word.parts.push(Part::Opaque);
                }
            }
            Some(c) if c == '_' || c.is_ascii_alphabetic() => {
                self.pos += 1;
                let start = self.pos;
                while self
                    .peek()
                    .is_some_and(|c| c == '_' || c.is_ascii_alphanumeric())
                {
                    self.pos += 1;
                }
                let name: String = self.chars[start..self.pos].iter().collect();
                word.parts.push(Part::Param(name, quoted));
            }
            Some(c) if c.is_ascii_digit() || "@*#?$!-".contains(c) => {
                self.pos += 2;
                word.parts.push(Part::Param(c.to_string(), quoted));
            }
            _ => {
                self.pos += 1;
                lit(word, "$", quoted);
            }
        }
        Ok(())
    }

    /// The inside of `$'…'` with its escapes decoded.
    fn ansi_c(&mut self) -> Result<String, ParseError> {
        let mut out = String::new();
        loop {
            let c = self.peek().ok_or(ParseError::Unbalanced)?;
            self.pos += 1;
            match c {
                '\'' => return Ok(out),
                '\\' => {
                    let e = self.peek().ok_or(ParseError::Unbalanced)?;
                    self.pos += 1;
                    match e {
                        'n' => out.push('\n'),
                        't' => out.push('\t'),
                        'r' => out.push('\r'),
                        'a' => out.push('\u{7}'),
                        'b' => out.push('\u{8}'),
                        'e' | 'E' => out.push('\u{1b}'),
                        'f' => out.push('\u{c}'),
                        'v' => out.push('\u{b}'),
                        'x' | 'u' | 'U' => {
                            let max = match e {
                                'x' => 2,
                                'u' => 4,
                                _ => 8,
                            };
                            let digits = self.take_while_max(max, |c| c.is_ascii_hexdigit());
                            match u32::from_str_radix(&digits, 16)
                                .ok()
                                .and_then(char::from_u32)
                            {
                                Some(ch) => out.push(ch),
                                None => out.push_str(&format!("\\{e}{digits}")),
                            }
                        }
                        '0'..='7' => {
                            self.pos -= 1;
                            let digits = self.take_while_max(3, |c| ('0'..='7').contains(&c));
                            if let Some(ch) = u32::from_str_radix(&digits, 8)
                                .ok()
                                .and_then(char::from_u32)
                            {
                                out.push(ch);
                            }
                        }
                        other => out.push(other),
                    }
                }
                c => out.push(c),
            }
        }
    }

    fn take_while_max(&mut self, max: usize, f: impl Fn(char) -> bool) -> String {
        let mut s = String::new();
        while s.len() < max && self.peek().is_some_and(&f) {
            s.push(self.peek().unwrap_or('0'));
            self.pos += 1;
        }
        s
    }
}

fn finish(script: &mut Script, current: &mut Command, piped_next: &mut bool, pipe: bool) {
    let mut cmd = std::mem::take(current);
    if !cmd.words.is_empty() || !cmd.redirects.is_empty() || !cmd.input.is_empty() {
        cmd.piped |= std::mem::take(piped_next);
        script.commands.push(cmd);
    }
    if pipe {
        *piped_next = true;
    }
}

fn lit(word: &mut Word, text: &str, quoted: bool) {
    if let Some(Part::Lit(s, q)) = word.parts.last_mut()
        && *q == quoted
    {
        s.push_str(text);
        return;
    }
    word.parts.push(Part::Lit(text.to_owned(), quoted));
}

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

fn is_special(s: &str) -> bool {
    s.len() == 1
        && s.chars()
            .all(|c| c.is_ascii_digit() || "@*#?$!-".contains(c))
        || (!s.is_empty() && s.chars().all(|c| c.is_ascii_digit()))
}

fn is_fd_number(word: &Word) -> bool {
    matches!(word.parts.as_slice(), [Part::Lit(s, false)] if !s.is_empty() && s.chars().all(|c| c.is_ascii_digit()))
}

fn is_literal(word: &Word, text: &str) -> bool {
    matches!(word.parts.as_slice(), [Part::Lit(s, false)] if s == text)
}

/// The literal text of a word (expansions dropped).
pub(super) fn static_text(word: &Word) -> String {
    word.parts
        .iter()
        .filter_map(|p| match p {
            Part::Lit(s, _) => Some(s.as_str()),
            _ => None,
        })
        .collect()
}

/// Pushes `word` after brace expansion (`{a,b}c` → `ac bc`).
fn push_words(cmd: &mut Command, word: Word) -> Result<(), ParseError> {
    let all_literal = word.parts.iter().all(|p| matches!(p, Part::Lit(..)));
    if !all_literal {
        cmd.words.push(word);
        return Ok(());
    }
    let chars: Vec<(char, bool)> = word
        .parts
        .iter()
        .flat_map(|p| match p {
            Part::Lit(s, q) => s.chars().map(|c| (c, *q)).collect::<Vec<_>>(),
            _ => Vec::new(),
        })
        .collect();
    if !chars.iter().any(|&(c, q)| c == '{' && !q) {
        cmd.words.push(word);
        return Ok(());
    }
    let mut out = Vec::new();
    brace_expand(&chars, &mut out)?;
    if out.len() == 1 {
        cmd.words.push(word);
        return Ok(());
    }
    for text in out {
        cmd.words.push(Word {
            parts: vec![Part::Lit(text, true)],
        });
    }
    Ok(())
}

fn brace_expand(chars: &[(char, bool)], out: &mut Vec<String>) -> Result<(), ParseError> {
    // Find the first unquoted `{` with a matching `}` and a top-level comma.
    for (open, &(c, q)) in chars.iter().enumerate() {
        if c != '{' || q {
            continue;
        }
        let mut depth = 0usize;
        let mut commas = Vec::new();
        let mut close = None;
        for (j, &(c, q)) in chars.iter().enumerate().skip(open + 1) {
            if q {
                continue;
            }
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    close = Some(j);
                    break;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => commas.push(j),
                _ => {}
            }
        }
        let Some(close) = close else { break };
        if commas.is_empty() {
            continue;
        }
        let mut bounds = vec![open];
        bounds.extend(&commas);
        bounds.push(close);
        for pair in bounds.windows(2) {
            let mut variant: Vec<(char, bool)> = chars[..open].to_vec();
            variant.extend_from_slice(&chars[pair[0] + 1..pair[1]]);
            variant.extend_from_slice(&chars[close + 1..]);
            brace_expand(&variant, out)?;
            if out.len() > MAX_BRACE_WORDS {
                return Err(ParseError::TooLarge);
            }
        }
        return Ok(());
    }
    out.push(chars.iter().map(|&(c, _)| c).collect());
    Ok(())
}

#[cfg(test)]
mod tests;
