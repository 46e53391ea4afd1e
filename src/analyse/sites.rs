//! Every volatile site, not only the first divergence: each template expression whose
//! output differs between renders after the first divergence, with the stable content
//! that follows it. A compiler reports all its errors; so does prefixlint.

use super::stable_lines_after_each;
use crate::error::Result;
use crate::render::instrument::{MarkEvent, OriginTable, SourceMap};
use crate::render::Render;
use crate::tokenize::TokenEngine;
use std::collections::HashMap;
use std::ops::Range;

/// A template expression whose output differs between renders.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Site {
    /// The expression's origin id (see [`OriginTable`]).
    pub origin: u32,
    /// Its first differing output in render 0.
    pub range: Range<usize>,
    /// That output in each render, in sample order.
    pub values: Vec<String>,
    /// Tokens of the lines after it that are identical in every render: what stays out of
    /// the cache because of it, whatever else is fixed. Stand-ins' output is not counted.
    pub stable_tokens_after: usize,
    /// What those lines hold beyond that, in tokens: stand-ins' output.
    #[serde(default)]
    pub stand_in_tokens_after: usize,
    /// Differing expressions of the same template that wrap it (a macro call around the
    /// value), whose names say what the value is.
    pub enclosing: Vec<u32>,
}

impl Site {
    /// The stable lines after it as rendered, stand-ins' output included: what decides
    /// whether it is reported.
    pub fn stable_tokens_rendered(&self) -> usize {
        self.stable_tokens_after + self.stand_in_tokens_after
    }
}

/// More sites than this in one template are one problem (a loop over per-request data),
/// and each costs a tokenization.
const MAX_SITES: usize = 32;

/// The differing expressions whose output starts after byte `after` of render 0, in order.
/// An expression that only wraps another differing one of the same template (a macro call
/// around the value) is left out, and so is one of an included template that an
/// expression of `template` wraps: the innermost place the user can edit is reported.
/// Values that differ only in whitespace or in JSON key order are the whitespace and
/// serialization rules' business, not sites.
pub fn later_sites(
    renders: &[Render],
    engine: &dyn TokenEngine,
    origins: &OriginTable,
    template: &str,
    after: usize,
    skip_origin: Option<u32>,
) -> Result<Vec<Site>> {
    if renders.len() < 2 {
        return Ok(Vec::new());
    }
    let Some(maps) = renders
        .iter()
        .map(|r| r.map.as_ref())
        .collect::<Option<Vec<&SourceMap>>>()
    else {
        return Ok(Vec::new());
    };
    let outputs: Vec<HashMap<u32, Vec<Range<usize>>>> =
        maps.iter().map(|map| expression_outputs(map)).collect();
    let mut candidates: Vec<(Site, Vec<usize>, bool)> = Vec::new();
    for (&origin, first_ranges) in &outputs[0] {
        if Some(origin) == skip_origin {
            continue;
        }
        let Some(found) = first_difference(renders, &outputs, origin, first_ranges.len()) else {
            continue;
        };
        let (range, starts, values) = found;
        if range.start <= after || !really_differs(&values) {
            continue;
        }
        let own = origins
            .get(origin as usize)
            .is_some_and(|o| o.template.as_ref() == template);
        candidates.push((
            Site {
                origin,
                range,
                values,
                stable_tokens_after: 0,
                stand_in_tokens_after: 0,
                enclosing: Vec::new(),
            },
            starts,
            own,
        ));
    }
    let contains = |outer: &Range<usize>, inner: &Range<usize>| {
        outer != inner && outer.start <= inner.start && inner.end <= outer.end
    };
    let kept: Vec<bool> = candidates
        .iter()
        .map(|(site, _, own)| {
            !candidates.iter().any(|(other, _, other_own)| {
                // A wrapper of a same-template expression, or foreign output inside ours.
                (*own == *other_own && contains(&site.range, &other.range))
                    || (!*own && *other_own && contains(&other.range, &site.range))
            })
        })
        .collect();
    let wrappers: Vec<Vec<u32>> = candidates
        .iter()
        .map(|(site, _, own)| {
            candidates
                .iter()
                .filter(|(other, _, other_own)| {
                    own == other_own && contains(&other.range, &site.range)
                })
                .map(|(other, _, _)| other.origin)
                .collect()
        })
        .collect();
    let mut sites: Vec<(Site, Vec<usize>)> = candidates
        .into_iter()
        .zip(kept)
        .zip(wrappers)
        .filter(|((_, keep), _)| *keep)
        .map(|(((mut site, starts, _), _), enclosing)| {
            site.enclosing = enclosing;
            (site, starts)
        })
        .collect();
    sites.sort_by_key(|(site, _)| (site.range.start, site.origin));
    sites.truncate(MAX_SITES);
    let texts: Vec<&str> = renders.iter().map(|r| r.text.as_str()).collect();
    // Sites on the same lines share their stable tail: tokenize it once.
    let mut tails: HashMap<Vec<usize>, (usize, usize)> = HashMap::new();
    let mut out = Vec::with_capacity(sites.len());
    for (mut site, starts) in sites {
        let line_starts: Vec<usize> = texts
            .iter()
            .zip(&starts)
            .map(|(text, &start)| text[..start].rfind('\n').map_or(0, |i| i + 1))
            .collect();
        (site.stable_tokens_after, site.stand_in_tokens_after) = match tails.get(&line_starts) {
            Some(&tokens) => tokens,
            None => {
                let stable =
                    stable_lines_after_each(&texts, &starts, super::stand_in_output(renders));
                let tokens = super::stable_tokens(engine, &stable)?;
                tails.insert(line_starts, tokens);
                tokens
            }
        };
        out.push(site);
    }
    Ok(out)
}

