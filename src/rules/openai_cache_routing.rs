//! PL013 openai-cache-routing: docs in `rules/PL013-openai-cache-routing.yaml`.
//!
//! OpenAI routes a request by a hash of about its first 256 tokens combined with
//! `prompt_cache_key`. Two ways a template loses its cache to that routing: a key that
//! differs on every request, and conversations or per-user prompts that all share one
//! routing prefix without a key to tell them apart.

use super::breakpoint::{variable_paths, Breakpoint};
use super::fields::Cadence;
use super::{meta, Finding, Reads, Rule, RuleCode, RuleContext, Severity};
use crate::analyse::request_body::{BodyApi, KeyOrigin, RequestBody};
use crate::cache_profile::CacheProfileKind;
use crate::fmt::thousands;
use regex::Regex;
use std::collections::HashSet;
use std::sync::OnceLock;

/// About this many leading tokens (with the key) pick the machine.
pub const ROUTING_PREFIX_TOKENS: usize = 256;
/// Requests per minute one prefix and key take before OpenAI spreads them over machines.
pub const REQUESTS_PER_MINUTE_PER_PREFIX: usize = 15;
/// OpenAI caches nothing below this many prompt tokens.
const OPENAI_MINIMUM: usize = 1024;

pub struct OpenaiCacheRouting;

impl Rule for OpenaiCacheRouting {
    fn code(&self) -> RuleCode {
        RuleCode::OpenaiCacheRouting
    }

    fn reads(&self) -> Reads {
        Reads::Analysis
    }

    fn check(&self, ctx: &RuleContext) -> Vec<Finding> {
        let bodies = &ctx.analysis.bodies;
        let openai = match bodies.first().map(|b| b.api) {
            Some(BodyApi::Openai) => true,
            Some(BodyApi::Anthropic) => false,
            Some(BodyApi::Either) | None => ctx.engine.kind == CacheProfileKind::Openai,
        };
        if !openai {
            return Vec::new();
        }
        let minimum = if ctx.engine.kind == CacheProfileKind::Openai {
            ctx.engine.min_tokens
        } else {
            OPENAI_MINIMUM
        };
        key_per_request(&ctx.template.source, bodies, minimum)
            .or_else(|| one_routing_prefix(ctx, bodies))
            .into_iter()
            .collect()
    }
}

/// Tokens every body shares from the start, counted in whole blocks (tools, messages).
fn shared_body_tokens(bodies: &[RequestBody]) -> usize {
    let first = &bodies[0].blocks;
    let shared = bodies[1..]
        .iter()
        .map(|other| {
            first
                .iter()
                .zip(&other.blocks)
                .take_while(|(a, b)| a.identity == b.identity)
                .count()
        })
        .min()
        .unwrap_or(first.len());
    first[..shared].iter().map(|b| b.tokens).sum()
}

/// Names of what a conversation or a user is keyed by: a key read from one of them is meant
/// to differ between conversations, and stays the same within one.
fn names_an_entity(expression: &str) -> bool {
    static ENTITY: OnceLock<Regex> = OnceLock::new();
    let entity = ENTITY.get_or_init(|| {
        Regex::new(r"(?i)(user|session|conversation|thread|chat|customer|tenant|account|org|team|workspace|project|agent|document|doc)")
            .expect("valid regex")
    });
    expressions(expression)
        .iter()
        .flat_map(|e| variable_paths(e))
        .any(|path| entity.is_match(&path))
}

/// The `{{ … }}` expressions in a piece of template source, or the whole piece.
fn expressions(text: &str) -> Vec<&str> {
    let found: Vec<&str> = text
        .match_indices("{{")
        .filter_map(|(at, _)| {
            let end = text[at..].find("}}")?;
            Some(&text[at..at + end + 2])
        })
        .collect();
    if found.is_empty() {
        vec![text]
    } else {
        found
    }
}

