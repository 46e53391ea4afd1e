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
    let engine = prefixlint::request::tokenizer_for(None, &config).expect("tokenizer");
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
