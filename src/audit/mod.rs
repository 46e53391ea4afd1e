//! `prefixlint audit`: the cache breaks in real traffic.
//!
//! A request log is read as a stream ([`input`]); every request is seen as the engine's
//! request model sees it ([`server_view`]), rendered and tokenized as the server did
//! ([`request`]), matched with the request it should have extended ([`session`]), given the
//! cached tokens the engine profile predicts ([`predict`]: with the reply the engine kept),
//! and, where its prompt stops extending that request, a located and classified break
//! ([`breaks`]). A request that cannot be rendered is reported as not audited, and the next
//! one is not compared with an older one. What a response says about the cache is read in
//! its API's own convention ([`usage`]) and summed over the log ([`hosted`]: reads per
//! write, writes by TTL tier, "written, then missed", the server's miss reasons against the
//! breaks). [`report`] prints the result. Memory is bounded by the cache model (sessions and
//! a window of recent prompts), not by the log.

pub mod attribute;
pub mod breaks;
pub mod doc;
pub mod group;
pub mod hosted;
pub mod input;
pub mod merge;
pub mod missed;
pub mod pointer;
pub mod predict;
pub mod raw_messages;
pub mod replay;
pub mod report;
pub mod request;
pub mod server_view;
pub mod session;
pub mod usage;

use crate::analyse::common_prefix;
use crate::cache_profile::CacheProfile;
use crate::error::{Error, Result};
use crate::rules::VolatileFields;
use crate::settings::Settings;
use breaks::Break;
use input::{InputFormat, Logged, RequestBody, Skipped};
use request::{ChatValues, Prompt, RequestBuilder};
use serde::Serialize;
use serde_json::Value as Json;
use server_view::ServerView;
use session::{Kept, SessionKey, Sessions, WINDOW};
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Weak};

pub const REPORT_VERSION: u32 = 1;

pub struct AuditOptions {
    /// Log files; `-` is stdin.
    pub inputs: Vec<String>,
    /// The tokenizer, chat template and limits ([`Settings::resolve`]).
    pub settings: Settings,
    /// The engine profile: the settings', with what the command found beside the logs.
    pub engine: CacheProfile,
    /// Where a figure of the engine profile came from, when not from the flags (a scrape).
    pub engine_source: Option<String>,
    pub session_key: SessionKey,
    pub input_format: Option<InputFormat>,
    pub max_line_bytes: usize,
    pub fields: VolatileFields,
    /// `--templates DIR`, rendered: breaks are traced back to their template lines.
    pub templates: Option<attribute::Templates>,
}

/// The whole report, for callers that want it in memory ([`run`]); the command streams it
/// instead ([`Auditor::run`] with [`report::AuditWriter`]).
#[derive(Debug, Serialize)]
pub struct AuditReport {
    pub version: u32,
    pub engine: String,
    pub chat_template: String,
    pub requests: Vec<RequestAudit>,
    pub summary: Summary,
    /// Where each request that was not audited came in the log: after this many audited
    /// ones (the report lists them in the summary; the text formats in log order).
    #[serde(skip)]
    pub not_audited_after: Vec<usize>,
}

impl AuditReport {
    /// The requests, audited or not, in log order (the whole report keeps at most the
    /// first not-audited ones in memory: the others are in the summary's file).
    pub fn entries(&self) -> impl Iterator<Item = Entry<'_>> {
        let failures = self.summary.not_audited.first();
        let mut f = 0;
        let mut out = Vec::with_capacity(self.requests.len() + failures.len());
        for (i, r) in self.requests.iter().enumerate() {
            while f < failures.len() && self.not_audited_after.get(f).is_some_and(|&a| a <= i) {
                out.push(Entry::NotAudited(&failures[f]));
                f += 1;
            }
            out.push(Entry::Audited(r));
        }
        out.extend(failures[f..].iter().map(Entry::NotAudited));
        out.into_iter()
    }
}

