//! Python `re` patterns, read as Python 3.11 reads them and translated for a
//! linear-time engine.
//!
//! The original compiles a `patternProperties` pattern with Python's `re`
//! and searches each categorised key word with it. This module parses the
//! pattern with Python's grammar (escapes, classes, inline flags, counted
//! repetitions, verbose mode), rejects what Python rejects, and translates
//! what has an exact equivalent into a pattern for `regex-automata`'s Pike
//! VM, which runs in time linear in the input whatever the pattern.
//!
//! The translation is exact on the strings the gate searches: ASCII strings
//! without a line break, at most [`MAX_SEARCHED_LEN`] characters long (the
//! spellings of the key words). That is what makes three simplifications
//! exact: every atom becomes the class of ASCII characters Python's atom
//! matches (case folding included, under the flags in force at the atom),
//! `^`/`$`/`\A`/`\Z` become `\A`/`\z`, and a counted repetition larger than
//! the longest searched string is shortened to an equivalent one.
//!
//! What the linear engine cannot express (lookaround, backreferences, atomic
//! groups, possessive quantifiers, conditionals, named Unicode escapes,
//! non-ASCII group names, the `t` flag, a case-insensitive range holding one
//! of the four non-ASCII characters that fold onto ASCII letters) is
//! [`Unjudgeable::Unsupported`]; what Python rejects is
//! [`Unjudgeable::Rejected`]. The gate treats both as unresolvable, which
//! fails closed.

use std::fmt;

use regex_automata::Input;
use regex_automata::nfa::thompson::{self, pikevm::PikeVM};
use regex_automata::util::syntax;

/// The longest string the translation is exact for.
pub const MAX_SEARCHED_LEN: usize = 16;

/// Deepest group nesting read (Python itself gives up not far beyond).
const MAX_NEST: usize = 64;

/// Python's `MAXREPEAT`: a repetition count must stay below it.
const PY_MAXREPEAT: u64 = 4_294_967_295;

/// Size limit of the compiled automaton, in bytes.
const NFA_SIZE_LIMIT: usize = 1 << 16;

/// Why a pattern cannot be judged exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unjudgeable {
    /// Python's `re` rejects the pattern (so the original cannot judge it either).
    Rejected(String),
    /// Python accepts the pattern, but the linear engine has no exact equivalent.
    Unsupported(String),
    /// Python's `re` raises something other than `re.error` on the pattern
    /// (`OverflowError` for a repetition past its limit, `ValueError` for
    /// global ASCII and UNICODE flags together): the original does not
    /// catch it, so it raises, which its host treats as a refusal.
    Raises(String),
}

impl fmt::Display for Unjudgeable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unjudgeable::Rejected(why) => write!(f, "python rejects it: {why}"),
            Unjudgeable::Unsupported(what) => write!(f, "no linear-time equivalent: {what}"),
            Unjudgeable::Raises(what) => write!(f, "python raises {what}"),
        }
    }
}

impl std::error::Error for Unjudgeable {}

fn rejected<T>(why: &str) -> Result<T, Unjudgeable> {
    Err(Unjudgeable::Rejected(why.to_owned()))
}

fn unsupported<T>(what: &str) -> Result<T, Unjudgeable> {
    Err(Unjudgeable::Unsupported(what.to_owned()))
}

/// A Python pattern compiled for searching short ASCII strings.
#[derive(Debug)]
pub struct PythonPattern {
    vm: PikeVM,
    translated: String,
}

impl PythonPattern {
    /// Parses `pattern` as Python 3.11's `re.compile(pattern)` would and
    /// compiles its exact translation.
    ///
    /// # Errors
    ///
    /// [`Unjudgeable`] when Python rejects the pattern or the linear engine
    /// cannot express it exactly.
    pub fn compile(pattern: &str) -> Result<Self, Unjudgeable> {
        let translated = translate(pattern)?;
        let vm = PikeVM::builder()
            .syntax(syntax::Config::new().nest_limit(250))
            .thompson(thompson::Config::new().nfa_size_limit(Some(NFA_SIZE_LIMIT)))
            .build(&translated)
            .map_err(|e| Unjudgeable::Unsupported(format!("too large for the engine ({e})")))?;
        Ok(Self { vm, translated })
    }

