//! A JSON document in one flat arena, borrowed from its text: what the batch
//! path judges instead of building a `serde_json::Value`.
//!
//! Built by a serde visitor driven by serde_json's own tokenizer, so a text
//! is accepted or rejected, with the same error, exactly as a `Value` parse
//! accepts or rejects it (strings unescaped and checked, surrogates paired,
//! numbers read as `serde_json::Number` with the same u64/i64/f64 choice,
//! any depth through `serde_stacker`). Nodes sit in one `Vec`, an array's
//! elements and an object's members as ranges of two more; a string without
//! escapes borrows the text. An object's members are sorted by key and the
//! last of duplicate keys kept, so iterating and looking up a member give
//! exactly what serde_json's default (`BTreeMap`-backed) `Map` gives. An
//! object key is always an ordinary key (with serde_json's `raw_value`
//! feature a `Value` would read an object keyed
//! `$serde_json::private::RawValue` as the JSON text in its string).
//!
//! Most records are plain JSON (no escapes, no signs, fractions or
//! exponents, shallow): [`Plain`] reads those straight into the arena and
//! gives up on anything else, which is then read by serde_json.
//!
//! Dropping an arena never recurses, however deep the document, and its
//! buffers are reused from record to record ([`Arena::recycle`]).

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use crate::node::{Arr, Node, Obj, View};

mod plain;
pub(crate) use plain::{Plain, first_special};

/// A string: borrowed from the text, or unescaped into the arena's
/// `strings` (at `start..end`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Str<'de> {
    Borrowed(&'de str),
    Owned(usize, usize),
}

/// One node (no drop glue: emptying an arena costs nothing per node).
#[derive(Debug)]
enum Slot<'de> {
    Null,
    Bool(bool),
    Number(Number),
    String(Str<'de>),
    /// Elements: `items[start..start + len]`.
    Array {
        start: usize,
        len: usize,
    },
    /// Members: `members[start..start + len]`, sorted by key, keys unique.
    Object {
        start: usize,
        len: usize,
    },
}

/// The node every arena holds first: the `true` schema.
const TRUE_NODE: usize = 0;

