//! PL012 cache-breakpoint-placement: docs in `rules/PL012-cache-breakpoint-placement.yaml`.
//!
//! Reads a template that renders an Anthropic Messages request body: its `cache_control`
//! marks against the placement [`crate::analyse::placement::optimal`] finds over the renders.

use super::{meta, Finding, Rule, RuleContext, Severity};
use crate::analyse::placement::{self, Cell, Limits};
use crate::analyse::request_body::{BodyApi, Mark, RequestBody, Ttl, CACHE_CONTROL_KEY};
use crate::cache_profile::{
    anthropic_minimum, CacheProfileKind, ANTHROPIC_LOOKBACK_BLOCKS, ANTHROPIC_MAX_BREAKPOINTS,
};
use crate::fmt::thousands;
use std::ops::Range;

pub struct CacheBreakpointPlacement;

impl Rule for CacheBreakpointPlacement {
    fn code(&self) -> &'static str {
        "PL012"
    }

    fn check(&self, ctx: &RuleContext) -> Vec<Finding> {
        let bodies = &ctx.analysis.bodies;
        let Some(first) = bodies.first() else {
            return Vec::new();
        };
        let anthropic = match first.api {
            BodyApi::Anthropic => true,
            BodyApi::Either => ctx.engine.kind == CacheProfileKind::Anthropic,
            BodyApi::Openai => false,
        };
        if !anthropic {
            return Vec::new();
        }
        let (minimum, model) = anthropic_minimum(ctx.engine, first.model.as_deref());
        let limits = Limits {
            minimum,
            lookback: ANTHROPIC_LOOKBACK_BLOCKS,
            max_breakpoints: ANTHROPIC_MAX_BREAKPOINTS,
        };
        let check = Check {
            source: &ctx.template.source,
            bodies,
            limits,
            model,
            min_lost_tokens: ctx.min_lost_tokens,
        };
        let mut findings = Vec::new();
        findings.extend(check.too_many());
        findings.extend(check.ttl_order());
        findings.extend(check.misplaced());
        findings.extend(check.better_placement());
        findings
    }
}

struct Check<'a> {
    /// The checked template's source.
    source: &'a str,
    bodies: &'a [RequestBody],
    limits: Limits,
    /// Whose minimum applies: a model id, or `min_tokens`.
    model: String,
    min_lost_tokens: usize,
}

/// A breakpoint of render 0: its block, and where the template writes it.
struct Marked {
    index: usize,
    ttl: Ttl,
    span: Range<usize>,
    /// The top-level `cache_control` (automatic caching) rather than a block's.
    automatic: bool,
}