/// What the report says before its requests.
#[derive(Debug, Clone)]
pub struct Head {
    pub version: u32,
    pub engine: String,
    pub chat_template: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct RequestAudit {
    pub file: String,
    pub line: usize,
    pub session: Option<String>,
    pub prompt_tokens: usize,
    pub predicted_cached_tokens: usize,
    pub logged_cached_tokens: Option<usize>,
    /// The prompt tokens the server counted, where the log says (cached ones included,
    /// whichever convention the API logs them in).
    pub logged_prompt_tokens: Option<usize>,
    /// The tokens the server wrote to its cache, where the API reports writes (Anthropic,
    /// Bedrock, OpenTelemetry, OpenInference).
    pub logged_cache_write_tokens: Option<usize>,
    /// The server's own reason for a miss (Anthropic's `diagnostics.cache_miss_reason.type`).
    pub server_miss_reason: Option<String>,
    /// Whether the reply's tokens the engine keeps in its cache are exact (from the
    /// response's token ids) or from its text (`false`: tokenized after the prompt, which
    /// may differ from what was generated); `null` where no reply is logged or the engine
    /// keeps none.
    pub reply_tokens_exact: Option<bool>,
    #[serde(rename = "break")]
    pub break_: Option<Break>,
}

/// The figures over the whole log: sums and bounded lists, so a run keeps no per-request
/// state (the missed hits, one per request at worst, wait in a temporary file past a few).
#[derive(Debug, Serialize, Default)]
pub struct Summary {
    pub requests: usize,
    /// Of `requests`, those without a session key: matched with recent session-less requests
    /// instead of their session's previous (and, in a partitioned audit, audited in the
    /// fallback group).
    pub requests_without_session: usize,
    pub prompt_tokens: usize,
    pub predicted_cached_tokens: usize,
    /// Over the requests whose log carries a cached-token count.
    pub logged_cached_tokens: usize,
    pub requests_with_logged_cache: usize,
    pub tokens_lost_by_cause: BTreeMap<String, usize>,
    pub breaks: usize,
    pub worst_sessions: Vec<SessionLoss>,
    /// Requests that shared a prefix with an earlier one but got no hit.
    pub missed_hits: missed::MissedHits,
    /// Requests read but not audited (the server's request model or the chat template
    /// fails on them), every one with why.
    pub not_audited: missed::Spilled<NotAudited>,
    pub skipped_lines: usize,
    /// The first skipped lines (not a request), with why.
    pub skipped: Vec<Skipped>,
    /// Cache writes, where the API logs them: reads per write and the writes by TTL tier.
    pub cache_writes: hosted::CacheWrites,
    /// Requests missed because they were sent before the previous one's cache write was
    /// visible (also under `tokens_lost_by_cause`).
    pub written_then_missed: hosted::WrittenThenMissed,
    /// The server's miss reasons (Anthropic's cache diagnostics) against prefixlint's finding.
    pub miss_reason_agreement: hosted::Agreement,
    /// Spent, saved by cache reads and lost by cause, in dollars at the hosted model's
    /// prices; absent for engines without prices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<crate::cost::AuditCost>,
    /// The cached tokens the cost is computed with: as logged where the log says, else
    /// as predicted.
    #[serde(skip)]
    billed_cached_tokens: usize,
}

/// A request that was read but could not be rendered as the server would.
#[derive(Debug, Clone, Serialize)]
pub struct NotAudited {
    pub file: String,
    pub line: usize,
    pub session: Option<String>,
    pub reason: String,
}

/// What the audit says about one request, in log order.
pub enum Entry<'a> {
    Audited(&'a RequestAudit),
    NotAudited(&'a NotAudited),
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct SessionLoss {
    pub session: String,
    pub requests: usize,
    pub breaks: usize,
    pub tokens_lost: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct MissedHit {
    pub file: String,
    pub line: usize,
    pub session: Option<String>,
    pub shared_tokens: usize,
    /// `ttl` (the earlier request is older than the cache keeps), else `eviction-or-routing`.
    pub reason: &'static str,
}

/// A request seen earlier, as the cache model remembers it. Thousands are kept (the last
/// request of each session), so in a small form: the body (shared with its full form; its
/// messages mostly with the session's next request), the prompt's text and token ids. The
/// [`RECENT`] last requests also have their [`Full`] form.
pub(crate) struct Seen {
    /// (Serializing it to JSON text when the full form left `recent` took 40% of this serial
    /// thread on the bench log.)
    body: Arc<RequestBody>,
    text: Box<str>,
    ids: Box<[u32]>,
    time: Option<f64>,
    /// When its response was complete, where the log says.
    done: Option<f64>,
    model: Option<Box<str>>,
    /// How long the longest-lived entry its response wrote lives (a TTL tier: Anthropic's 1 h,
    /// OpenAI's 12 h), where the log says.
    written_ttl: Option<f64>,
    /// While the request is among the recent ones.
    full: Weak<Full>,
    /// The reply's tokens the engine keeps after the prompt (none for engines that keep
    /// only prompts).
    reply_ids: Box<[u32]>,
    /// The reply as the client got it, in the server's view (what it should send back).
    reply: Option<Json>,
}

impl Seen {
    /// The tokens of `ids` the engine finds in its cache after this request: its prompt,
    /// then the reply it kept.
    fn cached_prefix(&self, ids: &[u32]) -> usize {
        let shared = common_prefix(&self.ids, ids);
        if shared < self.ids.len() {
            return shared;
        }
        shared + common_prefix(&self.reply_ids, &ids[shared..])
    }
}

/// A request as built: its parsed body and its prompt with the token offsets (what a break
/// is located with, and what the next prompt of its session is encoded after).
pub(crate) struct Full {
    body: Arc<RequestBody>,
    prompt: Prompt,
    /// Its messages' template values, for the session's next request.
    values: ChatValues,
}

impl Full {
    /// What the next request of its session is built after: its prompt, body and values.
    fn earlier(&self) -> Earlier<'_> {
        (&self.prompt, &*self.body, &self.values)
    }
}

/// What a built request's prompt, body and template values take in memory, about: the text
/// four times (the prompt, the messages as text and parsed, their template values), each
/// token's id and offsets, and each message's maps and path. (On the bench log, keeping
/// [`KEPT_BYTES`] of them adds about as much to the peak RSS: 139 -> 242 MB.)
pub(crate) fn built_bytes(prompt: &Prompt, body: &RequestBody) -> usize {
    let tokens = &prompt.tokens;
    4 * prompt.text.len()
        + tokens.ids.capacity() * std::mem::size_of::<u32>()
        + tokens.offsets.capacity() * std::mem::size_of::<(usize, usize)>()
        + body.messages.len() * 1024
}

/// What the build side keeps of the sessions' last requests ([`built_bytes`]), for their
/// next ones: about 4,000 sessions of the bench log (`bench/audit.py`, 24 kB a request), a
/// few dozen long agent sessions; past it the least recently used are built whole again.
pub(crate) const KEPT_BYTES: usize = 96 << 20;

/// A request built before, that the next of its session likely extends: its prompt, its
/// body in the server's view and its messages' template values.
type Earlier<'a> = (&'a Prompt, &'a RequestBody, &'a ChatValues);

/// A prompt built for a logged request, its body in the server's view (with its messages'
/// template values), and the reply tokens the engine keeps (made in parallel too), with the
/// copies its small form keeps ([`Seen`]: made here, on the pool, not in the serial loop).
struct Built {
    full: Arc<Full>,
    text: Box<str>,
    ids: Box<[u32]>,
    reply_ids: Vec<u32>,
    reply_exact: Option<bool>,
    /// The reply as the client got it, in the server's view (where the engine keeps replies).
    reply: Option<Json>,
    /// The break after the request this one was built after (its session's previous), found
    /// here on the pool where this prompt does not extend that one's: the serial side takes
    /// it when its own earlier request is that one (by identity), else finds it itself.
    found_after: Option<(Weak<Full>, Option<Break>)>,
}

/// The server's view of a logged request, its prompt and the reply tokens kept; or why it
/// cannot be built.
fn build(
    builder: &RequestBuilder,
    view: ServerView,
    (keeps_replies, fields): (bool, &VolatileFields),
    logged: &Logged,
    body: RequestBody,
    earlier_full: Option<&Arc<Full>>,
) -> std::result::Result<Built, String> {
    let earlier = earlier_full.map(|full| full.earlier());
    let body = view
        .apply_sharing(body, earlier.map(|(_, body, _)| body))
        .map_err(|why| format!("the server's request model refuses it: {why}"))?;
    let earlier_prompt = earlier.map(|(prompt, _, _)| prompt);
    let (prompt, values) = match view.own_text(&body) {
        Some(text) => (
            builder
                .prompt_of_text(&body, text, earlier_prompt)
                .map_err(|e| format!("it does not tokenize: {e}"))?,
            ChatValues::default(),
        ),
        None => builder
            .prompt_sharing(
                &body,
                logged.time,
                earlier_prompt,
                earlier.map(|(_, body, values)| (body, values)),
            )
            .map_err(|e| format!("the chat template fails on it: {e}"))?,
    };
    let (mut reply_ids, reply_exact) = match (&logged.reply, keeps_replies) {
        (Some(reply), true) => match &reply.generated_ids {
            Some(ids) => (ids.clone(), Some(true)),
            None => (
                builder
                    .reply_tokens(&prompt, &reply.generated_text)
                    .map_err(|e| format!("its reply does not tokenize: {e}"))?
                    .unwrap_or_default(),
                Some(false),
            ),
        },
        _ => (Vec::new(), None),
    };
    // The last generated token is sampled, never evaluated: the cache holds the others.
    let kept = logged
        .reply
        .as_ref()
        .and_then(|r| r.completion_tokens)
        .unwrap_or(reply_ids.len())
        .saturating_sub(1)
        .min(reply_ids.len());
    reply_ids.truncate(kept);
    let reply = match (&logged.reply, keeps_replies) {
        (Some(r), true) => view.message(&r.message).ok(),
        _ => None,
    };
    let found_after = earlier_full
        .filter(|e| !breaks::extends(&e.prompt.text, &prompt.text))
        .map(|e| {
            let found = breaks::find((&e.body, &e.prompt), (&body, &prompt), fields);
            (Arc::downgrade(e), found)
        });
    Ok(Built {
        found_after,
        text: prompt.text.clone().into_boxed_str(),
        ids: prompt.tokens.ids.clone().into_boxed_slice(),
        full: Arc::new(Full {
            body: Arc::new(body),
            prompt,
            values,
        }),
        reply_ids,
        reply_exact,
        reply,
    })
}

impl Seen {
    /// The full form: kept while recent, else built again (the body parsed, the text
    /// encoded: the tokens are the same).
    fn full(&self, builder: &RequestBuilder) -> Result<Arc<Full>> {
        if let Some(full) = self.full.upgrade() {
            return Ok(full);
        }
        let tokens = builder.tokens_of(&self.body, &self.text)?;
        Ok(Arc::new(Full {
            body: self.body.clone(),
            prompt: Prompt {
                text: self.text.to_string(),
                tokens,
            },
            values: ChatValues::default(),
        }))
    }
}

/// What the serial loop lets go of, freed on the pool a batch at a time: freeing a request's
/// parsed body, prompt and values took 7% of the CPU on this serial thread. (A request no
/// longer held elsewhere is freed with the last `Arc` let go here.)
#[derive(Default)]
struct Release {
    fulls: Vec<Arc<Full>>,
    seens: Vec<Arc<Seen>>,
}

impl Release {
    fn full(&mut self, full: Arc<Full>) {
        self.fulls.push(full);
        self.when_full();
    }

    fn seen(&mut self, seen: Option<Arc<Seen>>) {
        self.seens.extend(seen);
        self.when_full();
    }

    fn when_full(&mut self) {
        if self.fulls.len() + self.seens.len() >= 2 * BATCH {
            self.now();
        }
    }

    fn now(&mut self) {
        let gone = std::mem::take(self);
        rayon::spawn(move || drop(gone));
    }
}

/// How closely a session-less request continues an earlier one: the leading run of
/// messages, the run after a differing system message, then the shared prompt tokens.
type Affinity = (usize, usize, usize);

/// Requests kept in full (at least [`WINDOW`]): a session's next request usually comes
/// within them, so its prompt is encoded after this one's.
const RECENT: usize = 512;

const WORST_SESSIONS: usize = 5;
/// Requests whose prompts are built together, in parallel.
const BATCH: usize = 256;

/// A session the cache model remembers: its last request (`None` when that one could not
/// be built: the next is compared with nothing rather than an older one) and what it has
/// lost so far.
struct Tracked {
    seen: Option<Arc<Seen>>,
    loss: SessionLoss,
}

/// The [`WORST_SESSIONS`] sessions that lost the most, among those the cache model has
/// forgotten: a session is offered when it leaves the model (or at the end), and taken back
/// if it comes again, so its totals go on. (One that comes again after leaving without a
/// place here starts from zero: exact while at most `MAX_SESSIONS` sessions overlap.)
#[derive(Default)]
struct WorstSessions(Vec<SessionLoss>);

impl WorstSessions {
    fn offer(&mut self, loss: SessionLoss) {
        if loss.tokens_lost == 0 {
            return;
        }
        self.0.push(loss);
        self.0.sort_by(|a, b| {
            b.tokens_lost
                .cmp(&a.tokens_lost)
                .then(a.session.cmp(&b.session))
        });
        self.0.truncate(WORST_SESSIONS);
    }

    fn take(&mut self, session: &str) -> Option<SessionLoss> {
        let at = self.0.iter().position(|s| s.session == session)?;
        Some(self.0.remove(at))
    }
}

/// A loaded audit: the chat template and tokenizer, ready to read logs.
pub struct Auditor<'a> {
    options: &'a AuditOptions,
    builder: RequestBuilder,
    view: ServerView,
}

/// The whole report in memory (the command streams it: [`Auditor::run`]).
pub fn run(options: &AuditOptions) -> Result<AuditReport> {
    let auditor = Auditor::load(options)?;
    let mut requests = Vec::new();
    let mut not_audited_after = Vec::new();
    let summary = auditor.run(|entry| {
        match entry {
            Entry::Audited(r) => requests.push(r.clone()),
            Entry::NotAudited(_) => not_audited_after.push(requests.len()),
        }
        Ok(())
    })?;
    let head = auditor.head();
    Ok(AuditReport {
        version: head.version,
        engine: head.engine,
        chat_template: head.chat_template,
        requests,
        summary,
        not_audited_after,
    })
}

impl<'a> Auditor<'a> {
    pub fn load(options: &'a AuditOptions) -> Result<Auditor<'a>> {
        let builder = RequestBuilder::load(&options.settings)?;
        let view = match ServerView::of(&options.engine) {
            // A chat template the user names is taken at its word, over the API's order.
            ServerView::ApiCacheOrder if options.settings.chat.template.is_some() => {
                ServerView::AsSent
            }
            view => view,
        };
        Ok(Auditor {
            options,
            builder,
            view,
        })
    }

    pub fn head(&self) -> Head {
        Head {
            version: REPORT_VERSION,
            engine: match &self.options.engine_source {
                Some(source) => format!("{} ({source})", self.options.engine.describe()),
                None => self.options.engine.describe(),
            },
            chat_template: match self.view {
                ServerView::ApiCacheOrder => {
                    "none: the API's cache order (tools, system, messages)".to_owned()
                }
                _ => self.builder.chat_template_display.clone(),
            },
        }
    }

    /// Reads the logs, handing each request's audit to `each` in log order as it is done;
    /// returns the summary. Nothing per request is kept.
    pub fn run(&self, each: impl FnMut(Entry<'_>) -> Result<()>) -> Result<Summary> {
        let options = self.options;
        let (inputs, forced, key, max_line_bytes) = (
            &options.inputs,
            options.input_format,
            &options.session_key,
            options.max_line_bytes,
        );
        let summary = self.run_from(
            |each| input::read_all(inputs, forced, key, max_line_bytes, each),
            each,
            None,
        )?;
        if summary.requests == 0 && summary.not_audited.is_empty() {
            let why = summary
                .skipped
                .first()
                .map(|s| format!(" ({}:{}: {})", s.file, s.line, s.reason))
                .unwrap_or_default();
            return Err(Error::input_with_help(
                format!(
                    "{}: no request could be read{why}",
                    options.inputs.join(", ")
                ),
                "audit reads request logs: records {\"request\", \"response\", \"metadata\"}, bare request bodies, OpenAI Batch lines, LiteLLM logging payloads or OTLP JSON spans (--input-format forces one)",
            ));
        }
        Ok(summary)
    }

    /// [`Self::run`] over the requests `read` hands over (in log order; it returns the lines
    /// it skipped), and without the error for a log with no request. `keyed`, when given,
    /// gets each request's [`replay::CacheKey`] as it is audited: the first phase of a
    /// partitioned audit ([`group`]).
    ///
    /// Prompts are built in parallel a batch at a time (they are independent), on their own
    /// thread a batch ahead of the cache model ([`BuildSide`]); the cache model then takes them
    /// in log order ([`CacheModel`]).
    pub fn run_from(
        &self,
        read: impl FnOnce(&mut dyn FnMut(&str, Logged) -> Result<()>) -> Result<input::SkipLog> + Send,
        each: impl FnMut(Entry<'_>) -> Result<()>,
        keyed: Option<&mut dyn FnMut(replay::CacheKey) -> Result<()>>,
    ) -> Result<Summary> {
        let mut build_side = BuildSide::new(self);
        let mut model = CacheModel::new(self, each, keyed);
        let skipped = input::read_ahead(
            "audit",
            BATCH,
            read,
            |pending| build_side.prepare(pending),
            |(pending, built)| model.take(pending, built),
        )?;
        model.finish(skipped)
    }
}

/// A request built on the pool, or why it could not be.
type Building = std::result::Result<Built, String>;

/// The build side of an audit: a session's requests are built in order, each knowing the
/// previous one's prompt, so only the new part of a prompt is encoded. It keeps its own
/// memory of each session's last built request (within [`KEPT_BYTES`]; a session forgotten
/// is built whole: the same result).
struct BuildSide<'s, 'a> {
    auditor: &'s Auditor<'a>,
    keeps_replies: bool,
    last_built: Kept<Arc<Full>>,
}

impl<'s, 'a> BuildSide<'s, 'a> {
    fn new(auditor: &'s Auditor<'a>) -> Self {
        BuildSide {
            auditor,
            keeps_replies: predict::keeps_replies(&auditor.options.engine),
            last_built: Kept::new(KEPT_BYTES),
        }
    }

    /// Builds a batch's prompts on the pool, one chain per session.
    fn prepare(&mut self, mut pending: input::Batch) -> (input::Batch, Vec<Building>) {
        let (auditor, keeps_replies) = (self.auditor, self.keeps_replies);
        let prompts = input::build_in_chains(
            &mut pending,
            &mut self.last_built,
            |b: &Building| b.as_ref().ok().map(|b| &b.full),
            |earlier: Option<&Arc<Full>>, logged, body| {
                let settings = (keeps_replies, &auditor.options.fields);
                build(
                    &auditor.builder,
                    auditor.view,
                    settings,
                    logged,
                    body,
                    earlier,
                )
            },
            |full| built_bytes(&full.prompt, &full.body),
        );
        // Those let go are freed on the pool (where they were made), off this thread.
        if !self.last_built.gone.is_empty() {
            let gone = std::mem::take(&mut self.last_built.gone);
            rayon::spawn(move || drop(gone));
        }
        (pending, prompts)
    }
}

/// The serial side of an audit: the cache model, taking the built requests in log order. It
/// predicts what each request finds cached, locates its break, and remembers it for the
/// requests after it.
struct CacheModel<'s, 'a, 'k, E> {
    auditor: &'s Auditor<'a>,
    /// Gets each request's audit as it is done.
    each: E,
    /// Gets each request's [`replay::CacheKey`] (a partitioned audit's first phase).
    keyed: Option<&'k mut dyn FnMut(replay::CacheKey) -> Result<()>>,
    sessions: Sessions<Tracked>,
    /// The recent requests of every session: what the prediction looks at (and the replay).
    window: VecDeque<Arc<Seen>>,
    /// The recent session-less requests, held in full: all a session-less request is
    /// matched with ([`Self::closest`]), so that a partitioned audit's fallback group, which
    /// holds only these, matches it with the same one. Strong, since they may be older than
    /// `recent`.
    keyless: VecDeque<(Arc<Seen>, Arc<Full>)>,
    recent: VecDeque<Arc<Full>>,
    /// What the engine's one slot holds (llama.cpp): the last request.
    slot: Option<Arc<Seen>>,
    release: Release,
    worst: WorstSessions,
    summary: Summary,
}

impl<'s, 'a, 'k, E: FnMut(Entry<'_>) -> Result<()>> CacheModel<'s, 'a, 'k, E> {
    fn new(
        auditor: &'s Auditor<'a>,
        each: E,
        keyed: Option<&'k mut dyn FnMut(replay::CacheKey) -> Result<()>>,
    ) -> Self {
        CacheModel {
            auditor,
            each,
            keyed,
            sessions: Sessions::default(),
            window: VecDeque::new(),
            keyless: VecDeque::new(),
            recent: VecDeque::new(),
            slot: None,
            release: Release::default(),
            worst: WorstSessions::default(),
            summary: Summary::default(),
        }
    }

