//! `prefixlint measure --server ROUTER --replica URL …`: cache hits across replicas behind a
//! router.
//!
//! [`sessions`] builds chat-like sessions from the templates' renders; each request goes
//! through the router one at a time, tagged with the session's [`sessions::AffinityKey`],
//! and every replica's `/metrics` ([`metrics`]) is read after it, so
//! [`attribution`] can tell which replica served it. The [`FleetReport`] compares
//! the measured hit rate with one server's (the prediction) and perfect affinity's, lists
//! the scattered sessions with what they cost, and [`advice`] names the router setting.

pub mod advice;
pub mod attribution;
pub mod metrics;
pub mod sessions;

use super::model::TtftModel;
use super::report::fleet::{FleetReport, FleetRequest, ReplicaReport};
use super::report::{MeasureReport, ServerInfo, REPORT_VERSION};
use super::run::{self, Api, MeasureOutcome, TTFT_DEFINITION};
use super::stream;
use crate::config::Config;
use crate::discover::{self, Matcher};
use crate::error::{Error, Result};
use crate::http::{self, Endpoint, Timeouts};
use crate::render::Renderer;
use crate::request::{self, Encoding};
use crate::rules::VolatileFields;
use crate::settings::Settings;
use attribution::{AttributedBy, Predictor, Sent};
use metrics::CacheCounters;
use serde_json::json;
use sessions::AffinityKey;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

/// Requests in one fleet run: the predictions compare each prompt with every earlier one.
pub const MAX_REQUESTS: usize = 1000;

pub struct FleetOptions {
    pub paths: Vec<PathBuf>,
    /// The router's base URL: every session request goes here.
    pub router: String,
    /// The replicas behind it: only their `/metrics` are read (and one warm-up each).
    pub replicas: Vec<String>,
    pub model: Option<String>,
    pub api: Api,
    /// The tokenizer, the chat template the predictions render `--api chat`'s messages
    /// with, the engine and the limits.
    pub settings: Settings,
    pub sessions: usize,
    pub turns: usize,
    pub affinity_key: AffinityKey,
    pub timeouts: Timeouts,
    pub progress: bool,
    pub config: Config,
    pub cwd: PathBuf,
}