    /// The pattern in `regex-automata` syntax.
    pub fn translated(&self) -> &str {
        &self.translated
    }

    /// Python's `re.search(pattern, haystack) is not None`, for ASCII
    /// haystacks without a line break of at most [`MAX_SEARCHED_LEN`]
    /// characters; `None` for any other haystack.
    pub fn search(&self, haystack: &str) -> Option<bool> {
        if haystack.len() > MAX_SEARCHED_LEN
            || !haystack.is_ascii()
            || haystack.contains(['\n', '\r'])
        {
            return None;
        }
        let mut cache = self.vm.create_cache();
        Some(self.vm.is_match(&mut cache, Input::new(haystack)))
    }

    /// [`Self::search`] over many haystacks at once (one search cache).
    pub fn search_many(&self, haystacks: &[&str]) -> Vec<Option<bool>> {
        let mut cache = self.vm.create_cache();
        haystacks
            .iter()
            .map(|h| {
                let searchable =
                    h.len() <= MAX_SEARCHED_LEN && h.is_ascii() && !h.contains(['\n', '\r']);
                searchable.then(|| self.vm.is_match(&mut cache, Input::new(*h)))
            })
            .collect()
    }

    /// Searches many haystacks with one cache (same contract as [`Self::search`]).
    pub(crate) fn search_all<'h>(
        &self,
        haystacks: impl IntoIterator<Item = &'h str>,
        mut each: impl FnMut(&'h str, bool) -> bool,
    ) {
        let mut cache = self.vm.create_cache();
        for h in haystacks {
            debug_assert!(h.len() <= MAX_SEARCHED_LEN && h.is_ascii());
            if !each(h, self.vm.is_match(&mut cache, Input::new(h))) {
                return;
            }
        }
    }
}

/// Flags in force at a point of the pattern.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Flags {
    ignore_case: bool,
    ascii: bool,
    unicode: bool,
    dot_all: bool,
    verbose: bool,
}

/// A flag letter of an inline group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flag {
    I,
    M,
    S,
    X,
    A,
    U,
}

/// A set of ASCII characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Ascii(u128);

impl Ascii {
    const ALL: Ascii = Ascii(u128::MAX);

    fn with(mut self, c: u8) -> Self {
        self.0 |= 1u128 << c;
        self
    }
    fn range(lo: u8, hi: u8) -> Self {
        (lo..=hi).fold(Ascii::default(), Ascii::with)
    }
    fn union(self, o: Ascii) -> Self {
        Ascii(self.0 | o.0)
    }
    fn complement(self) -> Self {
        Ascii(!self.0)
    }
    fn contains(self, c: u8) -> bool {
        c < 128 && self.0 & (1u128 << c) != 0
    }
}

fn digits() -> Ascii {
    Ascii::range(b'0', b'9')
}

fn word() -> Ascii {
    Ascii::range(b'a', b'z')
        .union(Ascii::range(b'A', b'Z'))
        .union(digits())
        .with(b'_')
}

fn space(flags: Flags) -> Ascii {
    // Unicode `\s` also holds the information separators U+001C..U+001F.
    let base = Ascii::range(b'\t', b'\r').with(b' ');
    if flags.ascii {
        base
    } else {
        base.union(Ascii::range(0x1c, 0x1f))
    }
}

/// The ASCII characters a pattern character matches.
fn char_set(c: u32, flags: Flags) -> Ascii {
    let mut set = Ascii::default();
    if c < 128 {
        set = set.with(c as u8);
    }
    if flags.ignore_case {
        for x in 0u8..128 {
            if fold_equal(c, x, flags) {
                set = set.with(x);
            }
        }
    }
    set
}