/// JSON documents, one after another, in flat buffers (see the module docs).
#[derive(Debug)]
pub(crate) struct Arena<'de> {
    nodes: Vec<Slot<'de>>,
    members: Vec<(Str<'de>, usize)>,
    items: Vec<usize>,
    /// Strings that had escapes, unescaped.
    strings: String,
    /// Members of the objects being read (innermost last).
    open_members: Vec<(Str<'de>, usize)>,
    /// Elements of the arrays being read (innermost last).
    open_items: Vec<usize>,
}

impl Default for Arena<'_> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'de> Arena<'de> {
    /// An empty arena.
    pub(crate) fn new() -> Self {
        Self {
            nodes: vec![Slot::Bool(true)],
            members: Vec::new(),
            items: Vec::new(),
            strings: String::new(),
            open_members: Vec::new(),
            open_items: Vec::new(),
        }
    }

    /// Empties the arena, keeping its buffers.
    pub(crate) fn reset(&mut self) {
        self.nodes.clear();
        self.nodes.push(Slot::Bool(true));
        self.members.clear();
        self.items.clear();
        self.strings.clear();
        self.open_members.clear();
        self.open_items.clear();
    }

    /// The arena emptied, its buffers kept, for text of another lifetime.
    pub(crate) fn recycle<'t>(self) -> Arena<'t> {
        Arena {
            nodes: reuse(self.nodes),
            members: reuse(self.members),
            items: reuse(self.items),
            strings: self.strings,
            open_members: reuse(self.open_members),
            open_items: reuse(self.open_items),
        }
        .reset_into()
    }

    fn reset_into(mut self) -> Self {
        self.reset();
        self
    }

    /// A seed that reads one JSON value into the arena and answers its index.
    pub(crate) fn seed(&mut self) -> NodeSeed<'_, 'de> {
        NodeSeed { arena: self }
    }

    /// The node at `index` (an index the arena answered).
    pub(crate) fn node(&self, index: usize) -> ArenaNode<'_, 'de> {
        ArenaNode { arena: self, index }
    }

    fn push(&mut self, slot: Slot<'de>) -> usize {
        self.nodes.push(slot);
        self.nodes.len() - 1
    }

    /// Ends the object whose members were read from `open_members[base..]`:
    /// sorted by key, the last of duplicate keys kept.
    fn close_object(&mut self, base: usize) -> usize {
        let Arena {
            members,
            open_members,
            strings,
            ..
        } = self;
        let strings = strings.as_str();
        let own = open_members.get_mut(base..).unwrap_or_default();
        let start = members.len();
        // Keys already strictly increasing need neither sorting nor
        // deduplication (one comparison per member).
        let increasing = own
            .windows(2)
            .all(|w| key_cmp(text(strings, w[0].0), text(strings, w[1].0)).is_lt());
        if increasing {
            members.extend_from_slice(own);
        } else {
            // Stable: among duplicate keys the last read stays last.
            own.sort_by(|a, b| key_cmp(text(strings, a.0), text(strings, b.0)));
            let mut read = own.iter().peekable();
            while let Some(member) = read.next() {
                // The last of duplicate keys counts, as in a `Value`.
                let key = text(strings, member.0);
                if read.peek().is_some_and(|next| text(strings, next.0) == key) {
                    continue;
                }
                members.push(*member);
            }
        }
        open_members.truncate(base);
        let len = members.len() - start;
        self.push(Slot::Object { start, len })
    }

    /// Ends the array whose elements were read from `open_items[base..]`.
    fn close_array(&mut self, base: usize) -> usize {
        let start = self.items.len();
        let Arena {
            items, open_items, ..
        } = self;
        items.extend(open_items.drain(base..));
        let len = items.len() - start;
        self.push(Slot::Array { start, len })
    }

    /// Where the arena ends now, to [`Self::rewind`] to.
    pub(crate) fn mark(&self) -> Mark {
        Mark {
            nodes: self.nodes.len(),
            members: self.members.len(),
            items: self.items.len(),
        }
    }

    /// Forgets every node read since `mark` (the read must have completed).
    pub(crate) fn rewind(&mut self, mark: Mark) {
        self.nodes.truncate(mark.nodes);
        self.members.truncate(mark.members);
        self.items.truncate(mark.items);
    }

    /// Keeps an unescaped string.
    fn own(&mut self, s: &str) -> Str<'de> {
        let start = self.strings.len();
        self.strings.push_str(s);
        Str::Owned(start, self.strings.len())
    }
}

/// A position of an [`Arena`] ([`Arena::mark`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mark {
    nodes: usize,
    members: usize,
    items: usize,
}

/// `str` order (bytewise, as `Map` sorts keys), deciding most pairs of
/// keys by their first byte without a call.
#[inline]
fn key_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    match (a.as_bytes().first(), b.as_bytes().first()) {
        (Some(x), Some(y)) if x != y => x.cmp(y),
        _ => a.cmp(b),
    }
}

/// The text of a string kept in `strings`.
#[inline]
fn text<'a, 'de: 'a>(strings: &'a str, s: Str<'de>) -> &'a str {
    match s {
        Str::Borrowed(s) => s,
        Str::Owned(start, end) => strings.get(start..end).unwrap_or_default(),
    }
}