pub fn run(options: &FleetOptions) -> Result<MeasureOutcome> {
    if options.sessions * options.turns > MAX_REQUESTS {
        return Err(Error::input_with_help(
            format!(
                "--sessions {} × --turns {} is {} requests: at most {MAX_REQUESTS}",
                options.sessions,
                options.turns,
                options.sessions * options.turns
            ),
            "each request is replayed against every earlier one for the predictions; fewer sessions show the same routing",
        ));
    }
    let router = Endpoint::parse(&options.router)?;
    let mut replicas = Vec::new();
    for url in &options.replicas {
        let endpoint = Endpoint::parse(url)?;
        if replicas
            .iter()
            .any(|r: &Endpoint| r.base() == endpoint.base())
        {
            return Err(Error::input(format!(
                "--replica {url}: given twice; each replica is counted once"
            )));
        }
        replicas.push(endpoint);
    }
    let settings = &options.settings;
    if settings.tokenizer == "server" {
        return Err(Error::input_with_help(
            "--replica: --tokenizer server is not supported for fleet runs",
            "pass the model's tokenizer.json (or leave the default) so the predictions need no server",
        ));
    }
    let tokenizer = settings.load_tokenizer()?;
    // On the chat API a session is a conversation: the render is the first user message and
    // each turn adds an answer and a question, as the model's chat template lays them out.
    let chat = match options.api {
        Api::Chat => Some(run::ChatTemplate::load(settings)?),
        Api::Completions => None,
    };
    // The replicas' engine sets the cache profile, resolved as for one server.
    let resolved = crate::measure::run::resolve_engine(
        settings.engine.as_ref(),
        &replicas[0],
        options.timeouts,
    )?;
    let (engine, profile) = (resolved.engine, resolved.profile.clone());
    let model = options
        .model
        .clone()
        .or_else(|| run::first_model(&replicas[0], options.timeouts));

    let renders = renders(options)?;
    let run_id = format!("prefixlint-{}-{}", std::process::id(), run::now_nanos());
    let sessions = sessions::build(renders.len(), options.sessions, &run_id);
    // Each session's prompt as of the last turn sent.
    let mut prompts: Vec<String> = sessions.iter().map(|s| renders[s.sample].clone()).collect();
    let mut conversations: Vec<Vec<serde_json::Value>> = sessions
        .iter()
        .map(|s| vec![json!({"role": "user", "content": renders[s.sample]})])
        .collect();
    let keys: Vec<String> = sessions.iter().map(|s| s.key.clone()).collect();

    let mut errors = Vec::new();
    let mut notes = Vec::new();
    for replica in &replicas {
        // First-call costs (model load, allocation) stay out of the timings. A replica that
        // only the router can reach still counts, so a failure here is a note.
        if let Err(e) = warm_up(replica, model.as_deref(), &run_id, options.timeouts) {
            notes.push(format!(
                "warm-up request straight to {} failed ({e}); its first session request pays any first-call cost",
                replica.base()
            ));
        }
    }
    let scrape_all = || -> Vec<std::result::Result<CacheCounters, String>> {
        replicas
            .iter()
            .map(|r| scrape(r, options.timeouts))
            .collect()
    };
    let start = scrape_all();
    let mut previous = start.clone();
    let mut predictor = Predictor::new(profile.clone(), replicas.len());
    let mut sent = Vec::new();
    // Turn by turn across sessions, as concurrent users would arrive.
    'turns: for turn in 0..options.turns {
        for (index, session) in sessions.iter().enumerate() {
            if !errors.is_empty() {
                break 'turns;
            }
            if turn > 0 {
                prompts[index].push_str(&session.exchange(turn));
                conversations[index].extend(session.exchange_messages(turn));
            }
            let text = &prompts[index];
            // As the server tokenizes it: a completions prompt gets the BOS the tokenizer
            // adds, a chat-templated one writes its own.
            let encoded = match &chat {
                None => Encoding::Prompt.encode(tokenizer.as_ref(), text),
                Some(chat) => chat
                    .apply_messages(conversations[index].clone())
                    .and_then(|applied| Encoding::Chat.encode(tokenizer.as_ref(), &applied)),
            };
            let ids = match encoded {
                Ok(tokens) => tokens.ids,
                Err(e) => {
                    errors.push(e);
                    break 'turns;
                }
            };
            if options.progress {
                eprint!(
                    "\r\x1b[2K[{}] session {index} turn {turn} ({} tokens)",
                    sent.len() + 1,
                    ids.len()
                );
                let _ = std::io::stderr().flush();
            }
            let (predicted_single_server, predicted_affinity) = predictor.next(index, &ids);
            let mut body = json!({
                "max_tokens": 1,
                "temperature": 0,
                "stream": true,
                "stream_options": {"include_usage": true},
            });
            match options.api {
                Api::Completions => body["prompt"] = json!(text),
                Api::Chat => body["messages"] = json!(conversations[index]),
            }
            if let Some(model) = &model {
                body["model"] = json!(model);
            }
            let mut headers = Vec::new();
            options
                .affinity_key
                .apply(&session.key, &mut body, &mut headers);
            let result = match stream::stream_with_headers(
                &router,
                options.api.path(),
                &body,
                &headers,
                options.timeouts,
            ) {
                Ok(result) => result,
                Err(e) => {
                    errors.push(e);
                    break 'turns;
                }
            };
            let now = scrape_all();
            let deltas = now
                .iter()
                .zip(&previous)
                .map(|(now, before)| match (now, before) {
                    (Ok(now), Ok(before)) => Some(now.since(before)),
                    _ => None,
                })
                .collect();
            previous = now;
            sent.push(Sent {
                session: index,
                turn,
                prompt_tokens: result.usage.prompt_tokens.unwrap_or(ids.len()),
                cached_tokens: result.usage.cached_tokens,
                ttft_ms: (result.ttft.as_secs_f64() * 100_000.0).round() / 100.0,
                deltas,
                predicted_single_server,
                predicted_affinity,
            });
        }
    }
    if options.progress {
        eprint!("\r\x1b[2K");
    }

    let fleet = summarize(options, &replicas, &start, &previous, &sent, &keys);
    let report = MeasureReport {
        version: REPORT_VERSION,
        server: ServerInfo {
            url: router.base(),
            engine: engine.name().into(),
            engine_detected_by: resolved.detected_by.clone(),
            model,
            api: options.api.name().into(),
            tokenizer: settings.tokenizer.clone(),
            isolation: "none".into(),
            cache_block_tokens: profile.unit_tokens,
            cache_block_tokens_source: match &resolved.geometry {
                Some(g) if resolved.block_source == g.source => {
                    format!("{} of {}", g.source, replicas[0].base())
                }
                _ => resolved.block_source.clone(),
            },
            cache_num_blocks: resolved.geometry.as_ref().and_then(|g| g.num_blocks),
            cache_num_blocks_source: resolved
                .geometry
                .as_ref()
                .filter(|g| g.num_blocks.is_some())
                .map(|g| format!("{} of {}", g.source, replicas[0].base())),
            cache_profile: profile.describe(),
            ttft_definition: TTFT_DEFINITION.into(),
            notes: [
                format!(
                    "fleet run: {} sessions of {} turns through the router, one request at a time, each replica's /metrics read after every request",
                    options.sessions, options.turns
                ),
                "the single-server and perfect-affinity rates replay the same requests against one cache, and against one cache per replica with each session kept on one".into(),
            ]
            .into_iter()
            .chain(resolved.notes.iter().cloned())
            .chain(notes)
            .collect(),
            metrics: None,
            ttft_from_metrics: None,
        },
        templates: Vec::new(),
        ttft_model: None,
        errors: errors.iter().map(|e| e.to_string()).collect(),
        fleet: Some(fleet),
    };
    Ok(MeasureOutcome { report, errors })
}

