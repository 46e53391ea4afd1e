//! The tests' one HTTP client: the crate's own (`prefixlint::http`, what `measure`, `capacity
//! --server` and the fleet commands talk with), so a test reads a server's answer the way
//! the tool does, chunked bodies, deadlines and size caps included.

use prefixlint::http::{fetch, Endpoint, Timeouts, MAX_BODY_BYTES};
use std::time::Duration;

/// `METHOD url path` with an optional JSON body, within `timeout`: the status and the body
/// (as lossy UTF-8).
pub fn request(
    url: &str,
    method: &str,
    path: &str,
    body: Option<&serde_json::Value>,
    timeout: Duration,
) -> Result<(u16, String), String> {
    let endpoint = Endpoint::parse(url).map_err(|e| format!("{url}: {e}"))?;
    let body = body.map(|b| serde_json::to_vec(b).expect("JSON"));
    let timeouts = Timeouts {
        connect: Duration::from_secs(5),
        request: timeout,
    };
    let fetched = fetch(
        &endpoint,
        method,
        path,
        body.as_deref(),
        timeouts,
        MAX_BODY_BYTES,
    )
    .map_err(|e| e.to_string())?;
    Ok((
        fetched.status,
        String::from_utf8_lossy(&fetched.body).into_owned(),
    ))
}

/// How long a test waits for a whole answer: a guard against a hung server, long enough for
/// a request queued behind others on a loaded machine (one took over 120 s at a load of 30).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(600);

/// GET: status and body; a server that does not answer fails the test.
pub fn get(url: &str, path: &str) -> (u16, String) {
    request(url, "GET", path, None, ANSWER_TIMEOUT)
        .unwrap_or_else(|e| panic!("GET {url}{path}: {e}"))
}

/// POST (a JSON body, or none): status and body; a server that does not answer fails the
/// test.
pub fn post(url: &str, path: &str, body: Option<&serde_json::Value>) -> (u16, String) {
    request(url, "POST", path, body, ANSWER_TIMEOUT)
        .unwrap_or_else(|e| panic!("POST {url}{path}: {e}"))
}

/// POSTs JSON and returns the answer's JSON; anything but 200 fails the test.
pub fn post_json(url: &str, path: &str, body: &serde_json::Value) -> serde_json::Value {
    let (status, text) = post(url, path, Some(body));
    assert_eq!(status, 200, "POST {url}{path}: {text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: not JSON ({e}): {text}"))
}

/// Whether GET `path` answers 200 now (false when nothing answers): for waiting on a
/// server that is starting.
pub fn answers_ok(url: &str, path: &str) -> bool {
    matches!(
        request(url, "GET", path, None, Duration::from_secs(2)),
        Ok((200, _))
    )
}