    /// A batch as the build side made it, in log order.
    fn take(&mut self, pending: input::Batch, built: Vec<Building>) -> Result<()> {
        for ((file, logged), built) in pending.into_iter().zip(built) {
            match built {
                Ok(built) => self.audit(&file, logged, built)?,
                Err(reason) => self.not_audited(&file, logged, reason)?,
            }
        }
        Ok(())
    }

    /// A request that could not be built: reported as such. The server holds a prompt that
    /// could not be built, so the next request is compared with nothing, not with an older
    /// one.
    fn not_audited(&mut self, file: &str, logged: Logged, reason: String) -> Result<()> {
        let failure = NotAudited {
            file: file.to_owned(),
            line: logged.line,
            session: logged.session.clone(),
            reason,
        };
        self.slot = None;
        if let Some(s) = &logged.session {
            if let Some(tracked) = self.sessions.get_mut(s) {
                self.release.seen(tracked.seen.take());
            }
        }
        if let Some(keyed) = self.keyed.as_mut() {
            keyed(replay::CacheKey::not_audited(
                file,
                logged.line,
                logged.session.clone(),
            ))?;
        }
        (self.each)(Entry::NotAudited(&failure))?;
        self.summary.not_audited.push(failure)
    }

    /// A built request: its prediction, its break, what the log says the server missed; the
    /// audit handed to `each` and counted; the request remembered.
    fn audit(&mut self, file: &str, logged: Logged, built: Built) -> Result<()> {
        let options = self.auditor.options;
        let (body, prompt) = (&*built.full.body, &built.full.prompt);
        let ids = &prompt.tokens.ids;
        let earlier = match &logged.session {
            Some(s) => self.sessions.get(s).and_then(|t| t.seen.clone()),
            None => self.closest(body, ids),
        };
        // The prediction takes the session's previous request and the window, as the replay
        // does; a session-less request's match may be older than the window.
        let predicted = predict::predicted_cached(
            &options.engine,
            ids,
            (logged.time, logged.model.as_deref()),
            self.slot.as_deref(),
            earlier.as_deref().filter(|_| logged.session.is_some()),
            &self.window,
        );
        let mut found = self.locate_break(earlier.as_deref(), built.found_after, body, prompt)?;
        if let (Some(templates), Some(b)) = (&options.templates, found.as_mut()) {
            b.template = message_text(body, &b.path)
                .and_then(|value| templates.attribute(value, b.cause, b.offset));
        }
        let missed_reason = self.missed_hit(file, &logged, earlier.as_deref(), ids)?;
        self.summary.cache_writes.add(&logged.usage);
        if let Some(reason) = &logged.usage.miss_reason {
            let finding = match (&found, &earlier) {
                (Some(b), _) => hosted::Finding::Break {
                    cause: b.cause,
                    part: hosted::part_of(body, &b.path),
                },
                (None, Some(e)) if switched(e, &logged) => hosted::Finding::ModelSwitched,
                (None, Some(_)) => match missed_reason {
                    Some(reason) => hosted::Finding::Missed(reason),
                    None => hosted::Finding::Extends,
                },
                (None, None) => hosted::Finding::NoEarlier,
            };
            self.summary.miss_reason_agreement.add(reason, finding);
        }
        let audit = RequestAudit {
            file: file.to_owned(),
            line: logged.line,
            session: logged.session.clone(),
            prompt_tokens: ids.len(),
            predicted_cached_tokens: predicted,
            logged_cached_tokens: logged.logged_cached_tokens,
            logged_prompt_tokens: logged.logged_prompt_tokens,
            logged_cache_write_tokens: logged.usage.written,
            server_miss_reason: logged.usage.miss_reason.as_ref().map(|r| r.kind.clone()),
            reply_tokens_exact: built.reply_exact,
            break_: found,
        };
        self.summary.add(&audit);
        (self.each)(Entry::Audited(&audit))?;
        let seen = Arc::new(Seen {
            body: built.full.body.clone(),
            text: built.text,
            ids: built.ids,
            time: logged.time,
            done: logged.done,
            model: logged.model.as_deref().map(Box::from),
            written_ttl: logged
                .usage
                .written_by_ttl
                .iter()
                .flatten()
                .filter(|(_, &n)| n > 0)
                .filter_map(|(tier, _)| usage::tier_seconds(tier))
                .reduce(f64::max),
            full: Arc::downgrade(&built.full),
            reply_ids: built.reply_ids.into_boxed_slice(),
            reply: built.reply,
        });
        self.remember(logged.session, built.full, seen, &audit, earlier)
    }

