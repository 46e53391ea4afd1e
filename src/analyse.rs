//! Stage 5a: the numbers. Given the renders of one template and their tokens: the longest
//! token prefix they all share, where they first differ and what wrote that, and how many
//! stable tokens sit behind the break.

pub mod placement;
pub mod prompt_order;
pub mod request_body;
pub mod same_data;
pub mod sites;

use crate::error::Result;
use crate::render::instrument::{MarkEvent, OriginKind, OriginTable};
use crate::render::Render;
use crate::tokenize::{TokenEngine, Tokens};

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Analysis {
    pub samples: usize,
    pub token_counts: Vec<usize>,
    pub tokens_min: usize,
    pub tokens_max: usize,
    /// Longest common prefix of the token ids of all renders.
    pub shared_prefix_tokens: usize,
    /// Tokens of the lines after the first divergence that are identical in every render,
    /// less the output of stand-ins: the text the template itself fixes.
    pub recoverable_tokens: usize,
    /// What those lines hold beyond that, in tokens: stand-ins' output, the same in every
    /// render because nobody gave a real value (a synthesized setting such as few-shot
    /// turns, whose real text is stable too, of a length nobody knows).
    #[serde(default)]
    pub stand_in_tokens: usize,
    pub divergence: Option<Divergence>,
    /// What the selected engine serves from its cache (see [`crate::cache_profile`]). `analyse`
    /// fills in the default profile; `check` applies the configured one.
    pub cached_tokens_expected: usize,
    /// Tokens of the text all renders share (up to the first divergence) when it is
    /// encoded on its own: more than `shared_prefix_tokens` when the last shared token
    /// straddles the divergence.
    pub text_prefix_tokens: Option<usize>,
    /// The rendered texts and their tokens, in sample order, for rules that compare renders.
    #[serde(skip)]
    pub renders: Vec<String>,
    #[serde(skip)]
    pub tokens: Vec<Tokens>,
    /// Each render read as a hosted API's JSON request body, when every render is one
    /// (see [`request_body`]); empty otherwise.
    #[serde(skip)]
    pub bodies: Vec<request_body::RequestBody>,
    /// The differing expressions after the first divergence, each with the stable tokens
    /// after it (see [`sites::later_sites`]).
    pub later_sites: Vec<sites::Site>,
}

impl Analysis {
    /// Drops the renders, their tokens and the values each render had at the divergence
    /// and the later sites, once the rules have read them: reports need only the figures,
    /// and a run over thousands of templates must not keep every render's text.
    pub fn without_renders(mut self) -> Self {
        self.renders = Vec::new();
        self.tokens = Vec::new();
        self.bodies = Vec::new();
        if let Some(cause) = self.divergence.as_mut().and_then(|d| d.cause.as_mut()) {
            cause.values = Vec::new();
        }
        for site in &mut self.later_sites {
            site.values = Vec::new();
        }
        self
    }

    /// Share of the shortest render that every render shares, in percent. An empty render
    /// has nothing to cache: 0%.
    pub fn cacheable_percent(&self) -> f64 {
        if self.tokens_min == 0 {
            return 0.0;
        }
        100.0 * self.shared_prefix_tokens as f64 / self.tokens_min as f64
    }

    /// The stable lines after the first divergence as rendered, stand-ins' output
    /// included: what decides whether a divergence matters (`min_lost_tokens`), since a
    /// setting that stood in for real text is stable in production too.
    pub fn stable_tokens_rendered(&self) -> usize {
        self.recoverable_tokens + self.stand_in_tokens
    }

    /// Later sites with at least `min_lost_tokens` stable tokens after them (as rendered),
    /// when the first divergence is reported too: each is reported on its own, besides it.
    pub fn reported_later_sites(
        &self,
        min_lost_tokens: usize,
    ) -> impl Iterator<Item = &sites::Site> {
        let first_reported = self.stable_tokens_rendered() >= min_lost_tokens;
        self.later_sites
            .iter()
            .filter(move |s| first_reported && s.stable_tokens_rendered() >= min_lost_tokens)
    }

    /// Keeps only [`Self::reported_later_sites`], so the report's figures count those.
    pub fn retain_reported_sites(&mut self, min_lost_tokens: usize) {
        self.later_sites = self
            .reported_later_sites(min_lost_tokens)
            .cloned()
            .collect();
    }

