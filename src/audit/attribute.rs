//! `--templates DIR`: the template line that wrote a break seen in traffic.
//!
//! Every template in DIR is rendered once with its samples (`NAME.samples.yaml`, else
//! synthesized ones), instrumented, through the same `render` machinery as `check`. A break in
//! a system or user message is matched with the renders: the text of the message's line
//! before the break is looked up in each render, and the origin map there names the
//! expression that wrote what follows. Its file, line and column become a `check`-style
//! diagnostic under the rule that covers the cause (PL001 for clock, id and identity).

use crate::config::Config;
use crate::discover::{self, Matcher};
use crate::error::Result;
use crate::render::instrument::MarkEvent;
use crate::render::{Dialect, Render, RenderSettings, Renderer};
use crate::rules::{RuleCode, VolatileFields};
use crate::samples;
use crate::source;
use serde::Serialize;
use std::path::Path;

/// Where in a template a break was written.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TemplatePlace {
    pub file: String,
    pub line: usize,
    pub column: usize,
    /// The template source there, e.g. `{{ now }}`.
    pub expression: String,
    /// The `check` rule that reports this kind of break.
    pub rule: &'static str,
    pub rule_name: &'static str,
}

struct Rendered {
    display: String,
    renderer: Renderer,
    render: Render,
}

pub struct Templates {
    rendered: Vec<Rendered>,
}

/// The shortest line prefix worth matching: shorter ones match anywhere.
const MIN_ANCHOR: usize = 6;

impl Templates {
    pub fn load(dir: &Path, config: &Config, fields: &VolatileFields) -> Result<Templates> {
        let matcher = Matcher::new(&config.include, &config.exclude)?;
        let targets = discover::discover(&[dir.to_path_buf()], &matcher)?;
        let mut rendered = Vec::new();
        for target in targets {
            // A template that does not render here is left out: `check` reports it.
            if let Some(r) = render_one(dir, &target, fields) {
                rendered.push(r);
            }
        }
        Ok(Templates { rendered })
    }

    pub fn len(&self) -> usize {
        self.rendered.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rendered.is_empty()
    }

    /// The template place that wrote a break of `cause` at char `offset` of `value` (the
    /// message's new text). (It takes the break's parts, not the break: `breaks` holds a
    /// [`TemplatePlace`], so this module does not import it.)
    pub fn attribute(&self, value: &str, cause: &str, offset: usize) -> Option<TemplatePlace> {
        let code = match cause {
            "clock" | "id" | "identity" => RuleCode::VolatileBeforeStable,
            "whitespace" => RuleCode::WhitespaceDrift,
            "key-order" | "tool-order" => RuleCode::UnstableSerialization,
            "history-rewrite" => RuleCode::HistoryRewrite,
            _ => RuleCode::DivergenceBeforeStable,
        };
        let (rule, rule_name) = (code.as_str(), code.name());
        let at = value
            .char_indices()
            .nth(offset)
            .map_or(value.len(), |(i, _)| i);
        let line_start = value[..at].rfind('\n').map_or(0, |i| i + 1);
        let before = &value[line_start..at];
        let mut best: Option<(usize, &Rendered, usize)> = None;
        for r in &self.rendered {
            let text = &r.render.text;
            // The longest start of the line (up to the break) this render also has.
            let mut end = before.len();
            let found_at = loop {
                if end < MIN_ANCHOR.min(before.len()).max(1) {
                    break None;
                }
                let anchor = &before[..source::floor_char_boundary(before, end)];
                if let Some(p) = text.find(anchor) {
                    break Some((anchor.len(), p + anchor.len()));
                }
                end = source::floor_char_boundary(before, end - 1);
            };
            if let Some((len, offset)) = found_at {
                if best.is_none_or(|(l, _, _)| len > l) {
                    best = Some((len, r, offset));
                }
            }
        }
        let (_, r, offset) = best?;
        let map = r.render.map.as_ref()?;
        let (event, _) = map.origin_at(offset)?;
        let id = match event {
            MarkEvent::Open(id) | MarkEvent::Close(id) | MarkEvent::Text(id) => id,
        };
        let origin = r.renderer.origins().get(id as usize)?;
        Some(TemplatePlace {
            file: r.display.clone(),
            line: origin.line,
            column: origin.column,
            expression: origin.text.to_string(),
            rule,
            rule_name,
        })
    }
}

fn render_one(dir: &Path, target: &discover::Target, fields: &VolatileFields) -> Option<Rendered> {
    let display = source::display_path(&target.template);
    let text = source::read_text(&target.template, &display).ok()?;
    let mut renderer =
        Renderer::new(RenderSettings::new(Dialect::Jinja2, dir.to_path_buf())).ok()?;
    let prepared = renderer.prepare(&display, &text).ok()?;
    let shapes = samples::infer(&renderer, &prepared);
    let samples_path = target.samples_file();
    let mut loaded = if samples_path.is_file() {
        samples::load(&samples_path).ok()?
    } else {
        samples::synthesize(&shapes, fields, 1)
    };
    samples::add_stand_ins(&mut loaded, &shapes, fields);
    let context = loaded.contexts.first()?;
    let render = renderer.render(&prepared, context, loaded.clock(0)).ok()?;
    Some(Rendered {
        display,
        renderer,
        render,
    })
}