    /// Without a session: the recent session-less request sharing the longest leading run
    /// of messages, then of tokens (`session`); one sharing no leading message and under
    /// half its prompt is another conversation.
    fn closest(&self, body: &RequestBody, ids: &[u32]) -> Option<Arc<Seen>> {
        let mut best: Option<(Affinity, &Arc<Seen>)> = None;
        for (seen, full) in self.keyless.iter().rev() {
            let (leading, after_system) =
                session::message_affinity(&full.body.messages, &body.messages);
            let shared = common_prefix(&seen.ids, ids);
            if leading + after_system == 0 && (shared == 0 || shared * 2 < seen.ids.len()) {
                continue;
            }
            let score = (leading, after_system, shared);
            if best.is_none_or(|(b, _)| score > b) {
                best = Some((score, seen));
            }
        }
        best.map(|(_, seen)| seen.clone())
    }

    /// The break between the earlier request and this one, where this prompt does not
    /// extend it (found on the pool after this same request, by identity, else here); or
    /// where it does, the earlier request's reply rewritten in this one.
    fn locate_break(
        &self,
        earlier: Option<&Seen>,
        found_after: Option<(Weak<Full>, Option<Break>)>,
        body: &RequestBody,
        prompt: &Prompt,
    ) -> Result<Option<Break>> {
        let builder = &self.auditor.builder;
        Ok(match earlier {
            Some(e) if !breaks::extends(&e.text, &prompt.text) => match found_after {
                Some((after, found)) if Weak::ptr_eq(&after, &e.full) => found,
                _ => {
                    let e = e.full(builder)?;
                    let fields = &self.auditor.options.fields;
                    breaks::find((&e.body, &e.prompt), (body, prompt), fields)
                }
            },
            Some(e) if e.reply.is_some() && !e.reply_ids.is_empty() => {
                let full = e.full(builder)?;
                breaks::reply_rewritten(
                    breaks::Replied {
                        body: &full.body,
                        prompt_ids: &e.ids,
                        reply: e.reply.as_ref().expect("checked"),
                        reply_ids: &e.reply_ids,
                    },
                    (body, prompt),
                )
            }
            _ => None,
        })
    }

