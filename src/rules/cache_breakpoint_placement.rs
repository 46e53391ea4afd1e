//! PL012 cache-breakpoint-placement: docs in `rules/PL012-cache-breakpoint-placement.yaml`.
//!
//! Reads a template that renders an Anthropic Messages request body: its `cache_control`
//! marks against the placement [`crate::analyse::placement::optimal`] finds over the renders.

use super::{
    meta, Finding, FixAvailability, FixContext, Reads, Rule, RuleCode, RuleContext, Saving,
    SavingCost, Severity, TemplateEdit,
};
use crate::analyse::placement::{self, Cell, Limits, Placement};
use crate::analyse::request_body::{BodyApi, Mark, RequestBody, Ttl, CACHE_CONTROL_KEY};
use crate::cache_profile::{
    anthropic_minimum, CacheProfileKind, ANTHROPIC_LOOKBACK_BLOCKS, ANTHROPIC_MAX_BREAKPOINTS,
};
use crate::cost::{self, BreakpointPrices, Played};
use crate::edit::{Edit, Fix, FixKind, Safety};
use crate::fmt::thousands;
use std::ops::Range;

pub struct CacheBreakpointPlacement;

impl Rule for CacheBreakpointPlacement {
    fn code(&self) -> RuleCode {
        RuleCode::CacheBreakpointPlacement
    }

    fn reads(&self) -> Reads {
        Reads::Analysis
    }

    fn fix_availability(&self) -> FixAvailability {
        FixAvailability::Repair
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
        // New breakpoints write at the TTL the template writes: 1h only where every one
        // it writes says so.
        let marks: Vec<&Mark> = first
            .blocks
            .iter()
            .filter_map(|b| b.mark.as_ref())
            .chain(&first.automatic)
            .collect();
        let ttl = if !marks.is_empty() && marks.iter().all(|m| m.ttl == Ttl::OneHour) {
            Ttl::OneHour
        } else {
            Ttl::FiveMinutes
        };
        let check = Check {
            source: &ctx.template.source,
            renders: &ctx.analysis.renders,
            bodies,
            limits,
            model,
            min_lost_tokens: ctx.min_lost_tokens,
            prices: cost::anthropic_prices(ctx.engine, first.model.as_deref(), ttl.name()),
            ttl,
        };
        let choice = check.choose();
        let saving = match &choice {
            Choice::Better { target, cost, .. } => Some(Box::new(check.saving(target, cost))),
            _ => None,
        };
        let mut findings = Vec::new();
        findings.extend(check.too_many());
        findings.extend(check.ttl_order());
        findings.extend(check.misplaced());
        findings.extend(check.better_placement(&choice));
        for finding in &mut findings {
            finding.saving = saving.clone();
        }
        findings
    }

    fn fix(&self, ctx: &FixContext) -> Result<Vec<Fix>, String> {
        breakpoint_placement(ctx).map(|fix| vec![fix])
    }
}

/// What PL012 advises, weighed in money where the model has prices.
enum Choice {
    /// Nothing reads more, or costs less, than the breakpoints written.
    Keep,
    /// `target` reads `tokens` more per later request (negative: fewer, where dropping a
    /// breakpoint saves its writes) and costs less.
    Better {
        target: Placement,
        tokens: i64,
        now: Played,
        then: Played,
        cost: Option<SavingCost>,
    },
    /// `target` reads more but its writes cost more than its reads save: not advised.
    CostsMore {
        target: Placement,
        tokens: i64,
        now: Played,
        then: Played,
        cost: SavingCost,
    },
}