    /// With several sites: the stable tokens that moving all of them brings into the
    /// prefix, which is everything stable after the first divergence.
    pub fn recoverable_tokens_all_sites(&self) -> Option<usize> {
        (!self.later_sites.is_empty()).then_some(self.recoverable_tokens)
    }
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Divergence {
    /// First byte offset at which some render differs from render 0 (or ends).
    pub offset: usize,
    /// The render that differs from render 0 first.
    pub other: usize,
    /// What wrote the differing bytes, when the renders carry source maps.
    pub cause: Option<Cause>,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Cause {
    pub origin: u32,
    pub kind: OriginKind,
    /// The expression's output in each render, where it could be found (expressions only).
    pub values: Vec<String>,
    /// Where that output starts in render 0: text between there and the divergence is
    /// the value's own, shared by chance (`fix/…` and `feat/…`), not template text.
    pub value_start: Option<usize>,
    /// Enclosing expressions, outermost first (macro calls around the culprit).
    pub enclosing: Vec<u32>,
    /// The last place of the checked template that wrote output before the divergence,
    /// for a culprit in an included file.
    pub anchor: Option<u32>,
}

pub fn analyse(
    renders: &[Render],
    tokens: &[Tokens],
    engine: &dyn TokenEngine,
    origins: &OriginTable,
    template: &str,
) -> Result<Analysis> {
    let mut analysis = figures(renders, tokens, engine, origins, template)?;
    analysis.bodies = request_body::read_all(renders, engine, origins, template)?;
    analysis.renders = renders.iter().map(|r| r.text.clone()).collect();
    analysis.tokens = tokens.to_vec();
    Ok(analysis)
}

/// [`analyse`] keeping the renders' texts and tokens without copying them.
pub fn analyse_owned(
    renders: Vec<Render>,
    tokens: Vec<Tokens>,
    engine: &dyn TokenEngine,
    origins: &OriginTable,
    template: &str,
) -> Result<Analysis> {
    let mut analysis = figures(&renders, &tokens, engine, origins, template)?;
    analysis.bodies = request_body::read_all(&renders, engine, origins, template)?;
    analysis.renders = renders.into_iter().map(|r| r.text).collect();
    analysis.tokens = tokens;
    Ok(analysis)
}

/// Everything but the renders and tokens themselves.
fn figures(
    renders: &[Render],
    tokens: &[Tokens],
    engine: &dyn TokenEngine,
    origins: &OriginTable,
    template: &str,
) -> Result<Analysis> {
    let token_counts: Vec<usize> = tokens.iter().map(Tokens::len).collect();
    let tokens_min = token_counts.iter().copied().min().unwrap_or(0);
    let tokens_max = token_counts.iter().copied().max().unwrap_or(0);
    let shared_prefix_tokens = match tokens.split_first() {
        Some((first, rest)) => rest
            .iter()
            .map(|t| common_prefix(&first.ids, &t.ids))
            .min()
            .unwrap_or(first.len()),
        None => 0,
    };
    let divergence = first_divergence(renders, origins, template);
    let (recoverable_tokens, stand_in_tokens) = match &divergence {
        Some(d) => {
            let texts: Vec<&str> = renders.iter().map(|r| r.text.as_str()).collect();
            stable_tokens(
                engine,
                &stable_lines_after(&texts, d.offset, stand_in_output(renders)),
            )?
        }
        None => (0, 0),
    };
    let text_prefix_tokens = match (&divergence, renders.first()) {
        // The shared text as the start of a prompt: behind the BOS the server added, if any.
        (Some(d), Some(first)) => Some(prefix_tokens(engine, first, tokens.first(), d.offset)?),
        _ => None,
    };
    let later_sites = match &divergence {
        Some(d) => sites::later_sites(
            renders,
            engine,
            origins,
            template,
            d.offset,
            d.cause.as_ref().map(|c| c.origin),
        )?,
        None => Vec::new(),
    };
    Ok(Analysis {
        samples: renders.len(),
        token_counts,
        tokens_min,
        tokens_max,
        shared_prefix_tokens,
        recoverable_tokens,
        stand_in_tokens,
        divergence,
        cached_tokens_expected: crate::cache_profile::CacheProfile::default()
            .cached_tokens(shared_prefix_tokens, tokens_min),
        text_prefix_tokens,
        renders: Vec::new(),
        tokens: Vec::new(),
        bodies: Vec::new(),
        later_sites,
    })
}

/// The tokens of `first`'s text up to `offset` as the start of a prompt (behind the BOS
/// the server added, if any): `added_prefix + encode(text[..offset])`, taking over the
/// render's own tokens up to their last safe boundary before `offset` (`encode_after`,
/// equal to a whole encode).
fn prefix_tokens(
    engine: &dyn TokenEngine,
    first: &Render,
    first_tokens: Option<&Tokens>,
    offset: usize,
) -> Result<usize> {
    let prefix = &first.text[..offset];
    let added = added_prefix(engine, first_tokens);
    let Some(first_tokens) = first_tokens else {
        return Ok(added + engine.encode(prefix)?.len());
    };
    let encoded = engine.encode_after(&first.text, first_tokens, prefix)?;
    // The server's prefix tokens come along when tokens were taken over.
    Ok(
        if added > 0 && added_prefix(engine, Some(&encoded)) == added {
            encoded.len()
        } else {
            added + encoded.len()
        },
    )
}

/// How many special tokens the server put before the text (they cover no text).
fn added_prefix(engine: &dyn TokenEngine, tokens: Option<&Tokens>) -> usize {
    let prefix = &engine.special_tokens().prefix;
    match tokens {
        Some(t)
            if t.ids.starts_with(prefix)
                && t.offsets.iter().take(prefix.len()).all(|&o| o == (0, 0)) =>
        {
            prefix.len()
        }
        _ => 0,
    }
}

/// The number of tokens `engine.encode(text)` gives, through the engine's line cache where
/// it has one: `encode_after` with nothing earlier encodes the whole text, a line at a time.
/// The stable lines counted here are lines of renders this thread has just encoded.
pub(crate) fn token_count(engine: &dyn TokenEngine, text: &str) -> Result<usize> {
    Ok(engine.encode_after("", &Tokens::default(), text)?.len())
}

pub fn common_prefix<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    crate::tokenize::bpe::common_prefix(a, b)
}

fn common_text_prefix(a: &str, b: &str) -> usize {
    let bytes = common_prefix(a.as_bytes(), b.as_bytes());
    crate::source::floor_char_boundary(a, bytes)
}

fn first_divergence(
    renders: &[Render],
    origins: &OriginTable,
    template: &str,
) -> Option<Divergence> {
    let (first, rest) = renders.split_first()?;
    let (other, offset) = rest
        .iter()
        .enumerate()
        .filter(|(_, r)| r.text != first.text)
        .map(|(i, r)| (i + 1, common_text_prefix(&first.text, &r.text)))
        .min_by_key(|&(i, offset)| (offset, i))?;
    let cause = cause_at(renders, 0, other, offset).map(|mut cause| {
        cause.anchor = first.map.as_ref().and_then(|map| {
            map.events
                .iter()
                .take_while(|(at, _)| *at <= offset)
                .filter_map(|(_, event)| match event {
                    MarkEvent::Open(id) | MarkEvent::Text(id) => Some(*id),
                    MarkEvent::Close(_) => None,
                })
                .filter(|id| {
                    origins
                        .get(*id as usize)
                        .is_some_and(|o| o.template.as_ref() == template)
                })
                .last()
        });
        cause
    });
    Some(Divergence {
        offset,
        other,
        cause,
    })
}

/// Looks in both renders of the diverging pair; an expression beats a text run, since
/// a different branch usually shows up as text right after the expression that moved it.
fn cause_at(renders: &[Render], a: usize, b: usize, offset: usize) -> Option<Cause> {
    let mut found: Vec<(MarkEvent, Vec<u32>)> = [a, b]
        .iter()
        .filter_map(|&i| renders[i].map.as_ref()?.origin_at(offset))
        .collect();
    found.sort_by_key(|(event, _)| !matches!(event, MarkEvent::Open(_)));
    let (event, stack) = found.into_iter().next()?;
    let (origin, kind) = match event {
        MarkEvent::Open(id) | MarkEvent::Close(id) => (id, OriginKind::Expression),
        MarkEvent::Text(id) => (id, OriginKind::Text),
    };
    let ranges: Vec<Option<std::ops::Range<usize>>> = if kind == OriginKind::Expression {
        renders
            .iter()
            .map(|r| {
                r.map
                    .as_ref()?
                    .expression_ranges(origin)
                    .into_iter()
                    .find(|range| range.start <= offset && offset <= range.end)
            })
            .collect()
    } else {
        Vec::new()
    };
    let values = renders
        .iter()
        .zip(&ranges)
        .filter_map(|(r, range)| Some(r.text[range.clone()?].to_owned()))
        .collect();
    let value_start = ranges.first().cloned().flatten().map(|range| range.start);
    let enclosing = stack.iter().rev().skip(1).rev().copied().collect();
    Some(Cause {
        origin,
        kind,
        values,
        value_start,
        enclosing,
        anchor: None,
    })
}

/// The tokens of stable lines: of the text the template fixes, and of the stand-ins'
/// output in them besides.
pub(crate) fn stable_tokens(
    engine: &dyn TokenEngine,
    stable: &StableLines,
) -> Result<(usize, usize)> {
    let count = |text: &str| -> Result<usize> {
        if text.is_empty() {
            Ok(0)
        } else {
            token_count(engine, text)
        }
    };
    let rendered = count(&stable.rendered)?;
    match &stable.fixed {
        Some(fixed) => {
            let fixed = count(fixed)?;
            Ok((fixed, rendered.saturating_sub(fixed)))
        }
        None => Ok((rendered, 0)),
    }
}

/// The stable lines after a place: as rendered, and less stand-ins' output where they
/// held some.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StableLines {
    pub rendered: String,
    /// `None` when no stand-in wrote any of them.
    pub fixed: Option<String>,
}