    /// Where the log says a request read nothing from the cache although the earlier request
    /// left a prefix the profile caches: why (`ttl`, `model-switched`, written then missed,
    /// else `eviction-or-routing`), counted among the missed hits.
    fn missed_hit(
        &mut self,
        file: &str,
        logged: &Logged,
        earlier: Option<&Seen>,
        ids: &[u32],
    ) -> Result<Option<&'static str>> {
        let (Some(0), Some(e)) = (logged.logged_cached_tokens, earlier) else {
            return Ok(None);
        };
        let engine = &self.auditor.options.engine;
        let shared = e.cached_prefix(ids);
        let cacheable = predict::cached_by_profile(engine, shared, ids.len());
        if cacheable == 0 {
            return Ok(None);
        }
        let summary = &mut self.summary;
        let reason = if predict::seen_expired(engine, e, logged.time) {
            "ttl"
        } else if switched(e, logged) {
            // Every model has its own cache.
            "model-switched"
        } else if hosted::write_not_visible(engine, e.done.or(e.time), logged.time) {
            summary.written_then_missed.add(cacheable);
            *summary
                .tokens_lost_by_cause
                .entry(hosted::WRITTEN_THEN_MISSED.to_owned())
                .or_default() += cacheable;
            hosted::WRITTEN_THEN_MISSED
        } else {
            "eviction-or-routing"
        };
        summary.missed_hits.push(MissedHit {
            file: file.to_owned(),
            line: logged.line,
            session: logged.session.clone(),
            shared_tokens: shared,
            reason,
        })?;
        Ok(Some(reason))
    }

