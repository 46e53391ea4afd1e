//! Stage benchmarks for issue 7 (`cargo bench`): tokenizer loading, encoding on both
//! engines, rendering, and the whole `check` pipeline on the bundled prompts.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use prefixlint::config::Config;
use prefixlint::render::{Dialect, RenderSettings, Renderer};
use prefixlint::tokenize::bpe::{BpeParts, ByteLevelBpe};
use prefixlint::tokenize::{builtin_json, cache, HfTokenizer, TokenEngine, Tokens};
use std::hint::black_box;
use std::path::PathBuf;

/// Prompt-like text of about 4 KB: a bundled template's source, repeated.
fn prompt_text() -> String {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut text = String::new();
    for entry in walkdir::WalkDir::new(root.join("fixtures/chat-templates")) {
        let entry = entry.expect("fixtures");
        if text.len() < 4096 && entry.file_type().is_file() {
            text.push_str(&std::fs::read_to_string(entry.path()).unwrap_or_default());
        }
    }
    let mut end = text.len().min(4096);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text
}

fn loading(c: &mut Criterion) {
    let json = builtin_json().expect("embedded tokenizer");
    let cached = cache::encode(&BpeParts::from_tokenizer_json(&json).expect("supported"));
    let mut group = c.benchmark_group("load");
    group.sample_size(10);
    group.bench_function("tokenizers_from_json", |b| {
        b.iter(|| HfTokenizer::from_json_bytes(black_box(&json), "builtin").expect("loads"))
    });
    group.bench_function("bpe_from_cache", |b| {
        b.iter(|| ByteLevelBpe::new(cache::decode(black_box(&cached)).expect("decodes")))
    });
    group.bench_function("gunzip_builtin", |b| {
        b.iter(|| builtin_json().expect("gunzip"))
    });
    group.finish();
}

fn encoding(c: &mut Criterion) {
    let json = builtin_json().expect("embedded tokenizer");
    let bpe = ByteLevelBpe::new(BpeParts::from_tokenizer_json(&json).expect("supported"))
        .expect("builds");
    let reference = HfTokenizer::from_json_bytes(&json, "builtin").expect("loads");
    let text = prompt_text();
    let mut group = c.benchmark_group("encode_4k");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function("tokenizers", |b| {
        b.iter(|| reference.encode(black_box(&text)).expect("encodes"))
    });
    group.bench_function("byte_level_bpe", |b| {
        b.iter(|| {
            let mut tokens = Tokens::default();
            bpe.encode(black_box(&text), &mut tokens.ids, &mut tokens.offsets)
                .expect("NFC text");
            tokens
        })
    });
    group.finish();
}

fn rendering(c: &mut Criterion) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let source =
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
            .repeat(8);
    let context = minijinja::context! {
        messages => vec![
            minijinja::context! { role => "system", content => "You are a careful assistant. ".repeat(20) },
            minijinja::context! { role => "user", content => "What is the refund policy?" },
        ]
    };
    let mut group = c.benchmark_group("render");
    group.bench_function("prepare", |b| {
        b.iter_batched(
            || Renderer::new(RenderSettings::new(Dialect::Jinja2, root.clone())).expect("env"),
            |mut renderer| {
                renderer
                    .prepare("bench.j2", black_box(&source))
                    .expect("parses")
            },
            BatchSize::SmallInput,
        )
    });
    let mut renderer =
        Renderer::new(RenderSettings::new(Dialect::Jinja2, root.clone())).expect("env");
    let prepared = renderer.prepare("bench.j2", &source).expect("parses");
    group.bench_function("render_plain_and_instrumented", |b| {
        b.iter(|| {
            renderer
                .render(
                    &prepared,
                    black_box(&context),
                    prefixlint::render::clock::Clock::synthetic(0),
                )
                .expect("renders")
        })
    });
    group.finish();
}

fn pipeline(c: &mut Criterion) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    // Warm the tokenizer cache once, as a pre-commit hook's second run finds it.
    let options = prefixlint::check::CheckOptions {
        paths: vec![root.join("fixtures/prompts")],
        config: Config::default(),
        settings: Default::default(),
        cwd: root.clone(),
        no_ignores: false,
    };
    prefixlint::check::run(&options).expect("check runs");
    let mut group = c.benchmark_group("check");
    group.sample_size(10);
    group.bench_function("fixtures_prompts_warm_cache", |b| {
        b.iter(|| prefixlint::check::run(black_box(&options)).expect("check runs"))
    });
    group.finish();
}

criterion_group!(benches, loading, encoding, rendering, pipeline);
criterion_main!(benches);