impl StableLines {
    /// The text the template itself fixes.
    pub fn fixed(&self) -> &str {
        self.fixed.as_deref().unwrap_or(&self.rendered)
    }
}

/// Render 0's stand-in output ([`crate::render::instrument::SourceMap::stand_ins`]).
pub(crate) fn stand_in_output(renders: &[Render]) -> &[std::ops::Range<usize>] {
    renders
        .first()
        .and_then(|r| r.map.as_ref())
        .map_or(&[], |map| map.stand_ins.as_slice())
}

/// The lines after the one holding `offset` whose text is identical in every render,
/// counted as a multiset, concatenated in render 0's order, less render 0's `stand_ins`
/// (byte ranges of stand-in output: text nobody gave is the same in every render, but is
/// not stable content). That is the content a fix (moving the volatile part to the end)
/// would bring back into the shared prefix: the text the template itself fixes.
pub fn stable_lines_after(
    texts: &[&str],
    offset: usize,
    stand_ins: &[std::ops::Range<usize>],
) -> StableLines {
    stable_lines_after_each(texts, &vec![offset; texts.len()], stand_ins)
}

/// [`stable_lines_after`] with the place given in each render: a later site's output
/// starts at a different offset in each.
pub fn stable_lines_after_each(
    texts: &[&str],
    offsets: &[usize],
    stand_ins: &[std::ops::Range<usize>],
) -> StableLines {
    use std::collections::HashMap;
    // The lines are counted where they lie in the renders, not copied.
    fn tail(text: &str, offset: usize) -> &str {
        let rest = &text[crate::source::floor_char_boundary(text, offset)..];
        match rest.find('\n') {
            Some(i) => &rest[i + 1..],
            None => "",
        }
    }
    let Some((first, others)) = texts.split_first() else {
        return StableLines {
            rendered: String::new(),
            fixed: None,
        };
    };
    let offset_of = |n: usize| offsets.get(n).copied().unwrap_or(0);
    let mut counts: Vec<HashMap<&str, usize>> = others
        .iter()
        .enumerate()
        .map(|(n, t)| {
            let mut m = HashMap::new();
            for line in tail(t, offset_of(n + 1)).split_inclusive('\n') {
                *m.entry(line).or_insert(0) += 1;
            }
            m
        })
        .collect();
    let mut rendered = String::new();
    let mut fixed = String::new();
    // Stand-in ranges not yet passed, in order.
    let mut stand_ins = stand_ins.iter().peekable();
    for line in tail(first, offset_of(0)).split_inclusive('\n') {
        let everywhere = counts.iter().all(|m| m.get(line).is_some_and(|&n| n > 0));
        if everywhere {
            for m in &mut counts {
                if let Some(n) = m.get_mut(line) {
                    *n -= 1;
                }
            }
            rendered.push_str(line);
            let start = line.as_ptr() as usize - first.as_ptr() as usize;
            push_without(&mut fixed, line, start, &mut stand_ins);
        }
    }
    let fixed = (fixed.len() != rendered.len()).then_some(fixed);
    StableLines { rendered, fixed }
}

