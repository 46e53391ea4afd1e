//! The log as the engine sees it: every logged request read by `audit::input`, put through the
//! engine's request model (`audit::server_view`) and rendered and tokenized by
//! `audit::request` (as `audit` does), then reduced to what the cache model needs: its chained
//! block hashes, its lengths and its times. Prompts are built in parallel a batch at a time;
//! a session's prompt is encoded after its previous one (only the new part is tokenized).

use super::block_pool::prompt_hashes;
use crate::audit::input::RequestBody;
use crate::audit::input::{self, InputFormat};
use crate::audit::request::{ChatValues, Prompt, RequestBuilder};
use crate::audit::server_view::ServerView;
use crate::audit::session::{Kept, SessionKey};
use crate::audit::{built_bytes, KEPT_BYTES};
use crate::error::Result;
use std::sync::Arc;

/// One request, ready for the cache model. Holds hashes, not tokens (`ids` only where the
/// engine compares tokens: llama.cpp's slots).
#[derive(Debug, Clone)]
pub struct Prepared {
    pub file: Arc<str>,
    pub line: usize,
    pub session: Option<String>,
    pub prompt_tokens: usize,
    /// The chained hashes of the prompt's full blocks.
    pub hashes: Vec<u64>,
    pub ids: Option<Vec<u32>>,
    /// The tokens it generates: the logged completion tokens, else `--completion-tokens`.
    pub generated: usize,
    pub time: Option<f64>,
    pub duration: Option<f64>,
    /// The cached tokens the server reported, where the log has them.
    pub logged_cached_tokens: Option<usize>,
}

/// A logged request that could not be built as the server would (reported, not simulated).
#[derive(Debug, Clone, serde::Serialize)]
pub struct NotSimulated {
    pub file: String,
    pub line: usize,
    pub reason: String,
}

pub enum Item {
    Request(Prepared),
    Failed(NotSimulated),
}

pub struct Reading<'a> {
    pub inputs: &'a [String],
    pub input_format: Option<InputFormat>,
    pub session_key: &'a SessionKey,
    pub max_line_bytes: usize,
    pub block_size: usize,
    pub keep_ids: bool,
    pub completion_tokens: usize,
}

const BATCH: usize = 256;

/// A request as built, what its session's next one is built after: its prompt, its body in
/// the server's view and its messages' template values.
struct Earlier {
    prompt: Prompt,
    body: RequestBody,
    values: ChatValues,
}

/// Reads the logs and hands every request to `each` in log order; returns the skipped lines.
pub fn read(
    reading: &Reading<'_>,
    builder: &RequestBuilder,
    view: ServerView,
    mut each: impl FnMut(Item) -> Result<()>,
) -> Result<input::SkipLog> {
    // A session's last request, so the next is encoded after its prompt and takes over the
    // template values of the messages it repeats, while it is among the sessions kept
    // (`KEPT_BYTES`, least recently used out), so memory is bounded by that budget.
    let mut last: Kept<Arc<Earlier>> = Kept::new(KEPT_BYTES);
    // Requests built whose last holder is likely here (those `last` let go, and each chain's
    // earlier ones), dropped on the pool.
    let mut retired: Vec<Arc<Earlier>> = Vec::new();
    // A request's prompt tokens, block hashes and ids (where kept), made on the pool.
    type Shape = (usize, Vec<u64>, Option<Vec<u32>>);
    type Built = std::result::Result<Shape, String>;
    // A request as built, with what its session's next one is built after.
    type Building = std::result::Result<(Arc<Earlier>, Shape), String>;
    // On the reader's thread, overlapping the cache model's replay of the batch before.
    let prepare = move |mut pending: input::Batch| -> (input::Batch, Vec<Built>) {
        let built = input::build_in_chains(
            &mut pending,
            &mut last,
            |b: &Building| b.as_ref().ok().map(|(earlier, _)| earlier),
            |earlier: Option<&Arc<Earlier>>, logged, body| {
                let body = view
                    .apply_sharing(body, earlier.map(|e| &e.body))
                    .map_err(|why| format!("the server's request model refuses it: {why}"))?;
                let (prompt, values) = builder
                    .prompt_sharing(
                        &body,
                        logged.time,
                        earlier.map(|e| &e.prompt),
                        earlier.map(|e| (&e.body, &e.values)),
                    )
                    .map_err(|e| format!("the chat template fails on it: {e}"))?;
                let ids = &prompt.tokens.ids;
                let shape = (
                    ids.len(),
                    prompt_hashes(ids, reading.block_size),
                    reading.keep_ids.then(|| ids.clone()),
                );
                let earlier = Arc::new(Earlier {
                    prompt,
                    body,
                    values,
                });
                Ok((earlier, shape))
            },
            |earlier| built_bytes(&earlier.prompt, &earlier.body),
        );
        retired.append(&mut last.gone);
        // Only what the cache model needs goes on; the requests `last` keeps stay.
        let built = built
            .into_iter()
            .map(|b| {
                b.map(|(earlier, shape)| {
                    retired.push(earlier);
                    shape
                })
            })
            .collect();
        // Freeing a request's body, prompt and values is a third of this thread's work: it
        // goes to the pool (the threads that allocated them), a batch at a time.
        let gone = std::mem::take(&mut retired);
        rayon::spawn(move || drop(gone));
        (pending, built)
    };
    let flush = |(pending, prompts): (input::Batch, Vec<Built>)| -> Result<()> {
        for ((file, logged), prompt) in pending.into_iter().zip(prompts) {
            match prompt {
                Err(reason) => each(Item::Failed(NotSimulated {
                    file: file.to_string(),
                    line: logged.line,
                    reason,
                }))?,
                Ok((prompt_tokens, hashes, ids)) => {
                    let generated = logged
                        .completion_tokens
                        .or_else(|| logged.reply.as_ref().and_then(|r| r.completion_tokens))
                        .unwrap_or(reading.completion_tokens);
                    let item = Prepared {
                        file,
                        line: logged.line,
                        prompt_tokens,
                        hashes,
                        ids,
                        generated,
                        time: logged.time,
                        duration: logged
                            .duration
                            .or_else(|| Some(logged.done? - logged.time?).filter(|d| *d >= 0.0)),
                        logged_cached_tokens: logged.logged_cached_tokens,
                        session: logged.session,
                    };
                    each(Item::Request(item))?;
                }
            }
        }
        Ok(())
    };
    // The log is read on its own thread (its lines parsed and its prompts built on the
    // pool), a batch ahead of the cache model.
    input::read_ahead(
        "simulate",
        BATCH,
        |each| {
            input::read_all(
                reading.inputs,
                reading.input_format,
                reading.session_key,
                reading.max_line_bytes,
                each,
            )
        },
        prepare,
        flush,
    )
}