/// Python's case-insensitive equality of a pattern character and an ASCII
/// input character. In Unicode mode four non-ASCII characters fold onto
/// ASCII letters: U+0130 and U+0131 onto `i`, U+017F onto `s`, U+212A
/// onto `k` (checked against Python 3.11 over every code point).
fn fold_equal(c: u32, x: u8, flags: Flags) -> bool {
    let lx = x.to_ascii_lowercase();
    if c < 128 {
        return (c as u8).to_ascii_lowercase() == lx;
    }
    if flags.ascii {
        return false;
    }
    match c {
        0x130 | 0x131 => lx == b'i',
        0x17f => lx == b's',
        0x212a => lx == b'k',
        _ => false,
    }
}

const SPECIAL_FOLDS: [u32; 4] = [0x130, 0x131, 0x17f, 0x212a];

/// The ASCII characters a range matches.
fn range_set(lo: u32, hi: u32, flags: Flags) -> Result<Ascii, Unjudgeable> {
    let mut set = Ascii::default();
    if lo < 128 {
        set = Ascii::range(lo as u8, hi.min(127) as u8);
    }
    if flags.ignore_case {
        if !flags.ascii && SPECIAL_FOLDS.iter().any(|c| (lo..=hi).contains(c)) {
            // Python's reading depends on how it stores the class.
            return unsupported(
                "a case-insensitive range holding a character that folds onto ascii",
            );
        }
        for x in 0u8..128 {
            let (l, u) = (x.to_ascii_lowercase() as u32, x.to_ascii_uppercase() as u32);
            if (lo..=hi).contains(&l) || (lo..=hi).contains(&u) {
                set = set.with(x);
            }
        }
    }
    Ok(set)
}

/// A parsed pattern, reduced to what searching ASCII strings needs.
#[derive(Debug, Clone)]
enum Node {
    Empty,
    Set(Ascii),
    Start,
    End,
    WordBoundary,
    NotWordBoundary,
    Concat(Vec<Node>),
    Alt(Vec<Node>),
    Repeat(Box<Node>, u64, Option<u64>),
}

/// What the last item of a branch is, for Python's repeat errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Atom,
    At,
    Repeat,
    Group,
}

struct Parser<'p> {
    chars: Vec<char>,
    pos: usize,
    global: Flags,
    global_ascii: bool,
    global_unicode: bool,
    names: Vec<String>,
    /// Capture groups opened so far, and which of them are closed.
    groups: usize,
    closed: Vec<usize>,
    /// Flags of the groups being parsed (innermost last).
    scope: Vec<Flags>,
    _pattern: &'p str,
}