fn summarize(
    options: &FleetOptions,
    replicas: &[Endpoint],
    start: &[std::result::Result<CacheCounters, String>],
    end: &[std::result::Result<CacheCounters, String>],
    sent: &[Sent],
    keys: &[String],
) -> FleetReport {
    let attributions = attribution::attribute(sent);
    let ttft_model = TtftModel::fit(
        &sent
            .iter()
            .map(|s| {
                let uncached = s
                    .prompt_tokens
                    .saturating_sub(s.cached_tokens.unwrap_or(s.predicted_affinity));
                (uncached as f64, s.ttft_ms)
            })
            .collect::<Vec<_>>(),
    )
    .filter(|m| m.b_ms_per_token > 0.0);
    let scattered = attribution::scattered(
        sent,
        &attributions,
        keys,
        ttft_model.map(|m| m.b_ms_per_token),
    );

    let replica_reports = replicas
        .iter()
        .enumerate()
        .map(|(i, endpoint)| {
            let attributed: Vec<&Sent> = sent
                .iter()
                .zip(&attributions)
                .filter(|(_, a)| a.replica == Some(i))
                .map(|(s, _)| s)
                .collect();
            let (delta, metrics_error) = match (&end[i], &start[i]) {
                (Ok(end), Ok(start)) => (Some(end.since(start)), None),
                (Err(e), _) | (_, Err(e)) => (None, Some(e.clone())),
            };
            // Nothing attributed is no evidence, not zero tokens.
            let from_responses = |f: fn(&Sent) -> Option<usize>| -> Option<u64> {
                if attributed.is_empty() {
                    return None;
                }
                attributed
                    .iter()
                    .map(|s| f(s).map(|n| n as u64))
                    .sum::<Option<u64>>()
            };
            let counted = |v: Option<f64>| v.map(|v| v.round() as u64);
            let mut metrics = BTreeMap::new();
            if let Some(delta) = &delta {
                metrics.extend(delta.raw.clone());
                metrics.extend(delta.gauges.clone());
            }
            ReplicaReport {
                url: endpoint.base(),
                requests: attributed.len(),
                prompt_tokens: delta
                    .as_ref()
                    .and_then(|d| counted(d.prompt_tokens))
                    .or_else(|| from_responses(|s| Some(s.prompt_tokens))),
                cached_tokens: delta
                    .as_ref()
                    .and_then(|d| counted(d.cached_tokens))
                    .or_else(|| from_responses(|s| s.cached_tokens)),
                metrics,
                metrics_error,
            }
        })
        .collect::<Vec<_>>();

    let prompt_total: usize = sent.iter().map(|s| s.prompt_tokens).sum();
    let rate = |cached: f64, prompt: f64| (prompt > 0.0).then(|| round4(cached / prompt));
    let measured_cached: Option<usize> = sent.iter().map(|s| s.cached_tokens).sum();
    let hit_rate = match measured_cached {
        Some(cached) => rate(cached as f64, prompt_total as f64),
        // No per-response counts: the replicas' counters over the run.
        None => {
            let cached: Option<u64> = replica_reports.iter().map(|r| r.cached_tokens).sum();
            let prompt: Option<u64> = replica_reports.iter().map(|r| r.prompt_tokens).sum();
            cached
                .zip(prompt)
                .and_then(|(c, p)| rate(c as f64, p as f64))
        }
    };
    let predicted = |f: fn(&Sent) -> usize| {
        rate(
            sent.iter().map(f).sum::<usize>() as f64,
            prompt_total as f64,
        )
        .unwrap_or(0.0)
    };
    let hit_rate_single_server = predicted(|s| s.predicted_single_server);
    let mut attributed_by = BTreeMap::new();
    for a in &attributions {
        let name = serde_json::to_value(a.by)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        *attributed_by.entry(name).or_insert(0) += 1;
    }
    let advice = advice::advise(
        &options.affinity_key,
        keys.len(),
        scattered.len(),
        hit_rate,
        Some(hit_rate_single_server),
    );
    FleetReport {
        router: options.router.clone(),
        replicas: replica_reports,
        sessions: keys.len(),
        turns: options.turns,
        sessions_scattered: scattered.len(),
        hit_rate,
        hit_rate_single_server,
        hit_rate_perfect_affinity: predicted(|s| s.predicted_affinity),
        affinity_key: options.affinity_key.describe(),
        attributed_by,
        scattered,
        requests: sent
            .iter()
            .zip(&attributions)
            .map(|(s, a)| FleetRequest {
                session: s.session,
                turn: s.turn,
                replica: a.replica,
                attributed_by: if a.by == AttributedBy::Unknown && a.replica.is_some() {
                    AttributedBy::Metrics
                } else {
                    a.by
                },
                prompt_tokens: s.prompt_tokens,
                cached_tokens: s.cached_tokens,
                predicted_single_server: s.predicted_single_server,
                predicted_affinity: s.predicted_affinity,
                ttft_ms: s.ttft_ms,
            })
            .collect(),
        advice,
    }
}

fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

/// Every template's renders, in discovery order.
fn renders(options: &FleetOptions) -> Result<Vec<String>> {
    let config = &options.config;
    let fields = VolatileFields::new(&config.volatile_fields)?;
    let matcher = Matcher::new(&config.include, &config.exclude)?;
    let targets = discover::discover(&options.paths, &matcher)?;
    let root = config.project_root(&options.cwd);
    let mut renderer = Renderer::new(config.render_settings(root.clone()))?;
    let mut renders = Vec::new();
    for target in &targets {
        let path = &target.template;
        let (template, samples) =
            request::prepare_template(path, &root, &mut renderer, &fields, config)?;
        renders.extend(
            request::render_all(&renderer, &template, &samples)?
                .into_iter()
                .map(|r| r.text),
        );
    }
    if renders.is_empty() {
        return Err(Error::input_with_help(
            "--replica: no template renders to build sessions from",
            "pass template files or folders that hold templates",
        ));
    }
    Ok(renders)
}

fn scrape(replica: &Endpoint, timeouts: Timeouts) -> std::result::Result<CacheCounters, String> {
    let fetched = http::fetch(replica, "GET", "/metrics", None, timeouts, 8 << 20)
        .map_err(|e| format!("/metrics: {e}"))?;
    if fetched.status != 200 {
        return Err(format!(
            "/metrics: HTTP {} (llama.cpp needs --metrics, SGLang --enable-metrics)",
            fetched.status
        ));
    }
    Ok(metrics::cache_counters(&String::from_utf8_lossy(
        &fetched.body,
    )))
}

/// One request straight to a replica, sharing no prefix with the sessions.
fn warm_up(
    replica: &Endpoint,
    model: Option<&str>,
    run_id: &str,
    timeouts: Timeouts,
) -> Result<()> {
    let mut body = json!({
        "prompt": format!("prefixlint fleet warm-up {run_id} for {}: shares no prefix with the sessions.", replica.base()),
        "max_tokens": 1,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if let Some(model) = model {
        body["model"] = json!(model);
    }
    stream::stream(replica, "/v1/completions", &body, timeouts).map(|_| ())
}
