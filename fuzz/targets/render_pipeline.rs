//! Arbitrary bytes as a template through the whole `check` pipeline: decode → prepare →
//! synthesize samples → render (plain and instrumented) → tokenize → analyse → rules.

use prefixlint::analyse;
use prefixlint::cache_profile::CacheProfile;
use prefixlint::check::render_all;
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
        // An empty project root: includes find nothing, and nothing outside is reachable.
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

pub fn run(data: &[u8]) {
    let shared = shared();
    // First byte picks the dialect, so both environments are fuzzed.
    let (dialect, data) = match data.split_first() {
        Some((b, rest)) if b & 1 == 1 => (Dialect::Transformers, rest),
        Some((_, rest)) => (Dialect::Jinja2, rest),
        None => return,
    };
    let Ok(text) = source::decode_text(data, "fuzz.j2") else {
        return;
    };
    let mut settings = RenderSettings::new(dialect, shared.root.clone());
    // Smaller than the defaults so each run is fast; the limits' logic is the same.
    settings.limits = Limits {
        fuel: 50_000,
        recursion: 50,
        max_output_bytes: 64 * 1024,
    };
    let Ok(mut renderer) = Renderer::new(settings) else {
        return;
    };
    let template = match renderer.prepare("fuzz.j2", &text) {
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