/// Translates a Python pattern into `regex-automata` syntax.
fn translate(pattern: &str) -> Result<String, Unjudgeable> {
    let mut p = Parser {
        chars: pattern.chars().collect(),
        pos: 0,
        global: Flags::default(),
        global_ascii: false,
        global_unicode: false,
        names: Vec::new(),
        groups: 0,
        closed: Vec::new(),
        scope: Vec::new(),
        _pattern: pattern,
    };
    let node = p.alternation(0)?;
    if p.pos < p.chars.len() {
        // Only a `)` stops the top level early.
        return rejected("unbalanced parenthesis");
    }
    if p.global_ascii && p.global_unicode {
        return Err(Unjudgeable::Raises(
            "ValueError: ASCII and UNICODE flags are incompatible".to_owned(),
        ));
    }
    let mut out = String::new();
    emit(&node, &mut out);
    Ok(out)
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn next(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += 1;
        Some(c)
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// `branch ('|' branch)*`, up to a `)` or the end.
    fn alternation(&mut self, nest: usize) -> Result<Node, Unjudgeable> {
        if nest > MAX_NEST {
            return unsupported("groups nested too deep");
        }
        let mut branches = Vec::new();
        let mut first = nest == 0;
        loop {
            branches.push(self.branch(nest, first)?);
            first = false;
            if !self.eat('|') {
                break;
            }
        }
        Ok(if branches.len() == 1 {
            branches.pop().unwrap_or(Node::Empty)
        } else {
            Node::Alt(branches)
        })
    }

    /// One branch: items up to `|`, `)` or the end.
    fn branch(&mut self, nest: usize, first: bool) -> Result<Node, Unjudgeable> {
        let mut items: Vec<(Node, Kind)> = Vec::new();
        // Flags in force: the global flags (read at the start) with the
        // scoped ones of enclosing groups, kept on a stack by the caller.
        let flags = self.flags_now();
        let mut verbose = flags.verbose;
        while let Some(c) = self.peek() {
            if c == '|' || c == ')' {
                break;
            }
            self.pos += 1;
            if verbose {
                if matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c') {
                    continue;
                }
                if c == '#' {
                    // Python reads a backslash and the next character as one
                    // token, so an escaped newline does not end the comment.
                    while let Some(d) = self.next() {
                        if d == '\\' {
                            if self.next().is_none() {
                                return rejected("bad escape (end of pattern)");
                            }
                        } else if d == '\n' {
                            break;
                        }
                    }
                    continue;
                }
            }
            let flags = self.flags_now();
            match c {
                '\\' => {
                    let (node, kind) = self.escape(flags)?;
                    items.push((node, kind));
                }
                '[' => {
                    let set = self.class(flags)?;
                    items.push((Node::Set(set), Kind::Atom));
                }
                '.' => {
                    let set = if flags.dot_all {
                        Ascii::ALL
                    } else {
                        Ascii::ALL.complement().with(b'\n').complement()
                    };
                    items.push((Node::Set(set), Kind::Atom));
                }
                '^' => items.push((Node::Start, Kind::At)),
                '$' => items.push((Node::End, Kind::At)),
                '*' | '+' | '?' | '{' => {
                    let (min, max) = match c {
                        '*' => (0, None),
                        '+' => (1, None),
                        '?' => (0, Some(1)),
                        _ => match self.braces()? {
                            Some(bounds) => bounds,
                            None => {
                                items.push((Node::Set(char_set('{' as u32, flags)), Kind::Atom));
                                continue;
                            }
                        },
                    };
                    let Some((last, kind)) = items.pop() else {
                        return rejected("nothing to repeat");
                    };
                    match kind {
                        Kind::At => return rejected("nothing to repeat"),
                        Kind::Repeat => return rejected("multiple repeat"),
                        Kind::Atom | Kind::Group => {}
                    }
                    if self.eat('+') {
                        return unsupported("possessive quantifier");
                    }
                    // Lazy and greedy find the same matches.
                    self.eat('?');
                    items.push((Node::Repeat(Box::new(last), min, max), Kind::Repeat));
                }
                '(' => match self.group(nest, first && items.is_empty())? {
                    GroupResult::Node(node) => items.push((node, Kind::Group)),
                    GroupResult::Nothing => {}
                    GroupResult::GlobalFlags => verbose = self.global.verbose,
                },
                other => items.push((Node::Set(char_set(other as u32, flags)), Kind::Atom)),
            }
        }
        Ok(match items.len() {
            0 => Node::Empty,
            1 => items.pop().map(|(n, _)| n).unwrap_or(Node::Empty),
            _ => Node::Concat(items.into_iter().map(|(n, _)| n).collect()),
        })
    }

    fn flags_now(&self) -> Flags {
        self.scope.last().copied().unwrap_or(self.global)
    }

    /// `{m,n}` after the `{`: `Some(bounds)`, or `None` when it is a literal `{`.
    fn braces(&mut self) -> Result<Option<(u64, Option<u64>)>, Unjudgeable> {
        let start = self.pos;
        if self.peek() == Some('}') {
            return Ok(None);
        }
        let lo = self.number();
        let (hi, comma) = if self.eat(',') {
            (self.number(), true)
        } else {
            (lo.clone(), false)
        };
        if !self.eat('}') {
            self.pos = start;
            return Ok(None);
        }
        let parse = |digits: &str| -> Result<Option<u64>, Unjudgeable> {
            if digits.is_empty() {
                return Ok(None);
            }
            let trimmed = digits.trim_start_matches('0');
            if trimmed.len() > 12 {
                return Err(Unjudgeable::Raises(
                    "OverflowError: the repetition number is too large".to_owned(),
                ));
            }
            let n: u64 = trimmed.parse().unwrap_or(0);
            if n >= PY_MAXREPEAT {
                return Err(Unjudgeable::Raises(
                    "OverflowError: the repetition number is too large".to_owned(),
                ));
            }
            Ok(Some(n))
        };
        let min = parse(&lo)?.unwrap_or(0);
        let max = parse(&hi)?;
        let _ = comma;
        if let Some(max) = max
            && max < min
        {
            return rejected("min repeat greater than max repeat");
        }
        Ok(Some((min, max)))
    }

    fn number(&mut self) -> String {
        let mut s = String::new();
        while let Some(c) = self.peek()
            && c.is_ascii_digit()
        {
            s.push(c);
            self.pos += 1;
        }
        s
    }

    /// An escape outside a class (after the backslash).
    fn escape(&mut self, flags: Flags) -> Result<(Node, Kind), Unjudgeable> {
        let Some(c) = self.next() else {
            return rejected("bad escape (end of pattern)");
        };
        let atom = |set: Ascii| Ok((Node::Set(set), Kind::Atom));
        match c {
            'A' => Ok((Node::Start, Kind::At)),
            'Z' => Ok((Node::End, Kind::At)),
            'b' => Ok((Node::WordBoundary, Kind::At)),
            'B' => Ok((Node::NotWordBoundary, Kind::At)),
            'd' => atom(digits()),
            'D' => atom(digits().complement()),
            'w' => atom(word()),
            'W' => atom(word().complement()),
            's' => atom(space(flags)),
            'S' => atom(space(flags).complement()),
            '1'..='9' => {
                // Three octal digits are an octal escape; anything else a
                // group reference.
                let d2 = self.peek();
                let d3 = self.chars.get(self.pos + 1).copied();
                let octal = |d: Option<char>| d.is_some_and(|d| ('0'..='7').contains(&d));
                if ('0'..='7').contains(&c) && octal(d2) && octal(d3) {
                    self.pos += 2;
                    let text: String = [c, d2.unwrap_or('0'), d3.unwrap_or('0')].iter().collect();
                    let value = u32::from_str_radix(&text, 8).unwrap_or(u32::MAX);
                    if value > 0o377 {
                        return rejected("octal escape value outside of range 0-0o377");
                    }
                    return atom(char_set(value, flags));
                }
                let mut group = c.to_digit(10).unwrap_or(0) as usize;
                if let Some(d) = d2.and_then(|d| d.to_digit(10)) {
                    self.pos += 1;
                    group = group * 10 + d as usize;
                }
                if self.closed.contains(&group) {
                    unsupported("backreference")
                } else {
                    rejected("invalid group reference")
                }
            }
            _ => {
                let value = self.common_escape(c)?;
                atom(char_set(value, flags))
            }
        }
    }

    /// Escapes with the same meaning inside and outside a class (`c` follows
    /// the backslash): the code point.
    fn common_escape(&mut self, c: char) -> Result<u32, Unjudgeable> {
        Ok(match c {
            'a' => 7,
            'f' => 0x0c,
            'n' => 0x0a,
            'r' => 0x0d,
            't' => 0x09,
            'v' => 0x0b,
            '\\' => '\\' as u32,
            'x' => self.hex(2)?,
            'u' => self.hex(4)?,
            'U' => {
                let v = self.hex(8)?;
                if v > 0x10_ffff {
                    return rejected("bad escape \\U");
                }
                v
            }
            'N' => return unsupported("named unicode escape"),
            '0' => {
                let mut text = String::from("0");
                for _ in 0..2 {
                    match self.peek() {
                        Some(d @ '0'..='7') => {
                            text.push(d);
                            self.pos += 1;
                        }
                        _ => break,
                    }
                }
                u32::from_str_radix(&text, 8).unwrap_or(0)
            }
            c if c.is_ascii_alphabetic() => return rejected("bad escape"),
            c => c as u32,
        })
    }

    fn hex(&mut self, n: usize) -> Result<u32, Unjudgeable> {
        let mut value = 0u32;
        for _ in 0..n {
            match self.peek().and_then(|c| c.to_digit(16)) {
                Some(d) => {
                    value = value.wrapping_mul(16).wrapping_add(d);
                    self.pos += 1;
                }
                None => return rejected("incomplete escape"),
            }
        }
        Ok(value)
    }

    /// A class member: a code point, or a category set.
    fn class_member(&mut self, c: char, flags: Flags) -> Result<Member, Unjudgeable> {
        if c != '\\' {
            return Ok(Member::Char(c as u32));
        }
        let Some(e) = self.next() else {
            return rejected("unterminated character set");
        };
        Ok(match e {
            'b' => Member::Char(8),
            'd' => Member::Set(digits()),
            'D' => Member::Set(digits().complement()),
            'w' => Member::Set(word()),
            'W' => Member::Set(word().complement()),
            's' => Member::Set(space(flags)),
            'S' => Member::Set(space(flags).complement()),
            '1'..='7' => {
                let mut text = String::from(e);
                for _ in 0..2 {
                    match self.peek() {
                        Some(d @ '0'..='7') => {
                            text.push(d);
                            self.pos += 1;
                        }
                        _ => break,
                    }
                }
                let value = u32::from_str_radix(&text, 8).unwrap_or(u32::MAX);
                if value > 0o377 {
                    return rejected("octal escape value outside of range 0-0o377");
                }
                Member::Char(value)
            }
            '8' | '9' => return rejected("bad escape"),
            other => Member::Char(self.common_escape(other)?),
        })
    }

    /// A class, after the `[`.
    fn class(&mut self, flags: Flags) -> Result<Ascii, Unjudgeable> {
        let negate = self.eat('^');
        let mut set = Ascii::default();
        let mut first = true;
        loop {
            let Some(c) = self.next() else {
                return rejected("unterminated character set");
            };
            if c == ']' && !first {
                break;
            }
            first = false;
            let lo = self.class_member(c, flags)?;
            if self.eat('-') {
                let Some(d) = self.next() else {
                    return rejected("unterminated character set");
                };
                if d == ']' {
                    set = set.union(lo.set(flags)).union(char_set('-' as u32, flags));
                    break;
                }
                let hi = self.class_member(d, flags)?;
                let (Member::Char(lo), Member::Char(hi)) = (lo, hi) else {
                    return rejected("bad character range");
                };
                if hi < lo {
                    return rejected("bad character range");
                }
                set = set.union(range_set(lo, hi, flags)?);
            } else {
                set = set.union(lo.set(flags));
            }
        }
        Ok(if negate { set.complement() } else { set })
    }

    /// A group, after the `(`.
    fn group(&mut self, nest: usize, at_start: bool) -> Result<GroupResult, Unjudgeable> {
        let mut scoped: Option<Flags> = None;
        let mut capture = true;
        if self.eat('?') {
            capture = false;
            let Some(c) = self.next() else {
                return rejected("unexpected end of pattern");
            };
            match c {
                'P' => {
                    if self.eat('<') {
                        let mut name = String::new();
                        loop {
                            match self.next() {
                                None => return rejected("missing >, unterminated name"),
                                Some('>') => break,
                                Some(ch) => name.push(ch),
                            }
                        }
                        if name.is_empty() {
                            return rejected("missing group name");
                        }
                        let ascii_identifier = name
                            .chars()
                            .next()
                            .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
                            && name
                                .chars()
                                .all(|ch| ch.is_ascii_alphanumeric() || ch == '_');
                        if !ascii_identifier {
                            if name.is_ascii() {
                                return rejected("bad character in group name");
                            }
                            return unsupported("non-ascii group name");
                        }
                        if self.names.contains(&name) {
                            return rejected("redefinition of group name");
                        }
                        self.names.push(name);
                        capture = true;
                    } else if self.eat('=') {
                        return unsupported("backreference");
                    } else {
                        return rejected("unknown extension ?P");
                    }
                }
                ':' => {}
                '#' => {
                    loop {
                        match self.next() {
                            None => return rejected("missing ), unterminated comment"),
                            Some(')') => break,
                            // A backslash and the next character are one
                            // token: `\)` does not end the comment.
                            Some('\\') => {
                                if self.next().is_none() {
                                    return rejected("bad escape (end of pattern)");
                                }
                            }
                            Some(_) => {}
                        }
                    }
                    return Ok(GroupResult::Nothing);
                }
                '=' | '!' => return unsupported("lookahead"),
                '<' => {
                    return match self.next() {
                        Some('=' | '!') => unsupported("lookbehind"),
                        _ => rejected("unknown extension ?<"),
                    };
                }
                '>' => return unsupported("atomic group"),
                '(' => return unsupported("conditional group"),
                c if c == '-' || "iLmsxatu".contains(c) => {
                    let (add, del, global) = self.inline_flags(c)?;
                    if global {
                        if !at_start {
                            return rejected("global flags not at the start of the expression");
                        }
                        for f in add {
                            match f {
                                Flag::I => self.global.ignore_case = true,
                                Flag::M => {}
                                Flag::S => self.global.dot_all = true,
                                Flag::X => self.global.verbose = true,
                                Flag::A => {
                                    self.global.ascii = true;
                                    self.global_ascii = true;
                                }
                                Flag::U => {
                                    self.global.unicode = true;
                                    self.global_unicode = true;
                                }
                            }
                        }
                        return Ok(GroupResult::GlobalFlags);
                    }
                    let mut f = self.flags_now();
                    if add.iter().any(|f| matches!(f, Flag::A | Flag::U)) {
                        f.ascii = false;
                        f.unicode = false;
                    }
                    for flag in add {
                        set_flag(&mut f, flag, true);
                    }
                    for flag in del {
                        set_flag(&mut f, flag, false);
                    }
                    scoped = Some(f);
                }
                _ => return rejected("unknown extension"),
            }
        }
        let number = if capture {
            self.groups += 1;
            Some(self.groups)
        } else {
            None
        };
        let f = scoped.unwrap_or_else(|| self.flags_now());
        self.scope.push(f);
        let inner = self.alternation(nest + 1);
        self.scope.pop();
        let inner = inner?;
        if !self.eat(')') {
            return rejected("missing ), unterminated subpattern");
        }
        if let Some(n) = number {
            self.closed.push(n);
        }
        Ok(GroupResult::Node(inner))
    }

    /// Inline flags after `(?` (first letter `c`): (added, removed, global).
    fn inline_flags(&mut self, mut c: char) -> Result<(Vec<Flag>, Vec<Flag>, bool), Unjudgeable> {
        let mut add = Vec::new();
        let mut del = Vec::new();
        let letter = |c: char| -> Result<Flag, Unjudgeable> {
            match c {
                'i' => Ok(Flag::I),
                'm' => Ok(Flag::M),
                's' => Ok(Flag::S),
                'x' => Ok(Flag::X),
                'a' => Ok(Flag::A),
                'u' => Ok(Flag::U),
                'L' => rejected("bad inline flags: cannot use 'L' flag with a str pattern"),
                't' => unsupported("template flag"),
                c if c.is_alphabetic() => rejected("unknown flag"),
                _ => rejected("missing -, : or )"),
            }
        };
        if c != '-' {
            loop {
                let f = letter(c)?;
                if matches!(f, Flag::A | Flag::U)
                    && add
                        .iter()
                        .any(|g| matches!(g, Flag::A | Flag::U) && *g != f)
                {
                    return rejected("bad inline flags: flags 'a', 'u' and 'L' are incompatible");
                }
                add.push(f);
                match self.next() {
                    None => return rejected("missing -, : or )"),
                    Some(n @ (')' | '-' | ':')) => {
                        c = n;
                        break;
                    }
                    Some(n) => c = n,
                }
            }
            if c == ')' {
                return Ok((add, del, true));
            }
        }
        if c == '-' {
            let Some(mut n) = self.next() else {
                return rejected("missing flag");
            };
            if !"iLmsxatu".contains(n) {
                return rejected("missing flag");
            }
            loop {
                let f = letter(n)?;
                if matches!(f, Flag::A | Flag::U) {
                    return rejected("bad inline flags: cannot turn off flags 'a', 'u' and 'L'");
                }
                del.push(f);
                match self.next() {
                    None => return rejected("missing :"),
                    Some(':') => break,
                    Some(m) => n = m,
                }
            }
        }
        if add.iter().any(|f| del.contains(f)) {
            return rejected("bad inline flags: flag turned on and off");
        }
        Ok((add, del, false))
    }
}

