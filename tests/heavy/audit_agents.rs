//! `prefixlint audit` on real agent-framework traffic (issue 24).
//!
//! `tests/fixtures/audit-agents/agents.jsonl` was written by smolagents (through LiteLLM),
//! the OpenAI Agents SDK and LangGraph (langchain-openai) against the real one-slot llama.cpp
//! test server, through the logging proxy of `tests/audit_support/agent_runs.py` (versions in
//! `versions.json`; `regenerate_agent_logs.py` writes it again). Every request carries what
//! the server counted: its prompt tokens and the tokens it reused from its slot.
//!
//! The small logs below pin each new behaviour on its own: `content: null`, requests that
//! cannot be rendered, the reply kept in the cache, pairing without session keys,
//! `tokens_lost`, and the causes `history-trimmed`, `prompt-switched`, `reply-rewritten`.

use crate::support;

use assert_cmd::Command;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

const AGENTS_LOG: &str = "tests/fixtures/audit-agents/agents.jsonl";

fn audit(args: &[&str], stdin: Option<String>) -> (i32, Value, String) {
    let mut cmd = Command::cargo_bin("prefixlint").unwrap();
    cmd.current_dir(repo())
        .arg("audit")
        .args(args)
        .args(["--format", "json"]);
    if let Some(text) = stdin {
        cmd.write_stdin(text);
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let report =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stderr}"));
    (out.status.code().unwrap_or(-1), report, stderr)
}

fn requests(report: &Value) -> &Vec<Value> {
    report["requests"].as_array().unwrap()
}

/// The requests whose predicted cached tokens may differ from the server's, each with why.
/// Empty today: every request of the fixture is predicted exactly. A request that starts
/// to differ fails the test; one listed here that matches again asks to be removed.
const EXPLAINED: &[(usize, &str)] = &[];

/// Prompt tokens equal on every request; cached tokens equal on at least 90%, the rest
/// explained per request; no break where the server shows an extension. With session keys
/// (`metadata.session_id`) and without them.
#[test]
fn agent_framework_traffic_is_audited_as_the_server_counted_it() {
    let with_keys = audit(&[AGENTS_LOG, "--engine", "llama.cpp"], None);
    let without_keys = audit(
        &[
            AGENTS_LOG,
            "--engine",
            "llama.cpp",
            "--session-key",
            "/metadata/no-such-key",
        ],
        None,
    );
    let completion_tokens: Vec<u64> = std::fs::read_to_string(repo().join(AGENTS_LOG))
        .unwrap()
        .lines()
        .map(|line| {
            let record: Value = serde_json::from_str(line).unwrap();
            record["metadata"]["server_response"]["usage"]["completion_tokens"]
                .as_u64()
                .unwrap()
        })
        .collect();
    for (name, (code, report, stderr)) in [("keys", with_keys), ("no keys", without_keys)] {
        assert_eq!(code, 0, "{name}: {stderr}");
        assert_eq!(report["summary"]["not_audited"], json!([]), "{name}");
        let all = requests(&report);
        assert!(all.len() >= 18, "{name}: {} requests", all.len());
        let mut differing = BTreeMap::new();
        for r in all {
            let line = r["line"].as_u64().unwrap() as usize;
            assert_eq!(
                r["prompt_tokens"], r["logged_prompt_tokens"],
                "{name}: line {line}: prompt tokens"
            );
            assert_eq!(r["reply_tokens_exact"], true, "{name}: line {line}");
            if r["predicted_cached_tokens"] != r["logged_cached_tokens"] {
                differing.insert(
                    line,
                    (
                        r["predicted_cached_tokens"].clone(),
                        r["logged_cached_tokens"].clone(),
                    ),
                );
            }
        }
        let explained: BTreeMap<usize, &str> = EXPLAINED.iter().copied().collect();
        let unexplained: Vec<_> = differing
            .iter()
            .filter(|(line, _)| !explained.contains_key(line))
            .collect();
        assert!(
            unexplained.is_empty(),
            "{name}: predicted against logged cached tokens differ: {unexplained:?}"
        );
        let stale: Vec<_> = explained
            .keys()
            .filter(|l| !differing.contains_key(l))
            .collect();
        assert!(
            stale.is_empty(),
            "{name}: explained but exact now: {stale:?}"
        );
        assert!(differing.len() * 10 <= all.len(), "{name}");
        // The server shows an extension where it reused all the previous request left in its
        // one slot: that prompt and its reply but the reply's last token.
        for pair in all.windows(2) {
            let (before, r) = (&pair[0], &pair[1]);
            let kept = before["logged_prompt_tokens"].as_u64().unwrap()
                + completion_tokens[before["line"].as_u64().unwrap() as usize - 1]
                - 1;
            let extended = r["logged_cached_tokens"].as_u64().unwrap() >= kept;
            if extended {
                assert!(
                    r["break"].is_null(),
                    "{name}: line {}: a break where the server extended: {}",
                    r["line"],
                    r["break"]
                );
            }
        }
    }
}

