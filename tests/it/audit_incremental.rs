//! `prefixlint audit` encodes a session's prompt from its previous one (issue 30 §1): the
//! tokens before the restart point are taken over, only the rest is encoded. These tests prove
//! the ids and offsets equal a whole encode, on every request, for each tokenizer family the
//! repository supports: byte-level BPE (the embedded Qwen3, Llama 3), tiktoken (`o200k_base`,
//! `cl100k_base`) and SentencePiece-style BPE (Llama 2, Gemma 3).
//!
//! - the agent-framework traffic of `tests/fixtures/audit-agents/` (real requests);
//! - generated sessions with text chosen to sit on the restart points (whitespace runs,
//!   special-token texts inside messages, NFD and CJK text, edited history);
//! - random pairs of texts sharing a prefix (a property test, deterministic seeds).
//!
//! Each also checks that the restart point is used (not 0) where the texts share a turn, so
//! the equality is not that of two whole encodes.

use crate::support;
use crate::support::Rng;

use prefixlint::audit::input;
use prefixlint::audit::input::RequestBody;
use prefixlint::audit::request::{ChatValues, Prompt, RequestBuilder};
use prefixlint::audit::server_view::ServerView;
use prefixlint::audit::session::SessionKey;
use prefixlint::tokenize::bpe::{BpeParts, ByteLevelBpe};
use prefixlint::tokenize::{builtin_json, tiktoken, Tokens};
use serde_json::json;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use support::tokenizers::real_tokenizer;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A tokenizer family: the audit's request builder for it, and its engine on its own (to
/// ask where encoding restarts).
struct Family {
    name: &'static str,
    builder: RequestBuilder,
    bpe: ByteLevelBpe,
}

fn family(
    name: &'static str,
    tokenizer: &str,
    template: Option<PathBuf>,
    parts: BpeParts,
) -> Family {
    let settings = prefixlint::settings::Settings {
        tokenizer: tokenizer.to_owned(),
        chat: prefixlint::settings::ChatSettings {
            template: template.map(|path| prefixlint::settings::ChatTemplatePath {
                path,
                given: prefixlint::settings::Given::Flag,
            }),
            ..prefixlint::settings::Settings::default().chat
        },
        ..prefixlint::settings::Settings::default()
    };
    let builder = RequestBuilder::load(&settings).unwrap_or_else(|e| panic!("{name}: {e:?}"));
    let bpe = ByteLevelBpe::new(parts).expect("the engine builds");
    Family { name, builder, bpe }
}

fn families() -> Vec<Family> {
    let qwen_template = repo().join("assets/qwen3/tokenizer_config.json");
    let fixture = |name: &str| repo().join("tests/fixtures/audit-incremental").join(name);
    let file = |name: &str| {
        let path = real_tokenizer(name);
        let parts = BpeParts::from_tokenizer_json(&std::fs::read(&path).unwrap())
            .unwrap_or_else(|| panic!("{name}: not on the fast engine"));
        (path.display().to_string(), parts)
    };
    let tiktoken = |encoding: tiktoken::Encoding| encoding.parts().expect("embedded ranks");
    let (llama3, llama3_parts) = file("llama3");
    let (llama2, llama2_parts) = file("llama2");
    let (gemma3, gemma3_parts) = file("gemma3");
    vec![
        family(
            "qwen3 (byte-level BPE)",
            "builtin",
            None,
            BpeParts::from_tokenizer_json(&builtin_json().unwrap()).unwrap(),
        ),
        family(
            "llama3 (byte-level BPE)",
            &llama3,
            Some(qwen_template.clone()),
            llama3_parts,
        ),
        family(
            "o200k_base (tiktoken)",
            "o200k_base",
            Some(qwen_template.clone()),
            tiktoken(tiktoken::Encoding::O200kBase),
        ),
        family(
            "cl100k_base (tiktoken)",
            "cl100k_base",
            Some(qwen_template),
            tiktoken(tiktoken::Encoding::Cl100kBase),
        ),
        family(
            "llama2 (SentencePiece-style BPE)",
            &llama2,
            Some(fixture("llama2.jinja")),
            llama2_parts,
        ),
        family(
            "gemma3 (SentencePiece-style BPE)",
            &gemma3,
            Some(fixture("gemma.jinja")),
            gemma3_parts,
        ),
    ]
}

/// Where two token lists first differ, for the failure message.
fn first_difference(a: &Tokens, b: &Tokens) -> String {
    let at = a
        .ids
        .iter()
        .zip(&a.offsets)
        .zip(b.ids.iter().zip(&b.offsets))
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    format!(
        "first difference at token {at}: {:?} vs {:?} (lengths {} and {})",
        a.ids.get(at).zip(a.offsets.get(at)),
        b.ids.get(at).zip(b.offsets.get(at)),
        a.len(),
        b.len()
    )
}