    /// What the model keeps of an audited request: among the recent ones (and the
    /// session-less ones), as its session's last request with the session's losses, in the
    /// window and the slot; what it no longer needs goes to [`Release`].
    fn remember(
        &mut self,
        session: Option<String>,
        full: Arc<Full>,
        seen: Arc<Seen>,
        audit: &RequestAudit,
        earlier: Option<Arc<Seen>>,
    ) -> Result<()> {
        let release = &mut self.release;
        if session.is_none() {
            self.keyless.push_back((seen.clone(), full.clone()));
            if self.keyless.len() > WINDOW {
                if let Some((seen, full)) = self.keyless.pop_front() {
                    release.seen(Some(seen));
                    release.full(full);
                }
            }
        }
        self.recent.push_back(full);
        if self.recent.len() > RECENT {
            if let Some(full) = self.recent.pop_front() {
                release.full(full);
            }
        }
        if let Some(s) = session {
            let mut loss = match self.sessions.get_mut(&s) {
                Some(tracked) => {
                    release.seen(tracked.seen.take());
                    std::mem::take(&mut tracked.loss)
                }
                None => self.worst.take(&s).unwrap_or_else(|| SessionLoss {
                    session: s.clone(),
                    ..SessionLoss::default()
                }),
            };
            loss.requests += 1;
            if let Some(b) = &audit.break_ {
                loss.breaks += 1;
                loss.tokens_lost += b.tokens_lost;
            }
            let tracked = Tracked {
                seen: Some(seen.clone()),
                loss,
            };
            if let Some((_, forgotten)) = self.sessions.insert(s, tracked) {
                self.worst.offer(forgotten.loss);
                release.seen(forgotten.seen);
            }
        }
        if let Some(keyed) = self.keyed.as_mut() {
            let unit_tokens = self.auditor.options.engine.unit_tokens;
            keyed(replay::CacheKey::audited(unit_tokens, audit, &seen))?;
        }
        self.window.push_back(seen.clone());
        if self.window.len() > WINDOW {
            release.seen(self.window.pop_front());
        }
        release.seen(earlier);
        release.seen(self.slot.replace(seen));
        Ok(())
    }

