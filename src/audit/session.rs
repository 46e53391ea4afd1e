//! Which session a logged request belongs to, and the earlier request it should extend.
//!
//! The session key is a JSON pointer into the record (`/metadata/conversation`) or a name
//! looked up in the record's metadata, the request body and its headers. By default:
//! `metadata.session_id`, `user`, `prompt_cache_key`, `x-session-id`.
//!
//! A request without a session extends the recent session-less request (of the last
//! [`WINDOW`] without a session; never a session's, so a partitioned audit's fallback group
//! matches it alike) that shares the longest *leading* run with it: of messages first ([`message_affinity`]: equal
//! messages from the first on, in the server's view; where only the system message differs,
//! as a clock in it makes it, the run after it), then of tokens; the most recent wins a tie.
//! Equal messages elsewhere do not count (agents repeat the same retry message in many
//! conversations). A request sharing no leading message and under half of the other's
//! prompt tokens is a new conversation: it is compared with nothing.
//!
//! Memory is bounded: at most [`MAX_SESSIONS`] sessions are remembered (the least recently
//! used is forgotten, as a cache would evict it), plus a window of recent requests.

use super::doc::Doc;
use super::pointer::pointer;
use serde_json::Value as Json;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// A logged message as `input` keeps it: shared by a session's requests that repeat it.
type Message = Arc<Json>;

pub const MAX_SESSIONS: usize = 4096;
/// Recent session-less requests a session-less request is matched against; also the recent
/// requests (of any session) the prediction looks at.
pub const WINDOW: usize = 32;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionKey {
    Defaults,
    Pointer(String),
    Name(String),
}

impl SessionKey {
    pub fn parse(spec: Option<&str>) -> SessionKey {
        match spec {
            None => SessionKey::Defaults,
            Some(p) if p.starts_with('/') => SessionKey::Pointer(p.to_owned()),
            Some(name) => SessionKey::Name(name.to_owned()),
        }
    }

    /// The session of a record whose request body is `body`.
    pub fn find<D: Doc>(&self, record: &D, body: &D, metadata: Option<&D>) -> Option<String> {
        match self {
            SessionKey::Pointer(p) => pointer(record, p)
                .or_else(|| pointer(body, p))
                .and_then(as_key),
            SessionKey::Name(name) => by_name(name, record, body, metadata),
            SessionKey::Defaults => metadata
                .and_then(|m| m.get("session_id"))
                .and_then(as_key)
                .or_else(|| pointer(body, "/metadata/session_id").and_then(as_key))
                .or_else(|| {
                    ["user", "prompt_cache_key", "x-session-id"]
                        .iter()
                        .find_map(|n| by_name(n, record, body, metadata))
                }),
        }
    }
}

fn as_key<D: Doc>(value: &D) -> Option<String> {
    match &*value.json() {
        Json::String(s) if !s.is_empty() => Some(s.clone()),
        Json::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn by_name<D: Doc>(name: &str, record: &D, body: &D, metadata: Option<&D>) -> Option<String> {
    let header = |headers: Option<&D>| {
        headers?
            .json()
            .as_object()?
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .and_then(|(_, v)| as_key(v))
    };
    metadata
        .and_then(|m| m.get(name))
        .and_then(as_key)
        .or_else(|| body.get(name).and_then(as_key))
        .or_else(|| {
            pointer(body, "/metadata")
                .and_then(|m| m.get(name))
                .and_then(as_key)
        })
        .or_else(|| header(record.get("headers")))
        .or_else(|| header(metadata.and_then(|m| m.get("headers"))))
        .or_else(|| header(body.get("extra_headers")))
}

/// How many messages two requests share from the first on (a message a request took over
/// from the other is equal without a look).
pub fn leading_run(a: &[Message], b: &[Message]) -> usize {
    a.iter()
        .zip(b)
        .take_while(|(x, y)| Arc::ptr_eq(x, y) || same_json(x, y))
        .count()
}

/// `a == b`, taking each object's keys in order first: equal messages of two requests
/// usually have their keys in the same order, where `==` looks every key up by its hash.
pub fn same_json(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Object(x), Json::Object(y)) => {
            if x.len() != y.len() {
                return false;
            }
            for ((kx, vx), (ky, vy)) in x.iter().zip(y) {
                if kx != ky {
                    // Another order: as `==`.
                    return x == y;
                }
                // The key is at the same place in both (keys are unique): `==` compares these.
                if !same_json(vx, vy) {
                    return false;
                }
            }
            true
        }
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_json(a, b))
        }
        _ => a == b,
    }
}

