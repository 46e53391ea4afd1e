//! What to set, in each router's own terms, when sessions scatter.

use super::sessions::AffinityKey;

/// Advice lines for a run: empty when nothing scattered and the hit rate is near the prediction.
pub fn advise(
    key: &AffinityKey,
    sessions: usize,
    scattered: usize,
    hit_rate: Option<f64>,
    single_server: Option<f64>,
) -> Vec<String> {
    let shortfall = match (hit_rate, single_server) {
        (Some(h), Some(p)) => p - h,
        _ => 0.0,
    };
    if scattered == 0 && shortfall < 0.05 {
        return Vec::new();
    }
    let mut lines = Vec::new();
    if scattered > 0 {
        lines.push(format!(
            "{scattered} of {sessions} sessions moved between replicas: the router did not keep a session on the replica that holds its prefix (affinity key sent: {})",
            key.describe()
        ));
    } else {
        lines.push(format!(
            "the hit rate is {:.0} points below one server's: sessions stay put, but they do not share the template's prefix across replicas",
            shortfall * 100.0
        ));
    }
    lines.extend([
        "SGLang router (sglang-router): `--policy cache_aware` routes by prefix match; `--policy manual` pins each `X-SMG-Routing-Key` header value to one worker (send it with --affinity-key x-smg-routing-key)".to_owned(),
        "vLLM production stack router: `--routing-logic session --session-key <header>` (send that header with --affinity-key), or `--routing-logic prefixaware` / `kvaware`".to_owned(),
        "LiteLLM proxy: `router_settings: optional_pre_call_checks: [\"prompt_caching\"]` sends a prompt that was cached to the deployment that cached it; shuffle and least-busy strategies alone scatter".to_owned(),
        "llm-d: enable the prefix-cache scorer in the endpoint picker (EPP) scheduling profile, weighted above the load scorers".to_owned(),
        "NVIDIA Dynamo: run the frontend with `--router-mode kv` so the KV router picks the worker with the most cached blocks".to_owned(),
        "hosted APIs: send a stable `prompt_cache_key` (OpenAI), `x-session-id` (OpenRouter) or `x-session-affinity` (Fireworks, DeepInfra) per conversation".to_owned(),
    ]);
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_when_sessions_stick() {
        assert!(advise(&AffinityKey::None, 4, 0, Some(0.80), Some(0.82)).is_empty());
        let lines = advise(
            &AffinityKey::Header("x-session-id".into()),
            4,
            3,
            Some(0.2),
            Some(0.8),
        );
        assert!(lines[0].starts_with("3 of 4 sessions moved"));
        assert!(lines[0].contains("x-session-id"));
        assert!(lines.iter().any(|l| l.contains("--policy cache_aware")));
    }
}
