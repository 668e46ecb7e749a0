//! The read-only view of a JSON document the gate judges.
//!
//! The engine (walker, proofs, value judgements) is generic over [`Node`],
//! so it judges a `serde_json::Value` (the public API, monomorphised, no
//! added cost) and the batch path's arena tree ([`crate::arena`]) with the
//! same code. An implementation must present a document exactly as a
//! `serde_json::Value` built from the same text would: an object's members
//! in serde_json's default `Map` order (sorted by key, bytewise), the last
//! of duplicate keys kept, numbers as `serde_json::Number`.

use serde_json::{Map, Number, Value};

/// One node of a JSON document, a cheap copyable handle.
pub(crate) trait Node<'a>: Copy + 'a {
    /// An object's members.
    type Obj: Obj<'a, Node = Self>;
    /// An array's elements.
    type Arr: Arr<'a, Node = Self>;

    /// What kind of JSON value the node is.
    fn view(self) -> View<'a, Self>;

    /// An identity, distinct for every node of one document (a memo key).
    fn id(self) -> usize;

    /// A `true` schema belonging to the same document space (its identity
    /// is never used as a memo key).
    fn any_schema(self) -> Self;

    /// The members, when the node is an object.
    fn as_object(self) -> Option<Self::Obj> {
        match self.view() {
            View::Object(m) => Some(m),
            _ => None,
        }
    }

    /// The elements, when the node is an array.
    fn as_array(self) -> Option<Self::Arr> {
        match self.view() {
            View::Array(a) => Some(a),
            _ => None,
        }
    }

    /// The text, when the node is a string.
    fn as_str(self) -> Option<&'a str> {
        match self.view() {
            View::String(s) => Some(s),
            _ => None,
        }
    }

    /// True for JSON `true` or `false` equal to `b` (never a number: JSON
    /// equality, as `Value`'s).
    fn is_bool(self, b: bool) -> bool {
        matches!(self.view(), View::Bool(x) if x == b)
    }

    /// True for JSON `null`.
    fn is_null(self) -> bool {
        matches!(self.view(), View::Null)
    }
}

/// The kind of a node.
pub(crate) enum View<'a, N: Node<'a>> {
    Null,
    Bool(bool),
    // Read by no judgement today; kept so the view is the whole value.
    #[allow(dead_code, reason = "numbers are not judged, only carried")]
    Number(&'a Number),
    String(&'a str),
    Array(N::Arr),
    Object(N::Obj),
}

/// An object's members, in serde_json's default `Map` order.
pub(crate) trait Obj<'a>: Copy {
    /// The node type of the document.
    type Node: Node<'a>;
    /// Members in key order.
    type Iter: Iterator<Item = (&'a str, Self::Node)>;

    /// The members, sorted by key.
    fn iter(self) -> Self::Iter;
    /// The member under `key`.
    fn get(self, key: &str) -> Option<Self::Node>;
    /// True when there is no member.
    fn is_empty(self) -> bool;

    /// True when a member is under `key`.
    fn contains_key(self, key: &str) -> bool {
        self.get(key).is_some()
    }
}

/// An array's elements.
pub(crate) trait Arr<'a>: Copy {
    /// The node type of the document.
    type Node: Node<'a>;
    /// Elements in order.
    type Iter: Iterator<Item = Self::Node>;

    /// The elements in order.
    fn iter(self) -> Self::Iter;
    /// The element at `index`.
    fn get(self, index: usize) -> Option<Self::Node>;
    /// True when there is no element.
    fn is_empty(self) -> bool;
}

/// The `true` schema a `&Value` document lends.
static TRUE: Value = Value::Bool(true);

impl<'a> Node<'a> for &'a Value {
    type Obj = &'a Map<String, Value>;
    type Arr = &'a [Value];

    #[inline]
    fn view(self) -> View<'a, Self> {
        match self {
            Value::Null => View::Null,
            Value::Bool(b) => View::Bool(*b),
            Value::Number(n) => View::Number(n),
            Value::String(s) => View::String(s),
            Value::Array(items) => View::Array(items.as_slice()),
            Value::Object(m) => View::Object(m),
        }
    }

    #[inline]
    fn id(self) -> usize {
        std::ptr::from_ref(self) as usize
    }

    fn any_schema(self) -> Self {
        &TRUE
    }
}

/// A member of a `Map` as the view hands it out.
type MemberOf<'a> = fn((&'a String, &'a Value)) -> (&'a str, &'a Value);

impl<'a> Obj<'a> for &'a Map<String, Value> {
    type Node = &'a Value;
    type Iter = std::iter::Map<serde_json::map::Iter<'a>, MemberOf<'a>>;

    #[inline]
    fn iter(self) -> Self::Iter {
        Map::iter(self).map(|(k, v)| (k.as_str(), v))
    }

    #[inline]
    fn get(self, key: &str) -> Option<&'a Value> {
        Map::get(self, key)
    }

    #[inline]
    fn is_empty(self) -> bool {
        Map::is_empty(self)
    }

    #[inline]
    fn contains_key(self, key: &str) -> bool {
        Map::contains_key(self, key)
    }
}

impl<'a> Arr<'a> for &'a [Value] {
    type Node = &'a Value;
    type Iter = std::slice::Iter<'a, Value>;

    #[inline]
    fn iter(self) -> Self::Iter {
        <[Value]>::iter(self)
    }

    #[inline]
    fn get(self, index: usize) -> Option<&'a Value> {
        <[Value]>::get(self, index)
    }

    #[inline]
    fn is_empty(self) -> bool {
        <[Value]>::is_empty(self)
    }
}