/// The causes the frameworks' own patterns produce in the fixture: smolagents' planning
/// step switches the system prompt and drops the tools, and the Agents SDK's session limit
/// and LangGraph's `trim_messages` drop the oldest turns.
#[test]
fn agent_patterns_get_their_own_causes() {
    let (_, report, _) = audit(&[AGENTS_LOG, "--engine", "llama.cpp"], None);
    let mut causes: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in requests(&report) {
        if let Some(b) = r["break"].as_object() {
            causes
                .entry(r["session"].as_str().unwrap().to_owned())
                .or_default()
                .push(b["cause"].as_str().unwrap().to_owned());
        }
    }
    assert!(
        causes["smolagents-1"].contains(&"prompt-switched".to_owned()),
        "{causes:?}"
    );
    assert_eq!(causes["openai-agents-1"], ["history-trimmed"], "{causes:?}");
    assert_eq!(causes["langgraph-1"], ["history-trimmed"], "{causes:?}");
    for (session, list) in &causes {
        assert!(
            !list.contains(&"content".to_owned()),
            "{session}: a generic content break: {list:?}"
        );
    }
}

fn record(session: &str, messages: Value, tools: Option<Value>) -> String {
    let mut request = json!({"messages": messages});
    if let Some(tools) = tools {
        request["tools"] = tools;
    }
    json!({"request": request, "metadata": {"session_id": session}}).to_string()
}

