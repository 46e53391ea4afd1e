//! Arbitrary bytes as a template of another format than Jinja (the first byte picks:
//! `{var}`, CrewAI, f-string, Semantic Kernel, Mustache) through the `check` pipeline: parse →
//! synthesize samples from its Jinja reading → render natively → tokenize → analyse →
//! rules. Invariants: a syntax error's offset is inside the text; a render's source map
//! points inside its text, in order, at origins that exist.

use prefixlint::analyse;
use prefixlint::cache_profile::CacheProfile;
use prefixlint::check::render_all;
use prefixlint::formats::{self, TemplateFormat};
use prefixlint::render::instrument::MarkEvent;
use prefixlint::render::{Dialect, Limits, RenderSettings, Renderer};
use prefixlint::rules::{self, RuleContext, VolatileFields};
use prefixlint::samples;
use prefixlint::source;
use prefixlint::tokenize::{HfTokenizer, TokenEngine};
use std::sync::OnceLock;

struct Shared {
    engine: HfTokenizer,
    profile: CacheProfile,
    fields: VolatileFields,
    root: std::path::PathBuf,
}

fn shared() -> &'static Shared {
    static SHARED: OnceLock<Shared> = OnceLock::new();
    SHARED.get_or_init(|| {
        let root = std::env::temp_dir().join("prefixlint-fuzz-root");
        std::fs::create_dir_all(&root).expect("temp root");
        Shared {
            engine: HfTokenizer::builtin().expect("embedded tokenizer"),
            profile: CacheProfile::default(),
            fields: VolatileFields::new(&[]).expect("builtin fields"),
            root,
        }
    })
}

const FORMATS: [TemplateFormat; 5] = [
    TemplateFormat::Format,
    TemplateFormat::CrewAi,
    TemplateFormat::FString,
    TemplateFormat::SemanticKernel,
    TemplateFormat::Mustache,
];

pub fn run(data: &[u8]) {
    let shared = shared();
    let Some((&pick, data)) = data.split_first() else {
        return;
    };
    let format = FORMATS[usize::from(pick) % FORMATS.len()];
    let Ok(text) = source::decode_text(data, "fuzz.txt") else {
        return;
    };
    if let Err(e) = formats::parse(format, &text) {
        assert!(
            e.offset <= text.len(),
            "{format}: offset {} past {}",
            e.offset,
            text.len()
        );
    }
    let mut settings = RenderSettings::new(Dialect::Jinja2, shared.root.clone());
    settings.limits = Limits {
        fuel: 50_000,
        recursion: 50,
        max_output_bytes: 64 * 1024,
    };
    let Ok(mut renderer) = Renderer::new(settings) else {
        return;
    };
    let template = match renderer.prepare_as("fuzz.txt", &text, format) {
        Ok(t) => t,
        Err(e) => {
            let _ = format!("{:?}", miette::Report::new(e));
            return;
        }
    };
    let shapes = samples::infer(&renderer, &template);
    let samples = samples::synthesize(&shapes, &shared.fields, 3);
    let renders = match render_all(&renderer, &template, &samples) {
        Ok(r) => r,
        Err(e) => {
            let _ = format!("{:?}", miette::Report::new(e));
            return;
        }
    };
    for render in &renders {
        assert!(
            render.text.len() <= 64 * 1024,
            "{format}: over the output limit"
        );
        let Some(map) = &render.map else { continue };
        let mut last = 0;
        for &(at, event) in &map.events {
            assert!(
                at >= last && at <= render.text.len(),
                "{format}: map out of order"
            );
            last = at;
            let (MarkEvent::Open(id) | MarkEvent::Close(id) | MarkEvent::Text(id)) = event;
            let origin = renderer
                .origins()
                .get(id as usize)
                .expect("a registered origin");
            assert!(origin.span.end <= text.len() && text.is_char_boundary(origin.span.start));
        }
    }
    let Ok(tokens) = renders
        .iter()
        .map(|r| shared.engine.encode(&r.text))
        .collect::<Result<Vec<_>, _>>()
    else {
        return;
    };
    let Ok(analysis) = analyse::analyse(
        &renders,
        &tokens,
        &shared.engine,
        renderer.origins(),
        &template.name,
    ) else {
        return;
    };
    let ctx = RuleContext::new(
        &template,
        &analysis,
        renderer.origins(),
        &shared.fields,
        1,
        &shared.profile,
    );
    for rule in rules::analysis_rules() {
        for finding in rule.check(&ctx) {
            let _ = format!("{finding:?}");
        }
    }
}