/// How closely a request continues an earlier one, by messages: their leading run, then the
/// leading run after the first message where both start with a system message (a clock or
/// an id in the system prompt changes it on every request of a conversation).
pub fn message_affinity(earlier: &[Message], this: &[Message]) -> (usize, usize) {
    let leading = leading_run(earlier, this);
    let is_system = |m: Option<&Message>| {
        matches!(
            m.and_then(|m| m.get("role")).and_then(Json::as_str),
            Some("system" | "developer")
        )
    };
    let after_system = if leading == 0 && is_system(earlier.first()) && is_system(this.first()) {
        leading_run(&earlier[1..], &this[1..])
    } else {
        0
    };
    (leading, after_system)
}

/// A bounded map from session to the last request seen in it (least recently used out).
pub struct Sessions<T> {
    last: HashMap<String, (u64, T)>,
    order: VecDeque<(String, u64)>,
    tick: u64,
}

impl<T> Default for Sessions<T> {
    fn default() -> Self {
        Sessions {
            last: HashMap::new(),
            order: VecDeque::new(),
            tick: 0,
        }
    }
}

impl<T> Sessions<T> {
    pub fn get(&self, session: &str) -> Option<&T> {
        self.last.get(session).map(|(_, t)| t)
    }

    pub fn get_mut(&mut self, session: &str) -> Option<&mut T> {
        self.last.get_mut(session).map(|(_, t)| t)
    }

    /// Remembers `value` as the session's last; returns the session forgotten to make room.
    pub fn insert(&mut self, session: String, value: T) -> Option<(String, T)> {
        self.put(session, value);
        let mut forgotten = None;
        while self.last.len() > MAX_SESSIONS {
            let Some(oldest) = self.pop_oldest() else {
                break;
            };
            forgotten = Some(oldest);
        }
        self.compact();
        forgotten
    }

    pub fn len(&self) -> usize {
        self.last.len()
    }

    pub fn is_empty(&self) -> bool {
        self.last.is_empty()
    }

    /// Remembers `value` as the session's last, forgetting nothing; returns the value it
    /// replaces.
    fn put(&mut self, session: String, value: T) -> Option<T> {
        self.tick += 1;
        self.order.push_back((session.clone(), self.tick));
        self.last
            .insert(session, (self.tick, value))
            .map(|(_, before)| before)
    }

    /// Forgets the least recently used session.
    fn pop_oldest(&mut self) -> Option<(String, T)> {
        while let Some((key, tick)) = self.order.pop_front() {
            if self.last.get(&key).is_some_and(|(t, _)| *t == tick) {
                return self.last.remove_entry(&key).map(|(k, (_, t))| (k, t));
            }
        }
        None
    }

    /// Stale order entries (sessions seen again later) are dropped as they surface, and all
    /// at once when they pile up.
    fn compact(&mut self) {
        if self.order.len() > 4 * MAX_SESSIONS {
            let last = &self.last;
            self.order
                .retain(|(k, t)| last.get(k).is_some_and(|(tick, _)| tick == t));
        }
    }

    /// The sessions still remembered, in no order.
    pub fn into_values(self) -> impl Iterator<Item = T> {
        self.last.into_values().map(|(_, t)| t)
    }
}

/// Each session's last built request, kept for the session's next one (which takes over its
/// messages, template values and prompt, and encodes only what follows): within `budget`
/// bytes (as [`Kept::insert`] is told each weighs) and [`MAX_SESSIONS`] sessions, the least
/// recently used sessions forgotten first. What is let go waits in `gone` for the caller to
/// free (on the pool: freeing a request is real work).
pub struct Kept<T> {
    sessions: Sessions<(T, usize)>,
    bytes: usize,
    budget: usize,
    pub gone: Vec<T>,
}

impl<T> Kept<T> {
    pub fn new(budget: usize) -> Kept<T> {
        Kept {
            sessions: Sessions::default(),
            bytes: 0,
            budget,
            gone: Vec::new(),
        }
    }

    pub fn get(&self, session: &str) -> Option<&T> {
        self.sessions.get(session).map(|(t, _)| t)
    }