impl Check<'_> {
    fn cells(&self) -> Vec<Vec<Cell>> {
        self.bodies
            .iter()
            .map(|body| {
                body.blocks
                    .iter()
                    .map(|b| Cell {
                        identity: b.identity,
                        tokens: b.tokens,
                    })
                    .collect()
            })
            .collect()
    }

    /// Each render's breakpoints as block indices (automatic caching: the last block).
    fn current(&self) -> Vec<Vec<usize>> {
        self.bodies
            .iter()
            .map(|body| {
                let mut marks: Vec<usize> = body
                    .blocks
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| b.mark.is_some())
                    .map(|(i, _)| i)
                    .collect();
                if body.automatic.is_some() && !body.blocks.is_empty() {
                    marks.push(body.blocks.len() - 1);
                }
                marks
            })
            .collect()
    }

    /// Render 0's breakpoints in cache order, the automatic one last.
    fn marked(&self) -> Vec<Marked> {
        let body = &self.bodies[0];
        let count = body.blocks.iter().filter(|b| b.mark.is_some()).count()
            + usize::from(body.automatic.is_some());
        let written: Vec<usize> = self
            .source
            .match_indices(CACHE_CONTROL_KEY)
            .map(|(at, _)| at)
            .collect();
        // Without a source map, the template's key of the same rank, if it writes each once.
        let span_of = |mark: &Mark| {
            mark.span.clone().unwrap_or_else(|| {
                written
                    .get(mark.ordinal)
                    .filter(|_| written.len() == count)
                    .map_or(0..0, |&at| at..at + CACHE_CONTROL_KEY.len())
            })
        };
        let mut marked: Vec<Marked> = body
            .blocks
            .iter()
            .enumerate()
            .filter_map(|(index, b)| {
                let mark = b.mark.as_ref()?;
                Some(Marked {
                    index,
                    ttl: mark.ttl,
                    span: span_of(mark),
                    automatic: false,
                })
            })
            .collect();
        if let (Some(mark), false) = (&body.automatic, body.blocks.is_empty()) {
            marked.push(Marked {
                index: body.blocks.len() - 1,
                ttl: mark.ttl,
                span: span_of(mark),
                automatic: true,
            });
        }
        marked
    }

    fn path(&self, index: usize) -> &str {
        self.bodies
            .iter()
            .find_map(|b| b.blocks.get(index))
            .map_or("", |b| b.path.as_str())
    }

    /// Tokens of render 0 up to and including block `index`.
    fn prefix_tokens(&self, index: usize) -> usize {
        self.bodies[0].blocks[..=index]
            .iter()
            .map(|b| b.tokens)
            .sum()
    }

    /// Blocks every render has identically, from the start.
    fn shared_blocks(&self) -> usize {
        let first = &self.bodies[0].blocks;
        self.bodies[1..]
            .iter()
            .map(|other| {
                first
                    .iter()
                    .zip(&other.blocks)
                    .take_while(|(a, b)| a.identity == b.identity)
                    .count()
            })
            .min()
            .unwrap_or(first.len())
    }

    fn finding(&self, severity: Severity, message: String, help: String) -> Finding {
        let rule = meta("PL012");
        Finding {
            rule,
            severity,
            cadence: None,
            message,
            help,
            span: 0..0,
            label: String::new(),
            related: Vec::new(),
        }
    }

    /// More breakpoints than the API takes: the request is rejected.
    fn too_many(&self) -> Option<Finding> {
        let marked = self.marked();
        if marked.len() <= self.limits.max_breakpoints {
            return None;
        }
        let mut f = self.finding(
            Severity::Error,
            format!(
                "the request has {} cache_control breakpoints; the API accepts at most {} and rejects the request",
                marked.len(),
                self.limits.max_breakpoints
            ),
            "keep the breakpoints that end a stable stretch (see the placement PL012 suggests) and remove the others".into(),
        );
        f.span = marked[self.limits.max_breakpoints].span.clone();
        f.label = format!("breakpoint {}", self.limits.max_breakpoints + 1);
        Some(f)
    }

    /// A 1-hour entry after a 5-minute one: the API rejects it.
    fn ttl_order(&self) -> Option<Finding> {
        let marked = self.marked();
        let short = marked.iter().find(|m| m.ttl == Ttl::FiveMinutes)?;
        let long = marked
            .iter()
            .find(|m| m.ttl == Ttl::OneHour && m.index > short.index)?;
        let mut f = self.finding(
            Severity::Error,
            format!(
                "a 1h cache_control at {} comes after a 5m one at {}: 1h entries must come before 5m entries, and the API rejects the request",
                self.path(long.index),
                self.path(short.index)
            ),
            format!(
                "give {} `\"ttl\": \"1h\"` too, or make the later one 5m: longer-lived entries go first",
                self.path(short.index)
            ),
        );
        f.span = long.span.clone();
        f.label = "1h after 5m".into();
        Some(f)
    }

    /// Breakpoints after a block that varies, and breakpoints below the minimum.
    fn misplaced(&self) -> Vec<Finding> {
        let shared = self.shared_blocks();
        let blocks = &self.bodies[0].blocks;
        let mut findings = Vec::new();
        for mark in self.marked() {
            let path = if mark.automatic {
                format!("{} (automatic caching)", self.path(mark.index))
            } else {
                self.path(mark.index).to_owned()
            };
            let tokens = self.prefix_tokens(mark.index);
            if mark.index >= shared && self.bodies.len() > 1 && !self.read_by_any(mark.index) {
                let varying = &blocks[shared];
                // The conversation pattern: a breakpoint on the last turn, which the
                // conversation's next request reads back. Only the preamble must not vary.
                let last_turn = mark.index + 1 == blocks.len() && !varying.preamble;
                if last_turn {
                    continue;
                }
                let mut f = self.finding(
                    Severity::Warning,
                    format!(
                        "the prefix the cache_control at {path} caches includes {}, which differs on every request: the {} tokens it writes (at 1.25× the input price for 5m, 2× for 1h) are never read by another request",
                        varying.path,
                        thousands(tokens)
                    ),
                    self.move_help(shared),
                );
                f.span = mark.span;
                f.label = format!("cached prefix includes {}, which varies", varying.path);
                findings.push(f);
            } else if tokens < self.limits.minimum {
                let mut f = self.finding(
                    Severity::Warning,
                    format!(
                        "the cache_control at {path} covers about {} tokens, below {}'s minimum cacheable length of {}: Anthropic caches nothing there and says nothing",
                        thousands(tokens),
                        self.model,
                        thousands(self.limits.minimum)
                    ),
                    format!(
                        "move it to the end of a stable stretch of at least {} tokens, or remove it (Anthropic's token counts are not public; these come from the selected tokenizer)",
                        thousands(self.limits.minimum)
                    ),
                );
                f.span = mark.span;
                f.label = format!("below the minimum of {}", thousands(self.limits.minimum));
                findings.push(f);
            }
        }
        findings
    }

    /// Whether two renders share the prefix through block `index`, so an entry written there
    /// is read at least once.
    fn read_by_any(&self, index: usize) -> bool {
        let prefixes: Vec<Vec<u64>> = self
            .bodies
            .iter()
            .filter(|b| b.blocks.len() > index)
            .map(|b| b.blocks[..=index].iter().map(|x| x.identity).collect())
            .collect();
        let distinct: std::collections::HashSet<&Vec<u64>> = prefixes.iter().collect();
        distinct.len() < prefixes.len()
    }

    /// Where to put a breakpoint instead: the last block every request shares.
    fn move_help(&self, shared: usize) -> String {
        match shared.checked_sub(1) {
            Some(last) if self.prefix_tokens(last) >= self.limits.minimum => format!(
                "put it on {} instead, the last block every request shares ({} tokens), and keep what varies after it",
                self.path(last),
                thousands(self.prefix_tokens(last))
            ),
            _ => "put the stable content first and the breakpoint at its end; what varies goes after it".into(),
        }
    }

    /// The optimal placement reads more than the one written.
    fn better_placement(&self) -> Option<Finding> {
        let requests = self.bodies.len();
        if requests < 2 {
            return None;
        }
        let cells = self.cells();
        let now = placement::simulate(&cells, &self.current(), self.limits);
        let best = placement::optimal(&cells, self.limits);
        if best.read <= now.read {
            return None;
        }
        // Per request that can read: all but the first.
        let per_request = |tokens: usize| tokens / (requests - 1);
        let saved = per_request(best.read - now.read);
        if saved < self.min_lost_tokens.max(1) {
            return None;
        }
        let marked = self.marked();
        let current: Vec<usize> = marked.iter().map(|m| m.index).collect();
        let paths = |indices: &[usize]| {
            indices
                .iter()
                .map(|&i| self.path(i).to_owned())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let add: Vec<usize> = best
            .breakpoints
            .iter()
            .copied()
            .filter(|i| !current.contains(i))
            .collect();
        let remove: Vec<&Marked> = marked
            .iter()
            .filter(|m| !best.breakpoints.contains(&m.index))
            .collect();
        let mut help = match (add.is_empty(), remove.is_empty()) {
            (false, true) => format!("add cache_control to {}", paths(&add)),
            (false, false) => format!("move cache_control to {}", paths(&add)),
            (true, _) => format!("keep cache_control on {}", paths(&best.breakpoints)),
        };
        for mark in &remove {
            help.push_str(&if mark.automatic {
                format!(
                    ", instead of the top-level cache_control (automatic caching, which marks the last block, {})",
                    self.path(mark.index)
                )
            } else {
                format!(", taking it off {}", self.path(mark.index))
            });
        }
        let kept: Vec<usize> = current
            .iter()
            .copied()
            .filter(|i| best.breakpoints.contains(i))
            .collect();
        if !kept.is_empty() && !add.is_empty() {
            help.push_str(&format!(", and keep it on {}", paths(&kept)));
        }
        let strings: Vec<&str> = best
            .breakpoints
            .iter()
            .filter_map(|&i| self.bodies[0].blocks.get(i))
            .filter(|b| !b.takes_mark)
            .map(|b| b.path.as_str())
            .collect();
        if !strings.is_empty() {
            help.push_str(&format!(
                "; write {} as a list of text blocks to carry it",
                strings.join(", ")
            ));
        }
        help.push_str(&format!(
            "; prices are not applied here: the saving is in tokens read at 0.1× instead of 1× (minimum {} for {})",
            thousands(self.limits.minimum),
            self.model
        ));
        let mut f = self.finding(
            Severity::Warning,
            format!(
                "cache_control breakpoints at {} would serve about {} more tokens per request from the cache than the ones written here ({} now, {} then, over {} renders)",
                paths(&best.breakpoints),
                thousands(saved),
                thousands(per_request(now.read)),
                thousands(per_request(best.read)),
                requests
            ),
            help,
        );
        if let Some(first) = self.marked().first() {
            f.span = first.span.clone();
        }
        f.label = format!("{} tokens per request left uncached", thousands(saved));
        Some(f)
    }
}
