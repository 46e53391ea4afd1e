//! PL012's placement is optimal: on every fixture of `fixtures/cache-breakpoint-placement`,
//! the breakpoints `analyse::placement::optimal` chooses read as many tokens as the best of
//! all placements found by exhaustive search (each played by `simulate`), with as few
//! breakpoints. The renders, blocks and token counts are the real pipeline's, read through
//! the library as `check` reads them. (Generated cases: the unit tests of
//! `src/analyse/placement.rs`.)

use prefixlint::analyse::placement::{self, Cell, Limits};
use prefixlint::cache_profile::{
    anthropic_minimum, CacheProfile, ANTHROPIC_LOOKBACK_BLOCKS, ANTHROPIC_MAX_BREAKPOINTS,
};
use prefixlint::config::Config;
use prefixlint::render::Renderer;
use prefixlint::rules::VolatileFields;
use std::path::{Path, PathBuf};

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/cache-breakpoint-placement");
    let mut found: Vec<PathBuf> = ["fail", "pass"]
        .iter()
        .flat_map(|sub| std::fs::read_dir(dir.join(sub)).expect("fixture folder"))
        .map(|e| e.expect("fixture entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "j2"))
        .collect();
    found.sort();
    found
}

/// The fixture's requests as the cache sees them, and the limits for its model.
fn requests(path: &Path) -> (Vec<Vec<Cell>>, Limits) {
    let config = Config::default();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf();
    let mut renderer = Renderer::new(config.render_settings(root.clone())).expect("renderer");
    let engine =
        prefixlint::request::load_tokenizer("default", config.special_tokens).expect("tokenizer");
    let fields = VolatileFields::new(&config.volatile_fields).expect("fields");
    let (_, analysis) = prefixlint::check::check_template(
        path,
        &root,
        &mut renderer,
        engine.as_ref(),
        &fields,
        &config,
    )
    .expect("the fixture checks");
    assert!(
        !analysis.bodies.is_empty(),
        "{}: read as request bodies",
        path.display()
    );
    let requests = analysis
        .bodies
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
        .collect();
    let model = analysis.bodies[0].model.as_deref();
    let limits = Limits {
        minimum: anthropic_minimum(&CacheProfile::default(), model).0,
        lookback: ANTHROPIC_LOOKBACK_BLOCKS,
        max_breakpoints: ANTHROPIC_MAX_BREAKPOINTS,
    };
    (requests, limits)
}

#[test]
fn the_placement_equals_exhaustive_search_on_every_fixture() {
    let mut with_two = 0;
    let cases = fixtures();
    assert!(cases.len() >= 7, "{cases:?}");
    for path in &cases {
        let (requests, limits) = requests(path);
        // The fixtures' minimum and a low one, so short prefixes count too.
        for minimum in [limits.minimum, 10] {
            let limits = Limits { minimum, ..limits };
            let fast = placement::optimal(&requests, limits);
            let slow = placement::exhaustive(&requests, limits);
            assert_eq!(fast.read, slow.read, "{}: {limits:?}", path.display());
            assert_eq!(
                fast.breakpoints.len(),
                slow.breakpoints.len(),
                "{}: fewest breakpoints",
                path.display()
            );
            let played = placement::simulate(
                &requests,
                &placement::uniform(&fast.breakpoints, &requests),
                limits,
            );
            assert_eq!(played.read, fast.read, "{}", path.display());
            with_two += usize::from(fast.breakpoints.len() >= 2);
        }
    }
    // The daily-date fixture needs a breakpoint after the tools and one after the system.
    assert!(with_two >= 1, "no fixture needs two breakpoints");
}

/// `check --format json` of one fixture: its PL012 diagnostics.
fn pl012_diagnostics(fixture: &str) -> Vec<serde_json::Value> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_prefixlint"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["check", fixture, "--format", "json", "--no-config"])
        .env("PREFIXLINT_NO_CACHE", "1")
        .output()
        .expect("prefixlint runs");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    json["templates"][0]["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .filter(|d| d["rule"] == "PL012")
        .cloned()
        .collect()
}

/// Each render's block tokens, by block.
fn block_tokens(fixture: &str) -> Vec<Vec<usize>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(fixture);
    requests(&path)
        .0
        .iter()
        .map(|r| r.iter().map(|c| c.tokens).collect())
        .collect()
}