struct Check<'a> {
    /// The checked template's source.
    source: &'a str,
    /// The renders' texts (the request bodies' JSON).
    renders: &'a [String],
    bodies: &'a [RequestBody],
    limits: Limits,
    /// Whose minimum applies: a model id, or `min_tokens`.
    model: String,
    min_lost_tokens: usize,
    /// The body's model's prices, writing at `ttl`; `None` without price data.
    prices: Option<BreakpointPrices>,
    /// The TTL new breakpoints are written with.
    ttl: Ttl,
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
        let rule = meta(RuleCode::CacheBreakpointPlacement);
        Finding {
            saving: None,
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

    /// Tokens read and written over the renders with `marks[r]` on render r.
    fn played(&self, cells: &[Vec<Cell>], marks: &[Vec<usize>]) -> Played {
        let first = placement::simulate(&cells[..1], &marks[..1], self.limits);
        let all = placement::simulate(cells, marks, self.limits);
        Played {
            first_written: first.written,
            later_read: all.read - first.read,
            later_written: all.written - first.written,
        }
    }

    fn saving_cost(&self, now: Played, then: Played) -> Option<SavingCost> {
        let prices = self.prices.as_ref()?;
        let later = self.bodies.len() - 1;
        Some(SavingCost {
            model: prices.model.clone(),
            prices_date: prices.prices_date.clone(),
            currency: prices.currency.clone(),
            write_ttl: prices.ttl.clone(),
            per_1000_requests: cost::placement_saving(&prices.prices, later, now, then)?,
        })
    }

    /// The placement to advise: of the best placements with 1 to 4 breakpoints (and none),
    /// the one that saves the most money, the write premium counted; without prices, the
    /// one that reads the most, or as much with fewer writes.
    fn choose(&self) -> Choice {
        let requests = self.bodies.len();
        if requests < 2 {
            return Choice::Keep;
        }
        let later = (requests - 1) as i64;
        let cells = self.cells();
        let now = self.played(&cells, &self.current());
        let mut options: Vec<Placement> = (1..=self.limits.max_breakpoints)
            .map(|k| {
                let limits = Limits {
                    max_breakpoints: k,
                    ..self.limits
                };
                placement::optimal(&cells, limits)
            })
            .collect();
        options.push(Placement {
            breakpoints: Vec::new(),
            read: 0,
        });
        options.dedup_by(|a, b| a.breakpoints == b.breakpoints);
        let current_uniform: Vec<usize> = self.marked().iter().map(|m| m.index).collect();
        let scored: Vec<(Placement, Played, Option<SavingCost>)> = options
            .into_iter()
            .filter(|o| o.breakpoints != current_uniform)
            .map(|o| {
                let then = self.played(&cells, &placement::uniform(&o.breakpoints, &cells));
                let cost = self.saving_cost(now, then);
                (o, then, cost)
            })
            .collect();
        let tokens = |then: &Played| (then.later_read as i64 - now.later_read as i64) / later;
        let better = |then: &Played, cost: &Option<SavingCost>| match cost {
            Some(c) => c.per_1000_requests > 0,
            None => {
                then.later_read > now.later_read
                    || (then.later_read == now.later_read
                        && then.later_written + then.first_written
                            < now.later_written + now.first_written)
            }
        };
        // Most money saved; without prices, most read, then least written; then fewer
        // breakpoints (the options come fewest first, and `max_by_key` keeps the last).
        let best = scored
            .iter()
            .rev()
            .filter(|(_, then, cost)| better(then, cost))
            .max_by_key(|(_, then, cost)| {
                (
                    cost.as_ref().map_or(0, |c| c.per_1000_requests),
                    then.later_read,
                    std::cmp::Reverse(then.later_written + then.first_written),
                )
            });
        if let Some((target, then, cost)) = best {
            return Choice::Better {
                target: target.clone(),
                tokens: tokens(then),
                now,
                then: *then,
                cost: cost.clone(),
            };
        }
        // The placement that reads the most, which its writes make dearer.
        match scored
            .iter()
            .rev()
            .filter(|(_, then, _)| then.later_read > now.later_read)
            .max_by_key(|(_, then, _)| then.later_read)
        {
            Some((target, then, Some(cost))) => Choice::CostsMore {
                target: target.clone(),
                tokens: tokens(then),
                now,
                then: *then,
                cost: cost.clone(),
            },
            _ => Choice::Keep,
        }
    }

    fn paths(&self, indices: &[usize]) -> String {
        indices
            .iter()
            .map(|&i| self.path(i).to_owned())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The advice as a [`Saving`]: its figures, and the template edits that make it.
    fn saving(&self, target: &Placement, cost: &Option<SavingCost>) -> Saving {
        let requests = self.bodies.len();
        let cells = self.cells();
        let now = self.played(&cells, &self.current());
        let then = self.played(&cells, &placement::uniform(&target.breakpoints, &cells));
        let tokens = (then.later_read as i64 - now.later_read as i64) / (requests as i64 - 1);
        let marked = self.marked();
        let add: Vec<usize> = target
            .breakpoints
            .iter()
            .copied()
            .filter(|i| !marked.iter().any(|m| m.index == *i))
            .collect();
        let remove: Vec<String> = marked
            .iter()
            .filter(|m| !target.breakpoints.contains(&m.index))
            .map(|m| {
                if m.automatic {
                    "the top level".to_owned()
                } else {
                    self.path(m.index).to_owned()
                }
            })
            .collect();
        let title = match (add.is_empty(), remove.is_empty()) {
            (false, true) => format!("Add cache_control to {}", self.paths(&add)),
            (false, false) => format!(
                "Move cache_control to {} (from {})",
                self.paths(&add),
                remove.join(", ")
            ),
            (true, _) => format!("Remove cache_control from {}", remove.join(", ")),
        };
        let (edits, not_editable) = match self.edits(&target.breakpoints) {
            Ok(edits) => (edits, None),
            Err(why) => (Vec::new(), Some(why)),
        };
        Saving {
            tokens_per_request: tokens,
            cost: cost.clone(),
            edits,
            not_editable,
            title,
        }
    }

    /// The edits of the checked template that put its breakpoints at `target`: each mark
    /// not in it removed (its `"cache_control": {...}` member, written literally), and a
    /// member inserted before the closing brace of each target block that has none (inside
    /// a loop, for the list's last item only).
    fn edits(&self, target: &[usize]) -> Result<Vec<TemplateEdit>, String> {
        let mut edits = Vec::new();
        let marked = self.marked();
        for mark in marked.iter().filter(|m| !target.contains(&m.index)) {
            let range = member_range(self.source, mark.span.start).ok_or_else(|| {
                format!(
                    "the cache_control at {} is not written as literal JSON in this template",
                    self.path(mark.index)
                )
            })?;
            edits.push(TemplateEdit {
                range,
                replacement: String::new(),
            });
        }
        let member = match self.ttl {
            Ttl::OneHour => r#", "cache_control": {"type": "ephemeral", "ttl": "1h"}"#,
            Ttl::FiveMinutes => r#", "cache_control": {"type": "ephemeral"}"#,
        };
        for &index in target
            .iter()
            .filter(|i| !marked.iter().any(|m| m.index == **i))
        {
            let block = &self.bodies[0].blocks[index];
            if !block.takes_mark {
                return Err(format!(
                    "{} is a plain string: write it as a list of text blocks to carry cache_control",
                    block.path
                ));
            }
            let close = block
                .close
                .and_then(|c| {
                    c.template
                        .or_else(|| brace_by_context(self.renders.first()?, c.render, self.source))
                })
                .filter(|&at| self.source.as_bytes().get(at) == Some(&b'}'))
                .ok_or_else(|| {
                    format!(
                        "the end of {} is not written as literal JSON in this template",
                        block.path
                    )
                })?;
            let replacement = match (
                inside_loop(self.source, close),
                block.path.ends_with("[-1]"),
            ) {
                (false, _) => member.to_owned(),
                (true, true) => format!("{{% if loop.last %}}{member}{{% endif %}}"),
                (true, false) => {
                    return Err(format!(
                        "{} is written in a loop that writes other blocks too",
                        block.path
                    ))
                }
            };
            edits.push(TemplateEdit {
                range: close..close,
                replacement,
            });
        }
        Ok(edits)
    }

    /// A placement reads more than the one written: advised where it costs less, noted
    /// where its writes cost more than its reads save.
    fn better_placement(&self, choice: &Choice) -> Option<Finding> {
        let requests = self.bodies.len();
        let (target, tokens, now, then, cost, advised) = match choice {
            Choice::Keep => return None,
            Choice::Better {
                target,
                tokens,
                now,
                then,
                cost,
            } => (target, *tokens, now, then, cost.as_ref(), true),
            Choice::CostsMore {
                target,
                tokens,
                now,
                then,
                cost,
            } => (target, *tokens, now, then, Some(cost), false),
        };
        if tokens < self.min_lost_tokens.max(1) as i64 {
            return None;
        }
        let saved = tokens as usize;
        let later = requests - 1;
        let marked = self.marked();
        let current: Vec<usize> = marked.iter().map(|m| m.index).collect();
        let price_note = |cost: &SavingCost| {
            format!(
                "at {} prices of {}, the {} write premium counted",
                cost.model, cost.prices_date, cost.write_ttl
            )
        };
        let figures = format!(
            "{} now, {} then, over {} renders",
            thousands(now.later_read / later),
            thousands(then.later_read / later),
            requests
        );
        if !advised {
            let cost = cost?;
            let mut f = self.finding(
                Severity::Info,
                format!(
                    "cache_control breakpoints at {} would serve about {} more tokens per request from the cache ({figures}), but their cache writes cost more than the reads save: {} more per 1,000 requests {}",
                    self.paths(&target.breakpoints),
                    thousands(saved),
                    cost::format_signed_dollars(-cost.per_1000_requests),
                    price_note(cost)
                ),
                "keep the breakpoints written here: a breakpoint pays only where the prefix it writes is read often enough".into(),
            );
            if let Some(first) = marked.first() {
                f.span = first.span.clone();
            }
            f.label = "cheaper as written".into();
            return Some(f);
        }
        let add: Vec<usize> = target
            .breakpoints
            .iter()
            .copied()
            .filter(|i| !current.contains(i))
            .collect();
        let remove: Vec<&Marked> = marked
            .iter()
            .filter(|m| !target.breakpoints.contains(&m.index))
            .collect();
        let mut help = match (add.is_empty(), remove.is_empty()) {
            (false, true) => format!("add cache_control to {}", self.paths(&add)),
            (false, false) => format!("move cache_control to {}", self.paths(&add)),
            (true, _) => format!("keep cache_control on {}", self.paths(&target.breakpoints)),
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
            .filter(|i| target.breakpoints.contains(i))
            .collect();
        if !kept.is_empty() && !add.is_empty() {
            help.push_str(&format!(", and keep it on {}", self.paths(&kept)));
        }
        let strings: Vec<&str> = target
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
        let money = match cost {
            Some(cost) => format!(
                ": {} less per 1,000 requests {}",
                cost::format_signed_dollars(cost.per_1000_requests),
                price_note(cost)
            ),
            None => String::new(),
        };
        help.push_str(&match cost {
            Some(_) => format!(
                " (minimum {} for {})",
                thousands(self.limits.minimum),
                self.model
            ),
            None => format!(
                "; no prices for this model: the saving is in tokens read at 0.1× instead of 1× (minimum {} for {})",
                thousands(self.limits.minimum),
                self.model
            ),
        });
        let mut f = self.finding(
            Severity::Warning,
            format!(
                "cache_control breakpoints at {} would serve about {} more tokens per request from the cache than the ones written here ({figures}){money}",
                self.paths(&target.breakpoints),
                thousands(saved),
            ),
            help,
        );
        if let Some(first) = marked.first() {
            f.span = first.span.clone();
        }
        f.label = format!("{} tokens per request left uncached", thousands(saved));
        Some(f)
    }
}

/// Where no source map says (a render captured in a `{% set %}` block has none): the `}`
/// of the template whose literal text around it matches the render's around `offset` the
/// longest, if it is one place and matches at least a few bytes. A guess the fix's
/// verifier checks.
fn brace_by_context(text: &str, offset: usize, template: &str) -> Option<usize> {
    const REACH: usize = 200;
    const AT_LEAST: usize = 8;
    // Beyond this many braces the template is not a request body worth the search.
    const MAX_BRACES: usize = 20_000;
    let (render, source) = (text.as_bytes(), template.as_bytes());
    let braces: Vec<usize> = source
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'}')
        .map(|(i, _)| i)
        .take(MAX_BRACES + 1)
        .collect();
    if braces.len() > MAX_BRACES {
        return None;
    }
    let mut best: Option<(usize, usize)> = None;
    let mut tied = false;
    for p in braces {
        let before = source[..p]
            .iter()
            .rev()
            .zip(render[..offset].iter().rev())
            .take(REACH)
            .take_while(|(a, b)| a == b)
            .count();
        let after = source[p..]
            .iter()
            .zip(&render[offset..])
            .take(REACH)
            .take_while(|(a, b)| a == b)
            .count();
        let score = before + after;
        match best {
            Some((top, _)) if score < top => {}
            Some((top, _)) if score == top => tied = true,
            _ => {
                best = Some((score, p));
                tied = false;
            }
        }
    }
    let (score, at) = best.filter(|_| !tied)?;
    (score >= AT_LEAST).then_some(at)
}

/// Whether `offset` of the template lies inside a `{% for %}` block.
fn inside_loop(template: &str, offset: usize) -> bool {
    let mut depth = 0i64;
    for (at, _) in template[..offset].match_indices("{%") {
        let tag = template[at + 2..]
            .trim_start_matches(['-', '+'])
            .trim_start();
        if tag.starts_with("for ") {
            depth += 1;
        } else if tag.starts_with("endfor") {
            depth -= 1;
        }
    }
    depth > 0
}

/// The `"cache_control": {...}` member whose key starts at `key` in the template, with the
/// comma that joins it to its neighbour: `None` unless the template writes it as literal
/// JSON (no template tag inside).
fn member_range(source: &str, key: usize) -> Option<Range<usize>> {
    let bytes = source.as_bytes();
    if !source.get(key..)?.starts_with(CACHE_CONTROL_KEY) {
        return None;
    }
    let space = |mut at: usize| {
        while bytes.get(at).is_some_and(|b| b" \t\r\n".contains(b)) {
            at += 1;
        }
        at
    };
    let mut at = space(key + CACHE_CONTROL_KEY.len());
    if bytes.get(at) != Some(&b':') {
        return None;
    }
    at = space(at + 1);
    if bytes.get(at) != Some(&b'{') {
        return None;
    }
    let (mut depth, mut string) = (0usize, false);
    let end = loop {
        let byte = *bytes.get(at)?;
        if string {
            match byte {
                b'\\' => at += 1,
                b'"' => string = false,
                _ => {}
            }
        } else {
            match byte {
                b'"' => string = true,
                b'{' if matches!(bytes.get(at + 1), Some(b'{' | b'%' | b'#')) => return None,
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        break at + 1;
                    }
                }
                _ => {}
            }
        }
        at += 1;
    };
    let mut start = key;
    while start > 0 && b" \t\r\n".contains(&bytes[start - 1]) {
        start -= 1;
    }
    if start > 0 && bytes[start - 1] == b',' {
        return Some(start - 1..end);
    }
    let after = space(end);
    if bytes.get(after) == Some(&b',') {
        return Some(key..space(after + 1));
    }
    Some(key..end)
}