/// Each expression's output ranges in one render, in order of occurrence.
fn expression_outputs(map: &SourceMap) -> HashMap<u32, Vec<Range<usize>>> {
    let mut outputs: HashMap<u32, Vec<Range<usize>>> = HashMap::new();
    let mut open: Vec<(u32, usize)> = Vec::new();
    for &(at, event) in &map.events {
        match event {
            MarkEvent::Open(id) => open.push((id, at)),
            MarkEvent::Close(id) => {
                if let Some(pos) = open.iter().rposition(|(o, _)| *o == id) {
                    let (_, start) = open.remove(pos);
                    outputs.entry(id).or_default().push(start..at);
                }
            }
            MarkEvent::Text(_) => {}
        }
    }
    // Nested closes come first: put each expression's occurrences back in output order.
    for ranges in outputs.values_mut() {
        ranges.sort_by_key(|r| r.start);
    }
    outputs
}

/// The first occurrence of `origin` whose output is not the same in every render: its
/// range in render 0, its start in each render, and its values.
fn first_difference(
    renders: &[Render],
    outputs: &[HashMap<u32, Vec<Range<usize>>>],
    origin: u32,
    occurrences: usize,
) -> Option<(Range<usize>, Vec<usize>, Vec<String>)> {
    let per_render: Vec<&Vec<Range<usize>>> = outputs
        .iter()
        .map(|o| o.get(&origin))
        .collect::<Option<_>>()?;
    let shared = per_render
        .iter()
        .map(|r| r.len())
        .min()
        .unwrap_or(0)
        .min(occurrences);
    (0..shared).find_map(|n| {
        let values: Vec<&str> = renders
            .iter()
            .zip(&per_render)
            .map(|(render, ranges)| render.text.get(ranges[n].clone()).unwrap_or_default())
            .collect();
        values.iter().any(|v| *v != values[0]).then(|| {
            (
                per_render[0][n].clone(),
                per_render.iter().map(|r| r[n].start).collect(),
                values.iter().map(|v| (*v).to_owned()).collect(),
            )
        })
    })
}

/// Differs in more than whitespace, and is not the same JSON data written differently.
fn really_differs(values: &[String]) -> bool {
    let squeezed: Vec<String> = values
        .iter()
        .map(|v| v.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    squeezed.iter().any(|v| *v != squeezed[0])
        && !super::same_data::same_data_different_text(values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::instrument::MarkEvent::{Close, Open, Text};

    #[test]
    fn outputs_pair_opens_and_closes_in_output_order() {
        let map = SourceMap {
            events: vec![
                (0, Text(9)),
                (2, Open(1)),
                (3, Open(2)),
                (5, Close(2)),
                (6, Close(1)),
                (8, Open(2)),
                (9, Close(2)),
            ],
            stand_ins: Vec::new(),
        };
        let outputs = expression_outputs(&map);
        assert_eq!(outputs[&1], vec![2..6]);
        assert_eq!(outputs[&2], vec![3..5, 8..9]);
    }

    #[test]
    fn whitespace_and_json_order_are_not_differences() {
        assert!(!really_differs(&["a  b".into(), "a b".into()]));
        assert!(!really_differs(&[
            r#"{"a": 1, "b": 2}"#.into(),
            r#"{"b": 2, "a": 1}"#.into()
        ]));
        assert!(really_differs(&["fix/login".into(), "feat/search".into()]));
    }
}