/// Replies tried after every prompt: text that merges with the generation prompt's end, a
/// special token's text, line breaks and spaces where the restart points are.
const REPLIES: [&str; 6] = [
    "Sure.",
    "\n\nDone, see below:\n- one\n- two",
    " spaced  out ",
    "<|im_end|>\n<|im_start|>user\nagain",
    "<think>\nplan\n</think>\n\nok",
    "",
];

/// Audits a log's requests as `prefixlint audit --engine llama.cpp` builds them, each from
/// its session's previous prompt (and with the template values of the messages it repeats),
/// and compares every one with a whole encode (and its text with a render from scratch).
/// Returns (requests with a previous prompt, of them those that restarted after 0).
fn check_log(family: &Family, log: &Path) -> (usize, usize) {
    let builder = &family.builder;
    let mut last: HashMap<Option<String>, (Prompt, RequestBody, ChatValues)> = HashMap::new();
    let (mut with_earlier, mut restarted) = (0, 0);
    let file = log.display().to_string();
    input::read_all(
        std::slice::from_ref(&file),
        None,
        &SessionKey::Defaults,
        input::DEFAULT_MAX_LINE_BYTES,
        |_, logged| {
            let body = ServerView::LlamaCpp
                .apply(&logged.body)
                .unwrap_or_else(|why| panic!("{file}:{}: {why}", logged.line));
            let before = last.get(&logged.session);
            let earlier = before.map(|(prompt, _, _)| prompt);
            let (prompt, values) = builder.prompt_sharing(
                &body,
                logged.time,
                earlier,
                before.map(|(_, body, values)| (body, values)),
            )?;
            let fresh = builder.prompt(&body, logged.time, None)?;
            assert!(
                prompt.text == fresh.text,
                "{}: {file}:{}: the text with the earlier request's template values differs",
                family.name,
                logged.line
            );
            let whole = builder.tokens_of(&body, &prompt.text)?;
            assert!(
                prompt.tokens == whole,
                "{}: {file}:{}: incremental ids differ from a whole encode; {}",
                family.name,
                logged.line,
                first_difference(&prompt.tokens, &whole)
            );
            // A reply's tokens after the prompt, encoded from the restart point, are those of
            // the prompt and reply encoded whole, past the prompt's.
            let logged_reply = logged.reply.as_ref().map(|r| r.generated_text.as_str());
            for reply in logged_reply.into_iter().chain(REPLIES) {
                let all = builder
                    .engine
                    .encode_chat(&format!("{}{reply}", prompt.text))?;
                let n = prompt.tokens.ids.len();
                let whole = (all.ids.len() >= n && all.ids[..n] == prompt.tokens.ids[..])
                    .then(|| all.ids[n..].to_vec());
                assert_eq!(
                    builder.reply_tokens(&prompt, reply)?,
                    whole,
                    "{}: {file}:{}: the reply {reply:?}",
                    family.name,
                    logged.line
                );
            }
            if let Some(e) = earlier {
                with_earlier += 1;
                if family.bpe.reuse_boundary(&e.text, &e.tokens, &prompt.text) > 0 {
                    restarted += 1;
                }
            }
            last.insert(logged.session, (prompt, body, values));
            Ok(())
        },
    )
    .unwrap();
    (with_earlier, restarted)
}

#[test]
fn agent_framework_requests_encode_incrementally_as_whole() {
    let log = repo().join("tests/fixtures/audit-agents/agents.jsonl");
    for family in families() {
        let (with_earlier, restarted) = check_log(&family, &log);
        eprintln!(
            "{}: {with_earlier} requests after one of their session, {restarted} restarted",
            family.name
        );
        assert!(with_earlier >= 12, "{}: {with_earlier}", family.name);
        // A trimmed history diverges before any restart point; Gemma's longest added
        // token (93 bytes) keeps its last turn markers out of reach, so it restarts earlier.
        assert!(
            restarted * 3 >= with_earlier * 2,
            "{}: only {restarted} of {with_earlier} requests restarted after 0",
            family.name
        );
    }
}

/// Text that sits on restart points: whitespace around newlines, every family's special
/// token texts (whole and cut), NFD and CJK text, emoji, digits, code.
const PIECES: &[&str] = &[
    "\n",
    "\n\n",
    " ",
    "   ",
    "\t",
    "\r\n",
    "\n  indented",
    "word",
    "Zq",
    "0",
    "2026",
    "'s",
    ".",
    "é",
    "e\u{301}",
    "東京",
    "😀",
    "\u{a0}",
    "<|im_start|>",
    "<|im_end|>",
    "<|im_",
    "<s>",
    "</s>",
    "[INST]",
    "<start_of_turn>",
    "<end_of_turn>",
    "<start_of",
    "<bos>",
    "user",
    "model\n",
    "{\"id\": 7}",
    "/",
    "\n// path/to",
    "fn main() {\n    x\n}",
];

