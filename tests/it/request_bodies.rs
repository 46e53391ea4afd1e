//! Request-body templates read as the API reads them by every rule, not only PL012/PL013:
//! a field that varies per request and is no part of the prompt (`prompt_cache_key`,
//! `metadata`) written before `messages` does not break the prefix the API caches.

use crate::support;

use support::*;

/// `check --format json --fail-on info` of one template of fixtures/openai-cache-routing.
fn report(template: &str) -> serde_json::Value {
    let r = run(prefixlint().args([
        "check",
        template,
        "--config",
        "fixtures/openai-cache-routing/prefixlint.yaml",
        "--format",
        "json",
        "--fail-on",
        "info",
    ]));
    assert_eq!(r.code, 0, "{template}:\n{}\n{}", r.stdout, r.stderr);
    serde_json::from_str(&r.stdout).expect("JSON report")
}

#[test]
fn a_routing_key_and_metadata_before_the_messages_break_no_prefix() {
    let first = report("fixtures/openai-cache-routing/pass/key_before_messages.j2");
    let last = report("fixtures/openai-cache-routing/pass/key_per_conversation.j2");
    let (first, last) = (&first["templates"][0], &last["templates"][0]);
    assert_eq!(first["diagnostics"], serde_json::json!([]), "{first:#}");
    assert_eq!(last["diagnostics"], serde_json::json!([]), "{last:#}");
    // The same messages: the same prefix, but for the separators around the moved fields.
    let shared = |t: &serde_json::Value| t["shared_prefix_tokens"].as_u64().unwrap();
    assert!(shared(last) > 1000, "{last:#}");
    assert!(
        shared(first).abs_diff(shared(last)) <= 4,
        "key first: {}, key last: {}",
        shared(first),
        shared(last)
    );
}