/// Appends `line` (at byte `start` of its render) less the parts that `stand_ins` (sorted,
/// those ending before `start` already passed) cover.
fn push_without<'r>(
    out: &mut String,
    line: &str,
    start: usize,
    stand_ins: &mut std::iter::Peekable<impl Iterator<Item = &'r std::ops::Range<usize>>>,
) {
    let end = start + line.len();
    while stand_ins.next_if(|r| r.end <= start).is_some() {}
    let mut copied = start;
    while let Some(range) = stand_ins.peek() {
        if range.start >= end {
            break;
        }
        let from = range.start.max(copied);
        out.push_str(&line[copied - start..from - start]);
        copied = copied.max(range.end.min(end));
        if range.end > end {
            break;
        }
        stand_ins.next();
    }
    out.push_str(&line[copied - start..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_lines_are_a_multiset_in_every_render() {
        let a = "t=1\nA\nB\nB\nq1\n";
        let b = "t=2\nA\nB\nq2\nC\n";
        assert_eq!(stable_lines_after(&[a, b], 2, &[]).rendered, "A\nB\n");
        assert_eq!(stable_lines_after(&[a], 2, &[]).fixed(), "A\nB\nB\nq1\n");
    }

    /// Stand-in output is left out of the stable lines, wherever it sits in them.
    #[test]
    fn stand_in_output_is_not_stable() {
        let a = "q=1\nTools: tools 1, tools 2\nFixed.\nsetting 1\n";
        let b = "q=2\nTools: tools 1, tools 2\nFixed.\nsetting 1\n";
        let tools = a.find("tools 1").unwrap();
        let setting = a.find("setting 1").unwrap();
        let stand_ins = [
            0..1,
            tools..tools + 7,
            tools + 9..tools + 16,
            setting..setting + 10,
        ];
        let stable = stable_lines_after(&[a, b], 2, &stand_ins);
        assert_eq!(stable.fixed(), "Tools: , \nFixed.\n");
        assert_eq!(stable.rendered, &a[4..]);
        // A range over several lines.
        let across = tools + 3..a.find("d.").unwrap();
        assert_eq!(
            stable_lines_after(&[a, b], 2, std::slice::from_ref(&across)).fixed(),
            "Tools: tood.\nsetting 1\n"
        );
    }

    /// Counting through the line cache gives `encode`'s count, cold and after the lines
    /// were encoded as part of other texts.
    #[test]
    fn token_count_equals_the_length_of_encode() {
        let dir = tempfile::tempdir().unwrap();
        let engine = crate::tokenize::TokenizerSpec::Builtin
            .load_with_cache(true, Some(dir.path()))
            .unwrap();
        let texts = [
            "",
            "one line",
            "Answer the question.\n  Use the context below.\n\n",
            "  indented {\"json\": [1, 2]}\n\tTabbed line\r\nlast, no newline",
            "caf\u{e9} \u{6771}\u{4eac} \u{1F600}\n\n\n   \nend\n",
        ];
        for _ in 0..2 {
            for text in texts {
                let whole = engine.encode(text).unwrap().len();
                assert_eq!(
                    token_count(engine.as_ref(), text).unwrap(),
                    whole,
                    "{text:?}"
                );
                let joined = format!("{text}\n{text}");
                engine.encode_all(&[&joined, text]).unwrap();
            }
        }
    }

    #[test]
    fn common_prefix_counts() {
        assert_eq!(common_prefix(&[1, 2, 3], &[1, 2, 4]), 2);
        assert_eq!(common_prefix::<u8>(&[], &[1]), 0);
        assert_eq!(common_text_prefix("aé", "aè"), 1);
    }
}