fn set_flag(f: &mut Flags, flag: Flag, on: bool) {
    match flag {
        Flag::I => f.ignore_case = on,
        Flag::M => {}
        Flag::S => f.dot_all = on,
        Flag::X => f.verbose = on,
        Flag::A => f.ascii = on,
        Flag::U => f.unicode = on,
    }
}

enum GroupResult {
    Node(Node),
    Nothing,
    GlobalFlags,
}

#[derive(Debug, Clone, Copy)]
enum Member {
    Char(u32),
    Set(Ascii),
}

impl Member {
    fn set(self, flags: Flags) -> Ascii {
        match self {
            Member::Char(c) => char_set(c, flags),
            Member::Set(s) => s,
        }
    }
}

/// Writes a node in `regex-automata` syntax.
fn emit(node: &Node, out: &mut String) {
    match node {
        Node::Empty => out.push_str("(?:)"),
        Node::Set(set) => emit_set(*set, out),
        Node::Start => out.push_str(r"\A"),
        Node::End => out.push_str(r"\z"),
        Node::WordBoundary => out.push_str(r"\b"),
        Node::NotWordBoundary => out.push_str(r"\B"),
        Node::Concat(items) => {
            for item in items {
                emit(item, out);
            }
        }
        Node::Alt(branches) => {
            out.push_str("(?:");
            for (i, b) in branches.iter().enumerate() {
                if i > 0 {
                    out.push('|');
                }
                emit(b, out);
            }
            out.push(')');
        }
        Node::Repeat(inner, min, max) => {
            out.push_str("(?:");
            emit(inner, out);
            match clamp(*min, *max) {
                (min, Some(max)) => out.push_str(&format!("){{{min},{max}}}")),
                (min, None) => out.push_str(&format!("){{{min},}}")),
            }
        }
    }
}