const _: () = assert!(!std::mem::needs_drop::<Slot<'static>>());

/// An emptied `Vec` whose allocation is kept for elements of another
/// lifetime (the same size and alignment, so the collection reuses it).
fn reuse<T, U>(mut v: Vec<T>) -> Vec<U> {
    v.clear();
    v.into_iter().filter_map(|_| None).collect()
}

/// Reads one JSON value into an [`Arena`]; answers its index.
pub(crate) struct NodeSeed<'s, 'de> {
    arena: &'s mut Arena<'de>,
}

impl<'de> DeserializeSeed<'de> for NodeSeed<'_, 'de> {
    type Value = usize;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<usize, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for NodeSeed<'_, 'de> {
    type Value = usize;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a json value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<usize, A::Error> {
        let arena = self.arena;
        let base = arena.open_members.len();
        while let Some(key) = map.next_key_seed(KeySeed { arena: &mut *arena })? {
            let child = map.next_value_seed(NodeSeed { arena: &mut *arena })?;
            arena.open_members.push((key, child));
        }
        Ok(arena.close_object(base))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<usize, A::Error> {
        let arena = self.arena;
        let base = arena.open_items.len();
        while let Some(item) = seq.next_element_seed(NodeSeed { arena: &mut *arena })? {
            arena.open_items.push(item);
        }
        Ok(arena.close_array(base))
    }

    fn visit_bool<E: de::Error>(self, b: bool) -> Result<usize, E> {
        Ok(self.arena.push(Slot::Bool(b)))
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<usize, E> {
        Ok(self.arena.push(Slot::Number(n.into())))
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<usize, E> {
        Ok(self.arena.push(Slot::Number(n.into())))
    }

    fn visit_f64<E: de::Error>(self, n: f64) -> Result<usize, E> {
        // JSON text has no NaN or infinity; `Value` reads one as null too.
        let slot = Number::from_f64(n).map_or(Slot::Null, Slot::Number);
        Ok(self.arena.push(slot))
    }

    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<usize, E> {
        Ok(self.arena.push(Slot::String(Str::Borrowed(s))))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<usize, E> {
        let s = self.arena.own(s);
        Ok(self.arena.push(Slot::String(s)))
    }

    fn visit_unit<E: de::Error>(self) -> Result<usize, E> {
        Ok(self.arena.push(Slot::Null))
    }

    fn visit_none<E: de::Error>(self) -> Result<usize, E> {
        Ok(self.arena.push(Slot::Null))
    }
}

/// Reads an object key as written (borrowed when it has no escape).
struct KeySeed<'s, 'de> {
    arena: &'s mut Arena<'de>,
}

impl<'de> DeserializeSeed<'de> for KeySeed<'_, 'de> {
    type Value = Str<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed<'_, 'de> {
    type Value = Str<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key")
    }

    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok(Str::Borrowed(s))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
        Ok(self.arena.own(s))
    }
}

/// A node of an [`Arena`], as the engine reads it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ArenaNode<'a, 'de> {
    arena: &'a Arena<'de>,
    index: usize,
}

impl<'a, 'de: 'a> ArenaNode<'a, 'de> {
    /// The node as a `Value`, for a small one (an echoed id): the caller
    /// bounds its nesting first ([`Self::nests_deeper_than`]).
    pub(crate) fn to_value(self) -> Value {
        match self.view() {
            View::Null => Value::Null,
            View::Bool(b) => Value::Bool(b),
            View::Number(n) => Value::Number(n.clone()),
            View::String(s) => Value::String(s.to_owned()),
            View::Array(items) => Value::Array(items.iter().map(Self::to_value).collect()),
            View::Object(m) => Value::Object(
                m.iter()
                    .map(|(k, v)| (k.to_owned(), v.to_value()))
                    .collect::<Map<String, Value>>(),
            ),
        }
    }

    /// True when the node nests deeper than `limit` (checked without recursion).
    pub(crate) fn nests_deeper_than(self, limit: usize) -> bool {
        let mut stack = vec![(self, 0usize)];
        while let Some((node, depth)) = stack.pop() {
            if depth > limit {
                return true;
            }
            match node.view() {
                View::Array(items) => stack.extend(items.iter().map(|i| (i, depth + 1))),
                View::Object(m) => stack.extend(m.iter().map(|(_, v)| (v, depth + 1))),
                _ => {}
            }
        }
        false
    }
}

impl<'a, 'de: 'a> Node<'a> for ArenaNode<'a, 'de> {
    type Obj = ArenaObject<'a, 'de>;
    type Arr = ArenaArray<'a, 'de>;

    #[inline]
    fn view(self) -> View<'a, Self> {
        let arena = self.arena;
        match arena.nodes.get(self.index) {
            // Every index the arena hands out is in range.
            None | Some(Slot::Null) => View::Null,
            Some(Slot::Bool(b)) => View::Bool(*b),
            Some(Slot::Number(n)) => View::Number(n),
            Some(Slot::String(s)) => View::String(text(&arena.strings, *s)),
            Some(Slot::Array { start, len }) => View::Array(ArenaArray {
                arena,
                items: arena.items.get(*start..start + len).unwrap_or_default(),
            }),
            Some(Slot::Object { start, len }) => View::Object(ArenaObject {
                arena,
                members: arena.members.get(*start..start + len).unwrap_or_default(),
            }),
        }
    }

    #[inline]
    fn id(self) -> usize {
        self.index
    }

    fn any_schema(self) -> Self {
        self.arena.node(TRUE_NODE)
    }
}

/// An object's members in an [`Arena`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct ArenaObject<'a, 'de> {
    arena: &'a Arena<'de>,
    members: &'a [(Str<'de>, usize)],
}