fn weather_tool() -> Value {
    json!([{"type": "function", "function": {"name": "get_weather", "description": "Weather.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}, "strict": true}}])
}

const SYSTEM: &str = "You are the weather desk. Answer in one sentence and name the source of every figure you give.";

/// `content: null` beside tool calls (the OpenAI convention every SDK follows), a missing
/// content, and content parts are all read; none is skipped.
#[test]
fn null_missing_and_list_content_is_read() {
    let call = json!({"id": "c1", "type": "function",
        "function": {"name": "get_weather", "arguments": "{\"city\":\"M\\u00fcnchen\"}"}});
    let messages = json!([
        {"role": "system", "content": [{"type": "text", "text": SYSTEM}, {"type": "text", "text": "Be brief."}]},
        {"role": "user", "content": "Weather in München?"},
        {"role": "assistant", "content": null, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "rain"},
        {"role": "assistant", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "rain"}]}
    ]);
    let log = format!("{}\n", record("s", messages, Some(weather_tool())));
    for engine in ["llama.cpp", "vllm", "openai"] {
        let (code, report, stderr) = audit(&["-", "--engine", engine], Some(log.clone()));
        assert_eq!(code, 0, "{engine}: {stderr}");
        assert_eq!(report["summary"]["requests"], 1, "{engine}");
        assert_eq!(report["summary"]["not_audited"], json!([]), "{engine}");
    }
}

/// A request that still cannot be rendered (llama.cpp refuses a user message without
/// content) is reported with its line and reason in every format, fails the run by default,
/// and the next request is compared with nothing rather than with the one before it.
#[test]
fn a_request_that_cannot_be_rendered_is_a_visible_failure() {
    let user = |text: &str| json!({"role": "user", "content": text});
    let lines = [
        record(
            "s",
            json!([{"role": "system", "content": SYSTEM}, user("one")]),
            None,
        ),
        record(
            "s",
            json!([{"role": "system", "content": SYSTEM}, {"role": "user"}]),
            None,
        ),
        record(
            "s",
            json!([{"role": "system", "content": format!("{SYSTEM} Changed.")}, user("one")]),
            None,
        ),
    ];
    let log = lines.join("\n") + "\n";
    let (code, report, stderr) = audit(&["-", "--engine", "llama.cpp"], Some(log.clone()));
    assert_eq!(code, 1, "{stderr}");
    let failed = &report["summary"]["not_audited"];
    assert_eq!(failed.as_array().unwrap().len(), 1, "{report}");
    assert_eq!(failed[0]["line"], 2);
    assert_eq!(failed[0]["session"], "s");
    let reason = failed[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("messages[1]: a user message without `content`"),
        "{reason}"
    );
    assert_eq!(requests(&report).len(), 2);
    // Line 3 follows a request that was not built: no break against line 1.
    assert!(requests(&report)[1]["break"].is_null(), "{report}");
    // The full format says it in place, SARIF as an error result at the line.
    for (format, expected) in [
        ("full", "-:2: session s: not audited: the server's request model refuses it: messages[1]: a user message without `content`"),
        ("sarif", "\"ruleId\": \"audit/not-audited\""),
    ] {
        let out = Command::cargo_bin("prefixlint")
            .unwrap()
            .args(["audit", "-", "--engine", "llama.cpp", "--format", format])
            .write_stdin(log.clone())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{format}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(expected), "{format}:\n{text}");
    }
    let out = Command::cargo_bin("prefixlint")
        .unwrap()
        .args(["audit", "-", "--engine", "llama.cpp", "--fail-on", "never"])
        .write_stdin(log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
}

/// A chat-completions response: the reply the client got, with the server's usage.
fn response(content: Value, calls: Option<Value>, completion_tokens: usize) -> Value {
    let mut message = json!({"role": "assistant", "content": content});
    if let Some(calls) = calls {
        message["tool_calls"] = calls;
    }
    json!({"choices": [{"index": 0, "message": message}],
           "usage": {"prompt_tokens": 1, "completion_tokens": completion_tokens}})
}

/// llama.cpp keeps the reply it generated in its slot, up to the last token: the next
/// request that sends the reply back reuses it (from the text: `reply_tokens_exact: false`).
/// Sent back in another form, it is a `reply-rewritten` break that loses those tokens.
#[test]
fn the_reply_is_kept_in_the_cache_and_a_rewritten_one_is_named() {
    let reply =
        "The weather in Paris is sunny with 21 degrees according to the local station report.";
    let first =
        json!([{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Paris?"}]);
    let mut again = first.as_array().unwrap().clone();
    again.push(json!({"role": "assistant", "content": reply}));
    again.push(json!({"role": "user", "content": "Thanks."}));
    let mut rewritten = first.as_array().unwrap().clone();
    rewritten.push(json!({"role": "assistant", "content": reply.to_uppercase()}));
    rewritten.push(json!({"role": "user", "content": "Thanks."}));
    let with_response = |messages: Value| {
        json!({"request": {"messages": messages}, "metadata": {"session_id": "s"},
               "response": response(json!(reply), None, 40)})
        .to_string()
    };
    for (second, cause) in [(again, None), (rewritten, Some("reply-rewritten"))] {
        let log = format!(
            "{}\n{}\n",
            with_response(first.clone()),
            with_response(Value::Array(second))
        );
        let (_, report, stderr) = audit(&["-", "--engine", "llama.cpp"], Some(log));
        let all = requests(&report);
        assert_eq!(all[0]["reply_tokens_exact"], false, "{stderr}");
        let first_tokens = all[0]["prompt_tokens"].as_u64().unwrap();
        let predicted = all[1]["predicted_cached_tokens"].as_u64().unwrap();
        match cause {
            None => {
                assert!(all[1]["break"].is_null(), "{}", all[1]);
                assert!(
                    predicted > first_tokens + 10,
                    "the reply's tokens are reused: {predicted} against {first_tokens}"
                );
            }
            Some(cause) => {
                assert_eq!(all[1]["break"]["cause"], cause, "{}", all[1]);
                assert_eq!(all[1]["break"]["path"], "messages[2].content");
                assert!(all[1]["break"]["tokens_lost"].as_u64().unwrap() > 5);
                assert!(predicted < first_tokens + 5, "{predicted}");
            }
        }
    }
}

/// Without session keys a request is paired with the earlier one sharing the longest
/// leading run of messages: a retry message that many conversations repeat does not pair
/// them, and a session's next turn is not a break.
#[test]
fn keyless_requests_pair_by_the_longest_leading_run() {
    let user = |t: &str| json!({"role": "user", "content": t});
    let assistant = |t: &str| json!({"role": "assistant", "content": t});
    let retry = "Your last answer was not valid JSON. Answer again, as JSON only.";
    let a = json!({"role": "system", "content": format!("Agent A. {SYSTEM}")});
    let b = json!({"role": "system", "content": format!("Agent B writes reports. {SYSTEM}")});
    let bodies = [
        json!([a.clone(), user("task a"), assistant("x"), user(retry)]),
        json!([b.clone(), user("task b"), assistant("y"), user(retry)]),
        json!([
            a.clone(),
            user("task a"),
            assistant("x"),
            user(retry),
            assistant("{}"),
            user("next a")
        ]),
        json!([
            b.clone(),
            user("task b"),
            assistant("y"),
            user(retry),
            assistant("{}"),
            user("next b")
        ]),
    ];
    let log: String = bodies
        .iter()
        .map(|m| format!("{}\n", json!({"messages": m})))
        .collect();
    let (code, report, stderr) = audit(&["-", "--engine", "llama.cpp"], Some(log));
    assert_eq!(code, 0, "{stderr}");
    let breaks: Vec<&Value> = requests(&report).iter().map(|r| &r["break"]).collect();
    assert!(breaks.iter().all(|b| b.is_null()), "{breaks:?}");
}

/// `tokens_lost` counts only what both requests have after the break: never more than the
/// new request has there, however long the earlier one was.
#[test]
fn tokens_lost_counts_only_tokens_both_requests_have() {
    let long: String = (0..60)
        .map(|i| format!("Rule {i}: cite the policy section for every answer.\n"))
        .collect();
    let lines = [
        record(
            "s",
            json!([{"role": "system", "content": format!("Time: 09:00\n{long}")}, {"role": "user", "content": "hi"}]),
            None,
        ),
        record(
            "s",
            json!([{"role": "system", "content": "Time: 09:05\nShort."}, {"role": "user", "content": "hi"}]),
            None,
        ),
    ];
    let (_, report, _) = audit(
        &["-", "--engine", "llama.cpp"],
        Some(lines.join("\n") + "\n"),
    );
    let r = &requests(&report)[1];
    let lost = r["break"]["tokens_lost"].as_u64().unwrap();
    let total = r["prompt_tokens"].as_u64().unwrap();
    assert!(lost < total, "{lost} lost of a {total}-token request");
    assert!(lost > 0, "the user turn is sent again: {r}");
}

/// The oldest turn dropped, the rest unchanged: `history-trimmed`. The system prompt or the
/// tools replaced wholesale: `prompt-switched`.
#[test]
fn trimmed_history_and_switched_prompts_have_their_causes() {
    let user = |t: &str| json!({"role": "user", "content": t});
    let assistant = |t: &str| json!({"role": "assistant", "content": t});
    let system = json!({"role": "system", "content": SYSTEM});
    let turns = [
        user("Weather in Paris?"),
        assistant("Sunny."),
        user("And in Rome?"),
        assistant("Warm."),
        user("And in Oslo?"),
    ];
    let mut full = vec![system.clone()];
    full.extend(turns[..3].iter().cloned());
    let mut trimmed = vec![system.clone()];
    trimmed.extend(turns[2..].iter().cloned());
    let planning = json!([{"role": "system", "content": "You are a planner. List the facts you know, then the steps to take."},
                          user("Weather in Paris?")]);
    let lines = [
        record("t", Value::Array(full), Some(weather_tool())),
        record("t", Value::Array(trimmed), Some(weather_tool())),
        record(
            "p",
            json!([system.clone(), user("Weather in Paris?")]),
            Some(weather_tool()),
        ),
        record("p", planning, None),
    ];
    let (_, report, _) = audit(
        &["-", "--engine", "llama.cpp"],
        Some(lines.join("\n") + "\n"),
    );
    let all = requests(&report);
    assert_eq!(all[1]["break"]["cause"], "history-trimmed", "{}", all[1]);
    assert_eq!(all[1]["break"]["path"], "messages[1]");
    assert_eq!(all[3]["break"]["cause"], "prompt-switched", "{}", all[3]);
}

fn python() -> PathBuf {
    std::env::var_os("PREFIXLINT_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join(".venv/bin/python"))
}

/// One framework live: the OpenAI Agents SDK against a fresh one-slot llama.cpp server,
/// through the logging proxy; `audit` predicts every request's prompt and cached tokens.
#[test]
fn openai_agents_live_against_llama_cpp_is_predicted_exactly() {
    let server = support::llama::LlamaServer::start_with(&["--parallel", "1", "--cache-ram", "0"]);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("agents.jsonl");
    let status = std::process::Command::new(python())
        .arg(repo().join("tests/audit_support/agent_runs.py"))
        .args([
            "--url",
            &server.url,
            "--framework",
            "openai-agents",
            "--out",
        ])
        .arg(&log)
        .status()
        .expect("agent_runs.py runs");
    assert!(status.success(), "agent_runs.py failed");
    let (code, report, stderr) = audit(&[log.to_str().unwrap(), "--engine", "llama.cpp"], None);
    assert_eq!(code, 0, "{stderr}");
    let all = requests(&report);
    assert!(all.len() >= 6, "{report}");
    for r in all {
        assert_eq!(r["prompt_tokens"], r["logged_prompt_tokens"], "{r}");
        assert_eq!(
            r["predicted_cached_tokens"], r["logged_cached_tokens"],
            "line {}",
            r["line"]
        );
    }
}

/// The llama.cpp server view against the server itself: the request shapes agents send that
/// the fixture does not cover (a tool without description or parameters, `strict`, text
/// parts, `content: null` and no `content` beside tool calls, escaped non-ASCII and
/// padded numbers in arguments) render to what `/apply-template` renders, token for token.
#[test]
fn the_llama_cpp_view_renders_what_the_server_renders() {
    let server = support::llama::LlamaServer::start_with(&["--parallel", "1", "--cache-ram", "0"]);
    let call = |id: &str, name: &str, arguments: &str| json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}});
    let request = json!({
        "tools": [
            {"type": "function", "function": {"name": "get_weather", "strict": true,
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}},
            {"type": "function", "function": {"description": "No parameters.", "name": "now"}}
        ],
        "messages": [
            {"role": "system", "content": [{"type": "text", "text": SYSTEM}, {"type": "text", "text": "Be brief."}]},
            {"role": "user", "content": "Weather in München?"},
            {"role": "assistant", "content": null,
             "tool_calls": [call("c1", "get_weather", "{\"city\":\"M\\u00fcnchen\",\"days\":1.50}")]},
            {"role": "tool", "tool_call_id": "c1", "content": "rain"},
            {"role": "assistant", "tool_calls": [call("c2", "now", "{}")]},
            {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "09:00"}, {"type": "text", "text": "UTC"}]},
            {"role": "assistant", "content": "Checking.", "tool_calls": [call("c3", "get_weather", "{\"city\": \"<Zürich & Bern>\"}")]},
            {"role": "tool", "tool_call_id": "c3", "content": "fog"}
        ]
    });
    let prompt = server.post("/apply-template", &request)["prompt"]
        .as_str()
        .expect("a prompt")
        .to_owned();
    let tokens = server.post(
        "/tokenize",
        &json!({"content": prompt, "add_special": true, "parse_special": true}),
    )["tokens"]
        .as_array()
        .expect("tokens")
        .len();
    let log = format!("{}\n", json!({"request": request}));
    let (code, report, stderr) = audit(&["-", "--engine", "llama.cpp"], Some(log));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        requests(&report)[0]["prompt_tokens"],
        json!(tokens),
        "the server's prompt:\n{prompt}"
    );
}