    /// The summary, once the log is read: what the model still holds is freed on the pool
    /// while it is written.
    fn finish(self, skipped: input::SkipLog) -> Result<Summary> {
        let CacheModel {
            auditor,
            sessions,
            window,
            keyless,
            recent,
            slot,
            mut release,
            mut worst,
            mut summary,
            ..
        } = self;
        for tracked in sessions.into_values() {
            worst.offer(tracked.loss);
            release.seen(tracked.seen);
        }
        release.fulls.extend(recent);
        release.seens.extend(window);
        release.seens.extend(slot);
        for (seen, full) in keyless {
            release.seen(Some(seen));
            release.full(full);
        }
        release.now();
        summary.worst_sessions = worst.0;
        summary.miss_reason_agreement.seal();
        summary.missed_hits.seal()?;
        summary.not_audited.seal()?;
        summary.skipped_lines = skipped.count;
        summary.skipped = skipped.first;
        let options = auditor.options;
        summary.cost = crate::cost::audit_cost(
            &options.engine,
            summary.prompt_tokens,
            summary.billed_cached_tokens,
            &summary.tokens_lost_by_cause,
        );
        Ok(summary)
    }
}

impl Summary {
    /// Counts one request in.
    fn add(&mut self, r: &RequestAudit) {
        self.requests += 1;
        if r.session.is_none() {
            self.requests_without_session += 1;
        }
        self.prompt_tokens += r.prompt_tokens;
        self.predicted_cached_tokens += r.predicted_cached_tokens;
        self.billed_cached_tokens += r
            .logged_cached_tokens
            .unwrap_or(r.predicted_cached_tokens)
            .min(r.prompt_tokens);
        if let Some(logged) = r.logged_cached_tokens {
            self.logged_cached_tokens += logged;
            self.requests_with_logged_cache += 1;
        }
        if let Some(b) = &r.break_ {
            self.breaks += 1;
            *self
                .tokens_lost_by_cause
                .entry(b.cause.to_owned())
                .or_default() += b.tokens_lost;
        }
    }
}