/// PL012: the `cache_control` breakpoints moved, added or removed to the placement the rule
/// advises (its edits, computed where it read the renders' source map). Safe: the model
/// reads the same request, only what is cached and billed changes; and the rule advises it
/// only where it costs less at the model's prices, the write premium counted.
fn breakpoint_placement(ctx: &FixContext) -> Result<Fix, String> {
    let (source, finding) = (ctx.source, ctx.finding);
    let saving = finding
        .saving
        .as_deref()
        .ok_or("no placement reads more or costs less than the breakpoints written here")?;
    if saving.edits.is_empty() {
        return Err(saving
            .not_editable
            .clone()
            .unwrap_or_else(|| "the placement needs no edit".into()));
    }
    // The edits are offsets of the text the rule read: refuse them where that text has
    // changed (a removal must take a `"cache_control"` member, an insertion go before `}`).
    for edit in &saving.edits {
        let (start, end) = (edit.range.start, edit.range.end);
        let fits = end <= source.len()
            && source.is_char_boundary(start)
            && source.is_char_boundary(end)
            && if start == end {
                source[start..].starts_with('}')
            } else {
                source[start..end].contains(CACHE_CONTROL_KEY)
            };
        if !fits {
            return Err("the template changed since its breakpoints were read".into());
        }
    }
    Ok(ctx.fix(
        Safety::Safe,
        FixKind::Rewrite,
        saving.title.clone(),
        saving
            .edits
            .iter()
            .map(|e| Edit {
                range: e.range.clone(),
                replacement: e.replacement.clone(),
            })
            .collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::member_range;

    #[test]
    fn a_member_is_removed_with_its_comma() {
        let text = r#"{"text": "a", "cache_control": {"type": "ephemeral", "ttl": "1h"}}"#;
        let key = text.find("\"cache_control\"").unwrap();
        let range = member_range(text, key).unwrap();
        assert_eq!(
            format!("{}{}", &text[..range.start], &text[range.end..]),
            r#"{"text": "a"}"#
        );
        let first = r#"{"cache_control": {"type": "ephemeral"},
 "system": []}"#;
        let range = member_range(first, 1).unwrap();
        assert_eq!(
            format!("{}{}", &first[..range.start], &first[range.end..]),
            r#"{"system": []}"#
        );
        let templated = r#"{"cache_control": {"type": {{ kind }}}}"#;
        assert_eq!(member_range(templated, 1), None);
        assert_eq!(member_range(r#"{"cache_control": {"#, 1), None);
        assert_eq!(member_range("{}", 1), None);
    }
}
