//! `predicted_cached_tokens`: what the engine profile would have served from its cache.
//!
//! llama.cpp with one slot keeps exactly the previous request (in log order): its prompt and
//! the reply it generated, up to the last token (sampled, never evaluated), and reuses the
//! longest common token prefix. vLLM's prefix cache also holds the generated tokens, in full
//! blocks. The other engines keep a shared prefix cache of prompts: the longest prefix
//! shared with the session's previous request or a recent one, cut to the profile's blocks
//! and minimums, and for the hosted APIs only while it is younger than their cache TTL (an
//! hour for an entry written to the 1 h tier) and for the same model.

use super::Seen;
use crate::cache_profile::{CacheProfile, CacheProfileKind};
use std::collections::VecDeque;

/// How long a hosted API keeps a prefix without use, in seconds: the TTL in force from
/// `rules/providers/*.yaml` (OpenAI 10 minutes, the long end of its 5–10; Anthropic 5
/// minutes, or 1 hour with `ttl=1h`; Gemini 5 minutes; DeepSeek an hour; Bedrock 5 minutes).
pub fn ttl_seconds(profile: &CacheProfile) -> Option<f64> {
    let ttl = profile.hosted.as_ref()?.ttl.as_ref()?;
    Some(ttl.seconds as f64)
}

/// Whether a prefix written at `then` is gone by `now` under the profile's TTL.
pub fn expired(profile: &CacheProfile, then: Option<f64>, now: Option<f64>) -> bool {
    match (ttl_seconds(profile), then, now) {
        (Some(ttl), Some(then), Some(now)) => now - then > ttl,
        _ => false,
    }
}

/// Whether what `seen` wrote is gone by `now`: an entry its response logged in a longer TTL
/// tier (Anthropic's and Bedrock's 1 h, OpenAI's 12 h) lives that long.
pub(crate) fn seen_expired(profile: &CacheProfile, seen: &Seen, now: Option<f64>) -> bool {
    match (ttl_seconds(profile), seen.written_ttl, seen.time, now) {
        (Some(ttl), Some(tier), Some(then), Some(now)) => now - then > ttl.max(tier),
        _ => expired(profile, seen.time, now),
    }
}

/// Whether the engine's cache keeps the tokens it generated (llama.cpp's slot, vLLM's
/// blocks), so that the next request reuses the reply it sends back.
pub fn keeps_replies(profile: &CacheProfile) -> bool {
    matches!(
        profile.kind,
        CacheProfileKind::LlamaCpp | CacheProfileKind::Vllm
    )
}

pub fn cached_by_profile(profile: &CacheProfile, shared: usize, prompt_tokens: usize) -> usize {
    profile.cached_tokens(shared, prompt_tokens)
}

pub(crate) fn predicted_cached(
    profile: &CacheProfile,
    ids: &[u32],
    (time, model): (Option<f64>, Option<&str>),
    slot: Option<&Seen>,
    earlier: Option<&Seen>,
    window: &VecDeque<std::sync::Arc<Seen>>,
) -> usize {
    let shared = if profile.kind == CacheProfileKind::LlamaCpp {
        slot.map_or(0, |s| s.cached_prefix(ids))
    } else {
        earlier
            .into_iter()
            .chain(window.iter().map(|s| &**s))
            .filter(|s| !seen_expired(profile, s, time))
            // A hosted API keeps a cache per model.
            .filter(|s| match (s.model.as_deref(), model) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            })
            .map(|s| s.cached_prefix(ids))
            .max()
            .unwrap_or(0)
    };
    profile.cached_tokens(shared, ids.len())
}