fn random_text(rng: &mut Rng, pieces: usize) -> String {
    (0..pieces).map(|_| rng.pick(PIECES)).collect()
}

/// A log of interleaved sessions in the records format (as `bench/audit.py` writes them),
/// with tricky message text, tools in every third session, and edited history: a session
/// sometimes drops its oldest turn or rewrites its system prompt's clock.
fn generated_log(requests: usize, seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let tools = json!([{"type": "function", "function": {"name": "lookup", "description": "Find an order.",
        "parameters": {"type": "object", "properties": {"id": {"type": "string"}}}}}]);
    struct Live {
        id: String,
        messages: Vec<serde_json::Value>,
        tools: bool,
    }
    let mut live: Vec<Live> = Vec::new();
    let mut out = String::new();
    for n in 0..requests {
        if live.len() < 6 || rng.below(5) == 0 {
            let system = format!(
                "Current time: 2026-11-30T{:02}:{:02}:00Z\nRules:\n- be brief\n{}",
                n % 24,
                n % 60,
                random_text(&mut rng, 6)
            );
            live.push(Live {
                id: format!("s{n}"),
                messages: vec![json!({"role": "system", "content": system})],
                tools: n % 3 == 0,
            });
        }
        let i = rng.below(live.len());
        let session = &mut live[i];
        match rng.below(10) {
            // The oldest turn dropped (a trimmed history).
            0 if session.messages.len() > 4 => {
                session.messages.drain(1..3);
            }
            // The clock in the system prompt rewritten.
            1 => {
                session.messages[0]["content"] =
                    json!(format!("Current time: {n}\nRules:\n- be brief"));
            }
            _ => {}
        }
        let pieces = 1 + rng.below(12);
        session
            .messages
            .push(json!({"role": "user", "content": random_text(&mut rng, pieces)}));
        let mut body = json!({"model": "m", "messages": session.messages});
        if session.tools {
            body["tools"] = tools.clone();
        }
        let record = json!({"request": body, "metadata": {"session_id": session.id}});
        out.push_str(&record.to_string());
        out.push('\n');
        let pieces = 1 + rng.below(8);
        session
            .messages
            .push(json!({"role": "assistant", "content": random_text(&mut rng, pieces)}));
        if session.messages.len() > 13 {
            live.swap_remove(i);
        }
    }
    out
}

#[test]
fn generated_sessions_encode_incrementally_as_whole() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sessions.jsonl");
    std::fs::write(&log, generated_log(300, 0x9e37_79b9_7f4a_7c15)).unwrap();
    for family in families() {
        let (with_earlier, restarted) = check_log(&family, &log);
        eprintln!(
            "{}: {with_earlier} requests after one of their session, {restarted} restarted",
            family.name
        );
        assert!(with_earlier >= 200, "{}: {with_earlier}", family.name);
        // Random text can leave no restart point in a short session; most have one.
        assert!(
            restarted * 2 >= with_earlier,
            "{}: only {restarted} of {with_earlier} requests restarted after 0",
            family.name
        );
    }
}

/// The property itself, on the engines the audit loads: for any two texts, encoding the
/// second knowing the first and its tokens equals encoding it whole.
#[test]
fn any_text_encodes_after_any_other_as_whole() {
    for family in families() {
        let engine = &*family.builder.engine;
        let mut rng = Rng::new(0x2545_f491_4f6c_dd1d);
        let mut restarted = 0;
        const PAIRS: usize = 300;
        for case in 0..PAIRS {
            let pieces = rng.below(40);
            let shared = random_text(&mut rng, pieces);
            let tails = (rng.below(12), rng.below(12));
            let a = format!("{shared}{}", random_text(&mut rng, tails.0));
            let b = format!("{shared}{}", random_text(&mut rng, tails.1));
            let a_tokens = engine.encode_chat(&a).unwrap();
            let got = engine.encode_chat_after(&a, &a_tokens, &b).unwrap();
            let whole = engine.encode_chat(&b).unwrap();
            assert!(
                got == whole,
                "{}: case {case}: {a:?} then {b:?}: {}",
                family.name,
                first_difference(&got, &whole)
            );
            if family.bpe.reuse_boundary(&a, &a_tokens, &b) > 0 {
                restarted += 1;
            }
        }
        eprintln!("{}: {restarted} of {PAIRS} pairs restarted", family.name);
        assert!(restarted >= PAIRS / 4, "{}: {restarted}", family.name);
    }
}
