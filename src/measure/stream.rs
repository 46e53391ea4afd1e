//! One streamed request: send it, time the first generated content, read the usage.

use super::engine::UsageReport;
use super::sse::SseParser;
use crate::error::{Error, Result};
use crate::http::{self, Endpoint, Timeouts};
use serde_json::Value as Json;
use std::time::{Duration, Instant};

/// Largest single SSE event we accept (a chunk of one generated token is ~1 KiB).
const MAX_EVENT_BYTES: usize = 1 << 20;

#[derive(Debug, Clone, Copy)]
pub struct StreamResult {
    /// Time to first token: see [`stream`] for the definition.
    pub ttft: Duration,
    pub usage: UsageReport,
}

/// Sends `body` to `path` with streaming and waits for the whole stream.
///
/// TTFT is measured on a monotonic clock from just before the request bytes are written
/// (the TCP connection is already open) to the arrival of the first SSE chunk that carries
/// generated content: non-empty `text`, `delta.content`, reasoning or tool calls. A chat
/// stream's role-only first chunk does not count. When the first token decodes to no text
/// (an end-of-sequence token, or half of a UTF-8 character), the chunk carrying the first
/// `finish_reason` counts instead: it too is only sent after the prefill.
pub fn stream(
    endpoint: &Endpoint,
    path: &str,
    body: &Json,
    timeouts: Timeouts,
) -> Result<StreamResult> {
    stream_with_headers(endpoint, path, body, &[], timeouts)
}

/// [`stream`] with extra request headers (a router's session-affinity header).
pub fn stream_with_headers(
    endpoint: &Endpoint,
    path: &str,
    body: &Json,
    extra_headers: &[(String, String)],
    timeouts: Timeouts,
) -> Result<StreamResult> {
    let bytes = serde_json::to_vec(body).map_err(|e| Error::input(format!("request JSON: {e}")))?;
    let (mut response, sent_at) = http::send_with_headers(
        endpoint,
        "POST",
        path,
        Some(&bytes),
        extra_headers,
        timeouts,
    )?;
    let url = response.url().to_owned();
    if response.status >= 400 {
        let status = response.status;
        let reason = response.reason.clone();
        let body = response.body_snippet(2048);
        return Err(Error::input_with_help(
            format!("{url}: HTTP {status} {reason}: {body}"),
            match status {
                404 => "does the server serve this API? try --api completions or --api chat",
                400..=499 => "the server refused the request: check --model and --api",
                _ => "the server failed: check its log",
            },
        ));
    }
    let content_type = response.header("content-type").unwrap_or("").to_owned();
    if !content_type
        .to_ascii_lowercase()
        .contains("text/event-stream")
    {
        let body = response.body_snippet(300);
        return Err(Error::input_with_help(
            format!(
                "{url}: the answer is not an SSE stream (HTTP {}, Content-Type `{content_type}`): {body}",
                response.status
            ),
            "the server ignored \"stream\": true; measure needs streaming to time the first token",
        ));
    }
    let mut parser = SseParser::new(MAX_EVENT_BYTES);
    let mut usage = UsageReport::default();
    let mut first_content = None;
    let mut first_finish = None;
    let mut done = false;
    let mut chunks = 0usize;
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = response.read_body(&mut buf)?;
        let arrived = Instant::now();
        if n == 0 {
            break;
        }
        let events = parser
            .feed(&buf[..n])
            .map_err(|e| Error::input(format!("{url}: bad event stream: {e}")))?;
        for event in events {
            if done {
                continue;
            }
            if event.data.trim() == "[DONE]" {
                done = true;
                continue;
            }
            chunks += 1;
            let chunk: Json = serde_json::from_str(&event.data).map_err(|e| {
                Error::input_with_help(
                    format!(
                        "{url}: stream chunk {chunks} is not valid JSON ({e}): {}",
                        http::snippet(event.data.as_bytes())
                    ),
                    "the server sent a malformed stream",
                )
            })?;
            if let Some(error) = chunk.get("error") {
                return Err(Error::input(format!(
                    "{url}: the server reported an error in the stream: {}",
                    http::snippet(error.to_string().as_bytes())
                )));
            }
            usage.absorb(&chunk);
            if first_content.is_none() && carries_content(&chunk) {
                first_content = Some(arrived);
            }
            if first_finish.is_none() && finished(&chunk) {
                first_finish = Some(arrived);
            }
        }
    }
    if parser.has_partial_event() {
        return Err(Error::input_with_help(
            format!("{url}: the stream was truncated in the middle of an event"),
            "the server crashed or cut the connection; check its log",
        ));
    }
    if !done {
        return Err(Error::input_with_help(
            format!("{url}: the stream ended without `data: [DONE]` (truncated)"),
            "the server crashed or cut the connection; check its log",
        ));
    }
    let Some(first) = first_content.or(first_finish) else {
        return Err(Error::input(format!(
            "{url}: the stream carried no generated content and no finish_reason ({chunks} chunks)"
        )));
    };
    if usage.cached_tokens.is_none() {
        return Err(Error::input_with_help(
            format!(
                "{url}: the stream reported no cached-token count (looked for usage.prompt_tokens_details.cached_tokens, timings.cache_n, meta_info.cached_tokens, usage.prompt_cache_hit_tokens, prompt_eval_cached_count)"
            ),
            "vLLM needs --enable-prompt-tokens-details, SGLang --enable-cache-report; the server must honour stream_options.include_usage",
        ));
    }
    Ok(StreamResult {
        ttft: first.saturating_duration_since(sent_at),
        usage,
    })
}

fn carries_content(chunk: &Json) -> bool {
    let Some(choices) = chunk.get("choices").and_then(Json::as_array) else {
        // Ollama's native stream and SGLang's native one put text at the top.
        return ["response", "text"].iter().any(|k| {
            chunk
                .get(k)
                .and_then(Json::as_str)
                .is_some_and(|s| !s.is_empty())
        });
    };
    choices.iter().any(|choice| {
        let non_empty = |v: Option<&Json>| match v {
            Some(Json::String(s)) => !s.is_empty(),
            Some(Json::Array(a)) => !a.is_empty(),
            _ => false,
        };
        non_empty(choice.get("text"))
            || choice.get("delta").is_some_and(|d| {
                non_empty(d.get("content"))
                    || non_empty(d.get("reasoning_content"))
                    || non_empty(d.get("reasoning"))
                    || non_empty(d.get("tool_calls"))
            })
    })
}

fn finished(chunk: &Json) -> bool {
    chunk
        .get("choices")
        .and_then(Json::as_array)
        .is_some_and(|c| {
            c.iter()
                .any(|c| c.get("finish_reason").is_some_and(|f| !f.is_null()))
        })
        || chunk.get("done").and_then(Json::as_bool) == Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn role_only_chunk_is_not_content() {
        assert!(!carries_content(
            &json!({"choices": [{"delta": {"role": "assistant", "content": null}}]})
        ));
        assert!(!carries_content(
            &json!({"choices": [{"delta": {"role": "assistant", "content": ""}}]})
        ));
        assert!(carries_content(
            &json!({"choices": [{"delta": {"content": "Hi"}}]})
        ));
        assert!(carries_content(
            &json!({"choices": [{"delta": {"reasoning_content": "Hm"}}]})
        ));
        assert!(carries_content(
            &json!({"choices": [{"text": "x", "finish_reason": null}]})
        ));
        assert!(!carries_content(&json!({"choices": [], "usage": {}})));
        assert!(finished(
            &json!({"choices": [{"text": "", "finish_reason": "length"}]})
        ));
    }
}