/// Shortens `x{min,max}` to an equivalent repetition on strings of at most
/// `L = MAX_SEARCHED_LEN` characters. At most `L` iterations of a match
/// consume characters, and an iteration that consumes none only asserts
/// something about its position, which a repeat of it at the same position
/// asserts again: so a match never needs more than `2L + 1` iterations, and
/// a match of at least `L + 1` iterations holds an empty one, which can be
/// repeated up to any larger count. An unbounded maximum stays unbounded
/// (the engine needs no copies for it).
fn clamp(min: u64, max: Option<u64>) -> (u64, Option<u64>) {
    let l = MAX_SEARCHED_LEN as u64;
    let min = min.min(l + 1);
    (min, max.map(|m| m.min(2 * l + 1).max(min)))
}

fn emit_set(set: Ascii, out: &mut String) {
    if set.0 == 0 {
        out.push_str(r"[^\x00-\x{10FFFF}]");
        return;
    }
    out.push('[');
    let mut c = 0u8;
    while c < 128 {
        if set.contains(c) {
            let start = c;
            while c < 127 && set.contains(c + 1) {
                c += 1;
            }
            out.push_str(&format!(r"\x{{{start:02X}}}-\x{{{c:02X}}}"));
        }
        c += 1;
    }
    out.push(']');
}

#[cfg(test)]
mod tests;