/// `prompt_cache_key` differs on every request: each request is routed on its own.
fn key_per_request(source: &str, bodies: &[RequestBody], minimum: usize) -> Option<Finding> {
    if bodies.len() < 2 {
        return None;
    }
    let keys: Vec<&str> = bodies
        .iter()
        .map(|b| b.prompt_cache_key.as_deref())
        .collect::<Option<_>>()?;
    if keys.iter().collect::<HashSet<_>>().len() != keys.len() {
        return None;
    }
    let origin = bodies[0]
        .prompt_cache_key_origin
        .clone()
        .or_else(|| written_key(source));
    let origin = origin.as_ref();
    if origin.is_some_and(|o| names_an_entity(&o.text)) {
        return None;
    }
    let shared = shared_body_tokens(bodies);
    if shared < minimum {
        return None;
    }
    let rule = meta(RuleCode::OpenaiCacheRouting);
    let written = origin.map_or_else(
        || format!("`{}`, `{}`", keys[0], keys[1]),
        |o| format!("`{}`", o.text.trim()),
    );
    Some(Finding {
        saving: None,
        rule,
        severity: Severity::Warning,
        cadence: Some(Cadence::Request),
        message: format!(
            "prompt_cache_key differs on every request ({written}): OpenAI routes by a hash of about the first {ROUTING_PREFIX_TOKENS} tokens combined with the key, so each request lands where nothing is cached for it and the {} tokens all requests share miss every time",
            thousands(shared)
        ),
        help: "set prompt_cache_key to what the requests that share a prefix have in common (the conversation, the user, the template), never a request id, a timestamp or a random value; or leave it out".into(),
        span: origin.map_or(0..0, |o| o.span.clone()),
        label: "a new routing key on every request".into(),
        related: Vec::new(),
    })
}

/// Where the template writes `"prompt_cache_key": …`, when the render has no source map:
/// the value up to the end of its line.
fn written_key(source: &str) -> Option<KeyOrigin> {
    let key = "\"prompt_cache_key\"";
    let at = source.find(key)? + key.len();
    let rest = &source[at..];
    let colon = rest.find(':')?;
    let value = &rest[colon + 1..];
    let start = at + colon + 1 + (value.len() - value.trim_start().len());
    let line = source[start..].lines().next().unwrap_or_default();
    // A quoted value ends at its closing quote; else at the line's end.
    let text = match line.strip_prefix('"').and_then(|rest| rest.find('"')) {
        Some(close) => &line[..close + 2],
        None => line.trim_end().trim_end_matches([',', '}']),
    };
    Some(KeyOrigin {
        span: start..start + text.len(),
        text: text.to_owned(),
        expression: text.contains("{{"),
    })
}

/// Requests that share their routing prefix but go on per conversation or per user, with
/// no key (or one key for all) to tell them apart.
fn one_routing_prefix(ctx: &RuleContext, bodies: &[RequestBody]) -> Option<Finding> {
    let analysis = ctx.analysis;
    let (shared, what) = if bodies.is_empty() {
        let bp = Breakpoint::find(ctx)?;
        let per_user = bp
            .volatile
            .as_ref()
            .is_some_and(|v| v.cadence == Cadence::User);
        let conversation = bp.input.is_some() && is_history(&bp.snippet);
        if !(per_user || conversation) {
            return None;
        }
        let what = if per_user {
            format!("{} (one per user)", bp.subject())
        } else {
            format!("{} (the conversation so far)", bp.subject())
        };
        (analysis.shared_prefix_tokens, (what, bp.span))
    } else {
        let keys: HashSet<Option<&str>> = bodies
            .iter()
            .map(|b| b.prompt_cache_key.as_deref())
            .collect();
        // A key that differs between requests is the fix (or the other finding).
        if keys.len() > 1 {
            return None;
        }
        let conversation = bodies.iter().all(|b| {
            b.blocks
                .iter()
                .any(|block| block.path.starts_with("messages") && block.role == "assistant")
        });
        if !conversation {
            return None;
        }
        (
            shared_body_tokens(bodies),
            ("the conversation's earlier turns".to_owned(), 0..0),
        )
    };
    if shared < ROUTING_PREFIX_TOKENS {
        return None;
    }
    let rule = meta(RuleCode::OpenaiCacheRouting);
    let (what, span) = what;
    Some(Finding {
        saving: None,
        rule,
        severity: Severity::Info,
        cadence: None,
        message: format!(
            "every request starts with the same {} tokens, so OpenAI routes them all by one hash of their first {ROUTING_PREFIX_TOKENS}; what follows, {what}, is cached only on the machine that saw it, and past about {REQUESTS_PER_MINUTE_PER_PREFIX} requests a minute OpenAI spreads that prefix over more machines, where it misses",
            thousands(shared)
        ),
        help: "send a prompt_cache_key that is the same for the requests that continue each other (the conversation or user id), so each conversation keeps its machine; it is combined with the prefix hash".into(),
        span,
        label: "what follows the shared routing prefix differs per conversation".into(),
        related: Vec::new(),
    })
}

/// An expression that prints the conversation so far.
fn is_history(expression: &str) -> bool {
    static HISTORY: OnceLock<Regex> = OnceLock::new();
    let history = HISTORY.get_or_init(|| {
        Regex::new(r"(?i)(history|messages|conversation|dialog|transcript|turns)")
            .expect("valid regex")
    });
    variable_paths(expression)
        .iter()
        .any(|path| history.is_match(path))
}
