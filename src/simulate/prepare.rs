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
use crate::audit::session::{SessionKey, Sessions};
use crate::error::Result;
use rayon::prelude::*;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Weak};

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
/// Requests whose prompt, body and template values are kept for their session's next one.
const RECENT: usize = 512;

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
    // template values of the messages it repeats, while it is among the [`RECENT`] last
    // requests (a session's next request usually comes within them); older ones are let go,
    // so memory is bounded by that window.
    let mut last: Sessions<Weak<Earlier>> = Sessions::default();
    let mut recent: VecDeque<Arc<Earlier>> = VecDeque::with_capacity(RECENT + 1);
    let flush = |pending: &mut input::Batch| -> Result<()> {
        // Each request's body moves to its chain: the server's view takes it over.
        type Chain = (Option<Arc<Earlier>>, Vec<(usize, RequestBody)>);
        let mut chains: Vec<Chain> = Vec::new();
        let mut chain_of: HashMap<&str, usize> = HashMap::new();
        for (i, (_, logged)) in pending.iter_mut().enumerate() {
            let body = std::mem::take(&mut logged.body);
            match logged.session.as_deref() {
                None => chains.push((None, vec![(i, body)])),
                Some(s) => {
                    let c = *chain_of.entry(s).or_insert_with(|| {
                        chains.push((last.get(s).and_then(Weak::upgrade), Vec::new()));
                        chains.len() - 1
                    });
                    chains[c].1.push((i, body));
                }
            }
        }
        let order: Vec<Vec<usize>> = chains
            .iter()
            .map(|(_, chain)| chain.iter().map(|(i, _)| *i).collect())
            .collect();
        type Built = std::result::Result<Arc<Earlier>, String>;
        let built: Vec<Vec<Built>> = chains
            .into_par_iter()
            .map(|(before, chain)| {
                let mut earlier = before;
                chain
                    .into_iter()
                    .map(|(i, body)| {
                        let logged = &pending[i].1;
                        let body = view.apply_owned(body).map_err(|why| {
                            format!("the server's request model refuses it: {why}")
                        })?;
                        let (prompt, values) = builder
                            .prompt_sharing(
                                &body,
                                logged.time,
                                earlier.as_deref().map(|e| &e.prompt),
                                earlier.as_deref().map(|e| (&e.body, &e.values)),
                            )
                            .map_err(|e| format!("the chat template fails on it: {e}"))?;
                        let built = Arc::new(Earlier {
                            prompt,
                            body,
                            values,
                        });
                        earlier = Some(built.clone());
                        Ok(built)
                    })
                    .collect()
            })
            .collect();
        let mut prompts: Vec<Option<Built>> = (0..pending.len()).map(|_| None).collect();
        for (chain, out) in order.iter().zip(built) {
            for (&i, prompt) in chain.iter().zip(out) {
                prompts[i] = Some(prompt);
            }
        }
        for ((file, logged), prompt) in pending.drain(..).zip(prompts) {
            match prompt.expect("every request is in one chain") {
                Err(reason) => each(Item::Failed(NotSimulated {
                    file: file.to_string(),
                    line: logged.line,
                    reason,
                }))?,
                Ok(prompt) => {
                    let ids = &prompt.prompt.tokens.ids;
                    let generated = logged
                        .completion_tokens
                        .or_else(|| logged.reply.as_ref().and_then(|r| r.completion_tokens))
                        .unwrap_or(reading.completion_tokens);
                    let item = Prepared {
                        file,
                        line: logged.line,
                        prompt_tokens: ids.len(),
                        hashes: prompt_hashes(ids, reading.block_size),
                        ids: reading.keep_ids.then(|| ids.clone()),
                        generated,
                        time: logged.time,
                        duration: logged
                            .duration
                            .or_else(|| Some(logged.done? - logged.time?).filter(|d| *d >= 0.0)),
                        logged_cached_tokens: logged.logged_cached_tokens,
                        session: logged.session.clone(),
                    };
                    if let Some(s) = logged.session {
                        last.insert(s, Arc::downgrade(&prompt));
                        recent.push_back(prompt);
                        if recent.len() > RECENT {
                            recent.pop_front();
                        }
                    }
                    each(Item::Request(item))?;
                }
            }
        }
        Ok(())
    };
    // The log is parsed on its own thread, a batch ahead of the prompts being built.
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
        flush,
    )
}