/// Whether a request names another model than the earlier one (both logged).
fn switched(earlier: &Seen, logged: &Logged) -> bool {
    matches!((earlier.model.as_deref(), logged.model.as_deref()), (Some(a), Some(b)) if a != b)
}

/// The text of the message a break path names (`messages[0].content`, `system`, …), for the
/// system and user messages a prompt template writes.
fn message_text<'a>(body: &'a RequestBody, path: &str) -> Option<&'a str> {
    let base = path.strip_suffix(".content").unwrap_or(path);
    let i = body.message_paths.iter().position(|p| p == base)?;
    let message = &body.messages[i];
    let role = message.get("role").and_then(|r| r.as_str())?;
    if !matches!(role, "system" | "user" | "developer") {
        return None;
    }
    message.get("content").and_then(|c| c.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loss(session: &str, tokens_lost: usize) -> SessionLoss {
        SessionLoss {
            session: session.into(),
            requests: 1,
            breaks: 1,
            tokens_lost,
        }
    }

    #[test]
    fn worst_sessions_keep_the_top_and_give_back_a_returning_one() {
        let mut worst = WorstSessions::default();
        for (i, lost) in [5, 0, 9, 1, 7, 3, 9, 2].into_iter().enumerate() {
            worst.offer(loss(&format!("s{i}"), lost));
        }
        let kept: Vec<(&str, usize)> = worst
            .0
            .iter()
            .map(|s| (s.session.as_str(), s.tokens_lost))
            .collect();
        assert_eq!(
            kept,
            [("s2", 9), ("s6", 9), ("s4", 7), ("s0", 5), ("s5", 3)]
        );
        assert_eq!(worst.take("s4").map(|s| s.tokens_lost), Some(7));
        assert!(worst.take("s4").is_none());
        assert!(worst.take("s1").is_none());
    }
}