/// The members of an [`ArenaObject`], in key order.
pub(crate) struct MemberIter<'a, 'de> {
    arena: &'a Arena<'de>,
    members: std::slice::Iter<'a, (Str<'de>, usize)>,
}

impl<'a, 'de> Iterator for MemberIter<'a, 'de> {
    type Item = (&'a str, ArenaNode<'a, 'de>);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.members
            .next()
            .map(|(k, i)| (text(&self.arena.strings, *k), self.arena.node(*i)))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.members.size_hint()
    }
}

impl<'a, 'de: 'a> Obj<'a> for ArenaObject<'a, 'de> {
    type Node = ArenaNode<'a, 'de>;
    type Iter = MemberIter<'a, 'de>;

    #[inline]
    fn iter(self) -> Self::Iter {
        MemberIter {
            arena: self.arena,
            members: self.members.iter(),
        }
    }

    #[inline]
    fn get(self, key: &str) -> Option<Self::Node> {
        let strings = self.arena.strings.as_str();
        // Keys are unique: a small object is scanned (a length decides most
        // keys), a large one searched.
        let found = if self.members.len() <= 12 {
            self.members.iter().find(|(k, _)| text(strings, *k) == key)
        } else {
            self.members
                .binary_search_by(|(k, _)| key_cmp(text(strings, *k), key))
                .ok()
                .and_then(|i| self.members.get(i))
        };
        found.map(|(_, v)| self.arena.node(*v))
    }

    #[inline]
    fn is_empty(self) -> bool {
        self.members.is_empty()
    }
}

/// An array's elements in an [`Arena`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct ArenaArray<'a, 'de> {
    arena: &'a Arena<'de>,
    items: &'a [usize],
}

/// The elements of an [`ArenaArray`].
pub(crate) struct ItemIter<'a, 'de> {
    arena: &'a Arena<'de>,
    items: std::slice::Iter<'a, usize>,
}

impl<'a, 'de> Iterator for ItemIter<'a, 'de> {
    type Item = ArenaNode<'a, 'de>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.items.next().map(|i| self.arena.node(*i))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.items.size_hint()
    }
}

impl<'a, 'de: 'a> Arr<'a> for ArenaArray<'a, 'de> {
    type Node = ArenaNode<'a, 'de>;
    type Iter = ItemIter<'a, 'de>;

    #[inline]
    fn iter(self) -> Self::Iter {
        ItemIter {
            arena: self.arena,
            items: self.items.iter(),
        }
    }

    #[inline]
    fn get(self, index: usize) -> Option<Self::Node> {
        self.items.get(index).map(|i| self.arena.node(*i))
    }

    #[inline]
    fn is_empty(self) -> bool {
        self.items.is_empty()
    }
}

#[cfg(test)]
mod tests;