/// The saving in dollars, by hand, at claude-sonnet-4-5's prices (2026-12-01: $3.00
/// input, $0.30 read, $3.75 5-minute write): a read token saves $2.70 per million, a
/// written one costs $0.75 per million more than input.
#[test]
fn the_saving_is_priced_with_the_write_premium() {
    // no_breakpoint.j2: tools[0] and system[0] are stable (1,294 tokens together); 3
    // renders. A breakpoint on system[0]: the 2 later renders read 1,294 each, the first
    // writes 1,294. Per 1,000 requests: 1000/2 · 2 · 1,294 · $2.70/M − 1,294 · $0.75/M
    // = $3.4938 − $0.0009705 = $3.4928295, rounded half away from zero: $3.49283.
    let tokens = block_tokens("fixtures/cache-breakpoint-placement/fail/no_breakpoint.j2");
    assert_eq!(tokens[0][0] + tokens[0][1], 1294, "{tokens:?}");
    let found = pl012_diagnostics("fixtures/cache-breakpoint-placement/fail/no_breakpoint.j2");
    assert_eq!(found.len(), 1, "{found:#?}");
    let saving = &found[0]["saving"];
    assert_eq!(
        saving,
        &serde_json::json!({"tokens_per_request": 1294, "change": "Add cache_control to system[0]",
            "cost": {"model": "claude-sonnet-4-5", "prices_date": "2026-12-01", "currency": "USD",
                "write_ttl": "5m", "per_1000_requests": 3.49283}})
    );
    assert_eq!(found[0]["severity"], "warning");
    assert!(
        found[0]["message"]
            .as_str()
            .unwrap()
            .ends_with("$3.49283 less per 1,000 requests at claude-sonnet-4-5 prices of 2026-12-01, the 5m write premium counted"),
        "{found:#?}"
    );

    // write_premium_outweighs_reads.j2: system[0] (1,236 tokens) is stable and marked;
    // system[1], the account notes, is the same for renders 0 and 2 and new on 1, 3, 4, 5.
    // A second breakpoint on system[1] reads S0 once more (render 2) and writes the new
    // notes on the 4 others, and S0 on the first:
    // 1000/5 · (S0 · 2.70 − (S1 + S3 + S4 + S5) · 0.75)/M − S0 · 0.75/M
    // = 200 · (490 · 2.70 − (489 + 491 + 489 + 489) · 0.75)/M − 490 · 0.75/M
    // = 200 · (1,323 − 1,468.5)/M − 367.5/M = −$0.0294675, rounded: −$0.029468. The writes
    // cost more than the one read saves: noted, not advised (98 tokens per request more).
    let fixture = "fixtures/cache-breakpoint-placement/fail/write_premium_outweighs_reads.j2";
    let tokens = block_tokens(fixture);
    let notes: Vec<usize> = tokens.iter().map(|r| r[1]).collect();
    assert_eq!(tokens[0][0], 1236, "{tokens:?}");
    assert_eq!(notes, [490, 489, 490, 491, 489, 489], "{tokens:?}");
    let found = pl012_diagnostics(fixture);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0]["severity"], "info", "not advised: {found:#?}");
    assert_eq!(
        found[0]["saving"],
        serde_json::Value::Null,
        "nothing to apply: {found:#?}"
    );
    assert!(
        found[0]["message"]
            .as_str()
            .unwrap()
            .contains("but their cache writes cost more than the reads save: $0.029468 more per 1,000 requests"),
        "{found:#?}"
    );
}