    /// The bytes the sessions remembered weigh.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// Remembers `value` (weighing `bytes`) as the session's last; then forgets the least
    /// recently used sessions (this one too, if it alone is over the budget) until both
    /// bounds hold.
    pub fn insert(&mut self, session: String, value: T, bytes: usize) {
        if let Some((before, weighed)) = self.sessions.put(session, (value, bytes)) {
            self.bytes -= weighed;
            self.gone.push(before);
        }
        self.bytes += bytes;
        while self.bytes > self.budget || self.sessions.len() > MAX_SESSIONS {
            let Some((_, (oldest, weighed))) = self.sessions.pop_oldest() else {
                break;
            };
            self.bytes -= weighed;
            self.gone.push(oldest);
        }
        self.sessions.compact();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn same_json_is_equality() {
        let values = [
            json!({"role": "user", "content": "a"}),
            json!({"content": "a", "role": "user"}),
            json!({"role": "user", "content": "b"}),
            json!({"role": "user", "content": "a", "name": "x"}),
            json!({"role": "user", "name": "a", "content": "x"}),
            json!([{"a": 1, "b": [1, 2]}, null]),
            json!([{"b": [1, 2], "a": 1}, null]),
            json!([{"b": [1, 2], "a": 1.0}, null]),
            json!([{"b": [2, 1], "a": 1}, null]),
            json!("a"),
            json!(1),
            json!({}),
            json!([]),
        ];
        for a in &values {
            for b in &values {
                assert_eq!(same_json(a, b), a == b, "{a} {b}");
            }
        }
    }

    #[test]
    fn default_keys_in_order() {
        let key = SessionKey::Defaults;
        let body = json!({"user": "u", "prompt_cache_key": "p"});
        assert_eq!(
            key.find(&json!({}), &body, Some(&json!({"session_id": "s"})))
                .as_deref(),
            Some("s")
        );
        assert_eq!(key.find(&json!({}), &body, None).as_deref(), Some("u"));
        let record = json!({"headers": {"X-Session-Id": "h"}});
        assert_eq!(key.find(&record, &json!({}), None).as_deref(), Some("h"));
        let pointer = SessionKey::parse(Some("/metadata/conv"));
        assert_eq!(
            pointer
                .find(&json!({"metadata": {"conv": 7}}), &body, None)
                .as_deref(),
            Some("7")
        );
    }

    #[test]
    fn the_leading_run_stops_at_the_first_difference() {
        let m = |t: &str| Arc::new(json!({"role": "user", "content": t}));
        assert_eq!(
            leading_run(&[m("a"), m("b"), m("c")], &[m("a"), m("b"), m("x"), m("c")]),
            2
        );
        // The same message later on is not a leading run.
        assert_eq!(leading_run(&[m("s"), m("retry")], &[m("t"), m("retry")]), 0);
        let sys = |t: &str| Arc::new(json!({"role": "system", "content": t}));
        assert_eq!(
            message_affinity(&[sys("09:00"), m("q")], &[sys("09:05"), m("q"), m("r")]),
            (0, 1)
        );
        assert_eq!(
            message_affinity(
                &[sys("a"), m("x"), m("retry")],
                &[sys("b"), m("y"), m("retry")]
            ),
            (0, 0)
        );
    }

    #[test]
    fn sessions_forget_the_least_recently_used() {
        let mut sessions = Sessions::default();
        for i in 0..MAX_SESSIONS + 10 {
            let forgotten = sessions.insert(format!("s{i}"), i);
            let expected = i.checked_sub(MAX_SESSIONS).map(|j| (format!("s{j}"), j));
            assert_eq!(forgotten, expected);
        }
        assert!(sessions.get("s0").is_none());
        assert_eq!(
            sessions.get(&format!("s{}", MAX_SESSIONS + 9)),
            Some(&(MAX_SESSIONS + 9))
        );
    }

    #[test]
    fn kept_forgets_the_least_recently_used_past_its_budget() {
        let mut kept = Kept::new(100);
        kept.insert("a".into(), 'a', 40);
        kept.insert("b".into(), 'b', 40);
        kept.insert("a".into(), 'A', 30);
        assert_eq!((kept.bytes(), kept.len()), (70, 2));
        assert_eq!(kept.gone, ['a']);
        // Over the budget: "b" is the least recently used.
        kept.insert("c".into(), 'c', 50);
        assert_eq!((kept.bytes(), kept.len()), (80, 2));
        assert_eq!(kept.gone, ['a', 'b']);
        assert_eq!(
            (kept.get("a"), kept.get("b"), kept.get("c")),
            (Some(&'A'), None, Some(&'c'))
        );
        // One alone over the budget is not kept either.
        kept.insert("d".into(), 'd', 101);
        assert!(kept.is_empty());
        assert_eq!(kept.bytes(), 0);
        assert_eq!(kept.gone, ['a', 'b', 'A', 'c', 'd']);
        let mut many = Kept::new(usize::MAX);
        for i in 0..MAX_SESSIONS + 3 {
            many.insert(format!("s{i}"), i, 1);
        }
        assert_eq!(
            (many.len(), many.gone.as_slice()),
            (MAX_SESSIONS, &[0, 1, 2][..])
        );
    }
}
