//! `prefixlint capacity`, through the real binary: the primer's worked example, fp8, the
//! shared-prefix gain, real config.json files, the refusals and the live cross-check.

use crate::support;

use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use support::*;

/// The worked example's hardware: 80 GB card, 16 GB weights, 4 GB overhead → 60 GB for KV.
const PRIMER: [&str; 12] = [
    "capacity",
    "--layers",
    "32",
    "--kv-heads",
    "8",
    "--head-dim",
    "128",
    "--gpu-memory",
    "80GB",
    "--weights",
    "16GB",
    "--overhead",
];
const AVAILABLE: u128 = 60_000_000_000;

fn capacity(args: &[&str]) -> Run {
    run(prefixlint().args(args))
}

/// Runs with `--format json` and parses stdout; panics with stderr on failure.
fn capacity_json(args: &[&str]) -> Value {
    let r = run(prefixlint().args(args).args(["--format", "json"]));
    assert_eq!(r.code, 0, "stderr:\n{}", r.stderr);
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", r.stdout))
}

fn primer(extra: &[&str]) -> Value {
    let mut args = PRIMER.to_vec();
    args.push("4GB");
    args.extend_from_slice(extra);
    capacity_json(&args)
}

fn column(json: &Value, field: &str) -> Vec<u128> {
    json["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r[field]
                .as_u64()
                .unwrap_or_else(|| panic!("{field} in {r}")) as u128
        })
        .collect()
}

/// Asserts a refusal: exit 2 and every `needles` in stderr.
fn refused(args: &[&str], needles: &[&str]) {
    let r = capacity(args);
    assert_eq!(
        r.code, 2,
        "expected exit 2 for {args:?}\nstdout:\n{}\nstderr:\n{}",
        r.stdout, r.stderr
    );
    assert!(
        r.stdout.is_empty(),
        "a refusal prints no numbers:\n{}",
        r.stdout
    );
    let text = unwrapped(&r.stderr);
    for needle in needles {
        assert!(
            text.contains(needle),
            "stderr lacks {needle:?}:\n{}",
            r.stderr
        );
    }
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
}

/// miette wraps long messages at 80 columns (inside `│` gutters): join them back to one line.
fn unwrapped(stderr: &str) -> String {
    let joined = stderr
        .lines()
        .map(|l| l.trim_start_matches([' ', '│', '×']).trim_end())
        .collect::<Vec<_>>()
        .join(" ");
    joined.replace("- ", "-")
}

/// Writes `config` as `dir/config.json` and returns its path as a string.
fn write_config(dir: &Path, config: &str) -> String {
    let path = dir.join("config.json");
    std::fs::write(&path, config).unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn worked_example_by_floor() {
    let json = primer(&["--context", "4096,16384,65536"]);
    assert_eq!(json["version"], 1);
    assert_eq!(column(&json, "context"), [4096, 16384, 65536]);
    assert_eq!(
        column(&json, "bytes_per_request"),
        [536_870_912, 2_147_483_648, 8_589_934_592]
    );
    assert_eq!(column(&json, "concurrency"), [111, 27, 6]);
    assert_eq!(json["memory"]["available_bytes"], 60_000_000_000u64);
    assert_eq!(json["kv_bytes_per_token"], 131_072);
    // The default contexts are the worked example's.
    assert_eq!(column(&primer(&[]), "context"), [4096, 16384, 65536]);
}

/// The primer prints 28 and 7 at 16k and 64k, and 222 for fp8 at 4k. Those are not floors:
/// 60 GB / 2,147,483,648 B = 27.94 and / 8,589,934,592 B = 6.98 were rounded to nearest,
/// and 222 is twice the fp16 figure 111 rather than floor(60 GB / 268,435,456 B) = 223.
/// A request that does not fit does not run, so prefixlint floors, and says 27, 6 and 223.
#[test]
fn the_primers_rounding_differs_from_floor() {
    let fp16 = primer(&[]);
    let bytes = column(&fp16, "bytes_per_request");
    let floor = column(&fp16, "concurrency");
    let nearest: Vec<u128> = bytes.iter().map(|b| (AVAILABLE + b / 2) / b).collect();
    assert_eq!(
        nearest,
        [112, 28, 7],
        "the primer's 28 and 7 are round-to-nearest"
    );
    assert_eq!(floor, [111, 27, 6]);

    let fp8 = primer(&["--kv-dtype", "fp8", "--context", "4096"]);
    assert_eq!(column(&fp8, "bytes_per_request"), [268_435_456]);
    assert_eq!(column(&fp8, "concurrency"), [223]);
    assert_eq!(2 * floor[0], 222, "the primer's 222 doubles the fp16 floor");
}

#[test]
fn fp8_and_int4_halve_and_quarter_the_cache() {
    let fp8 = primer(&["--kv-dtype", "fp8"]);
    assert_eq!(
        column(&fp8, "bytes_per_request"),
        [268_435_456, 1_073_741_824, 4_294_967_296]
    );
    assert_eq!(column(&fp8, "concurrency"), [223, 55, 13]);
    assert_eq!(fp8["model"]["kv_dtype"], "fp8");
    let int4 = primer(&["--kv-dtype", "int4", "--context", "4096"]);
    assert_eq!(column(&int4, "bytes_per_request"), [134_217_728]);
    assert_eq!(column(&int4, "concurrency"), [447]);
}

#[test]
fn paged_blocks_round_each_request_up() {
    let json = primer(&["--context", "4097", "--block-size", "16"]);
    assert_eq!(column(&json, "allocated_tokens"), [4112]);
    assert_eq!(column(&json, "bytes_per_request"), [4112 * 131_072]);
    let exact = primer(&["--context", "4097", "--block-size", "1"]);
    assert_eq!(column(&exact, "bytes_per_request"), [4097 * 131_072]);
}

/// The primer's layout example: every 2,000-token request shares a 1,800-token prefix.
/// 112 full blocks (1,792 tokens) are stored once; the partial block and the rest, 208
/// tokens, are per request.
#[test]
fn a_shared_prefix_is_stored_once_and_buys_concurrency() {
    let json = primer(&["--context", "2000", "--shared-prefix", "1800"]);
    let row = &json["rows"][0];
    let token = 131_072u128;
    assert_eq!(row["shared_prefix_tokens"], 1800);
    assert_eq!(row["shared_prefix_cached_tokens"], 1792);
    assert_eq!(
        row["shared_prefix_bytes"].as_u64().unwrap() as u128,
        1792 * token
    );
    assert_eq!(
        row["private_bytes_per_request"].as_u64().unwrap() as u128,
        208 * token
    );
    let without = AVAILABLE / (2000 * token);
    let with = (AVAILABLE - 1792 * token) / (208 * token);
    assert_eq!((without, with), (228, 2192));
    assert_eq!(column(&json, "concurrency"), [without]);
    assert_eq!(column(&json, "concurrency_with_shared_prefix"), [with]);
    assert_eq!(column(&json, "concurrency_gain"), [with - without]);

    let table = capacity(
        &[
            &PRIMER[..],
            &["4GB", "--context", "2000", "--shared-prefix", "1800"],
        ]
        .concat(),
    );
    assert_eq!(table.code, 0, "{}", table.stderr);
    assert!(
        table.stdout.contains("+1,964 (+861.4%)"),
        "{}",
        table.stdout
    );
    assert!(
        table.stdout.contains("+ prefix caching"),
        "{}",
        table.stdout
    );
}

#[test]
fn worked_example_table() {
    let r = capacity(&[&PRIMER[..], &["4GB", "--kv-dtype", "fp16"]].concat());
    assert_eq!(r.code, 0, "{}", r.stderr);
    insta::assert_snapshot!(r.stdout);
}

#[test]
fn gqa_config_with_an_explicit_head_dim() {
    // Qwen3-0.6B: head_dim 128 although hidden_size / heads = 64.
    let json = capacity_json(&[
        "capacity",
        "--model-config",
        "fixtures/capacity/qwen3-0.6b/config.json",
        "--gpu-memory",
        "24GiB",
        "--params",
        "0.6B",
        "--overhead",
        "2GiB",
        "--context",
        "4096,40960",
    ]);
    let token = 2 * 28 * 8 * 128 * 2;
    assert_eq!(json["kv_bytes_per_token"], token);
    assert_eq!(json["model"]["kv_dtype"], "bf16");
    assert_eq!(json["model"]["head_dim"], 128);
    let fp8 = capacity_json(&[
        "capacity",
        "--model-config",
        "fixtures/capacity/qwen3-0.6b/config.json",
        "--gpu-memory",
        "24GiB",
        "--params",
        "0.6B",
        "--kv-dtype",
        "fp8",
    ]);
    assert_eq!(fp8["kv_bytes_per_token"], token / 2);
    assert_eq!(
        fp8["notes"][0],
        "KV dtype fp8 from --kv-dtype (the config's dtype is bf16)"
    );
    assert!(!fp8["notes"].to_string().contains("KV dtype bf16"));
    assert_eq!(json["memory"]["weights_bytes"], 1_200_000_000u64);
    let available = (24u128 << 30) - (2 << 30) - 1_200_000_000;
    assert_eq!(
        json["memory"]["available_bytes"].as_u64().unwrap() as u128,
        available
    );
    assert_eq!(
        column(&json, "bytes_per_request"),
        [4096 * token as u128, 40960 * token as u128]
    );
    assert_eq!(
        column(&json, "concurrency"),
        [
            available / (4096 * token as u128),
            available / (40960 * token as u128)
        ]
    );
}

#[test]
fn gqa_config_with_its_sliding_window_switched_off() {
    // Qwen2-7B-Instruct: sliding_window 131072 but use_sliding_window false.
    let json = capacity_json(&[
        "capacity",
        "--model-config",
        "fixtures/capacity/qwen2-7b-instruct/config.json",
        "--gpu-memory",
        "80GB",
        "--params",
        "7.62B",
        "--context",
        "32768",
    ]);
    assert_eq!(json["kv_bytes_per_token"], 2 * 28 * 4 * 128 * 2);
    assert_eq!(json["model"]["sliding_window_layers"], 0);
    assert_eq!(json["memory"]["weights_bytes"], 15_240_000_000u64);
    assert_eq!(column(&json, "bytes_per_request"), [32768 * 57_344]);
    assert_eq!(
        column(&json, "concurrency"),
        [(80_000_000_000 - 15_240_000_000) / (32768 * 57_344)]
    );
    let notes = json["notes"].to_string();
    assert!(notes.contains("use_sliding_window: false"), "{notes}");
}

#[test]
fn mha_config_defaults_kv_heads_and_head_dim() {
    // Pythia-1B: no num_key_value_heads (→ 8 attention heads), no head_dim (→ 2048 / 8).
    let json = capacity_json(&[
        "capacity",
        "--model-config",
        "fixtures/capacity/pythia-1b/config.json",
        "--gpu-memory",
        "16GB",
        "--weights",
        "2.1GB",
        "--overhead",
        "1GB",
        "--context",
        "2048",
    ]);
    assert_eq!(json["model"]["kv_heads"], 8);
    assert_eq!(json["model"]["head_dim"], 256);
    assert_eq!(json["model"]["kv_dtype"], "fp16");
    assert_eq!(json["kv_bytes_per_token"], 2 * 16 * 8 * 256 * 2);
    assert_eq!(column(&json, "bytes_per_request"), [2048 * 131_072]);
    assert_eq!(
        column(&json, "concurrency"),
        [12_900_000_000 / (2048 * 131_072)]
    );
    let notes = json["notes"].to_string();
    assert!(notes.contains("multi-head attention"), "{notes}");
    assert!(notes.contains("2048 / 8 = 256"), "{notes}");
}

#[test]
fn sliding_window_config_caps_every_layer_at_the_window() {
    // Mistral-7B-v0.1: sliding_window 4096 on all 32 layers.
    let json = capacity_json(&[
        "capacity",
        "--model-config",
        "fixtures/capacity/mistral-7b-v0.1/config.json",
        "--gpu-memory",
        "80GB",
        "--params",
        "7.24B",
        "--overhead",
        "4GB",
        "--context",
        "1000,4096,16384,32768",
    ]);
    assert_eq!(json["model"]["sliding_window"], 4096);
    assert_eq!(json["model"]["sliding_window_layers"], 32);
    let token = 131_072u128;
    assert_eq!(
        column(&json, "bytes_per_request"),
        [1008 * token, 4096 * token, 4096 * token, 4096 * token]
    );
    let available = 80_000_000_000u128 - 14_480_000_000 - 4_000_000_000;
    assert_eq!(column(&json, "concurrency")[3], available / (4096 * token));
    let r = capacity(&[
        "capacity",
        "--model-config",
        "fixtures/capacity/mistral-7b-v0.1/config.json",
        "--gpu-memory",
        "80GB",
        "--params",
        "7.24B",
    ]);
    assert!(
        r.stdout
            .contains("32 sliding-window layers keep at most 4,096 tokens"),
        "{}",
        r.stdout
    );
}

#[test]
fn mixed_layer_types_are_computed_per_layer() {
    let dir = tempfile::tempdir().unwrap();
    let types: Vec<&str> = (0..6)
        .map(|i| {
            if i % 3 == 2 {
                "\"full_attention\""
            } else {
                "\"sliding_attention\""
            }
        })
        .collect();
    let config = write_config(
        dir.path(),
        &format!(
            r#"{{"model_type": "gemma3_text", "num_hidden_layers": 6, "num_attention_heads": 8,
                "num_key_value_heads": 4, "head_dim": 256, "sliding_window": 1024,
                "layer_types": [{}], "torch_dtype": "bfloat16"}}"#,
            types.join(", ")
        ),
    );
    let json = capacity_json(&[
        "capacity",
        "--model-config",
        &config,
        "--gpu-memory",
        "24GB",
        "--weights",
        "4GB",
        "--context",
        "8192",
    ]);
    let layer_token = 2 * 4 * 256 * 2u128;
    assert_eq!(json["model"]["sliding_window_layers"], 4);
    assert_eq!(
        column(&json, "bytes_per_request"),
        [layer_token * (2 * 8192 + 4 * 1024)]
    );
}

#[test]
fn weights_from_the_safetensors_next_to_the_config() {
    let dir = tempfile::tempdir().unwrap();
    let config =
        std::fs::read_to_string(repo_root().join("fixtures/capacity/qwen3-0.6b/config.json"))
            .unwrap();
    let path = write_config(dir.path(), &config);
    for (name, size) in [
        ("model-00001-of-00002.safetensors", 1_000_000u64),
        ("model-00002-of-00002.safetensors", 503_000),
    ] {
        std::fs::File::create(dir.path().join(name))
            .unwrap()
            .set_len(size)
            .unwrap();
    }
    std::fs::write(dir.path().join("model.safetensors.index.json"), "{}").unwrap();
    let json = capacity_json(&["capacity", "--model-config", &path, "--gpu-memory", "8GB"]);
    assert_eq!(json["memory"]["weights_bytes"], 1_503_000);
    assert_eq!(json["memory"]["weights"]["from"], "safetensors");
    assert_eq!(json["memory"]["weights"]["files"], 2);
}

#[test]
fn contexts_and_prefixes_from_a_check_report() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    std::fs::write(
        &report,
        r#"{"version": 1, "templates": [
            {"path": "prompts/agent.j2", "samples": 3, "tokens": {"min": 1990, "max": 2000},
             "shared_prefix_tokens": 1800, "recoverable_tokens": 0, "diagnostics": []},
            {"path": "prompts/clock.j2", "samples": 3, "tokens": {"min": 500, "max": 512},
             "shared_prefix_tokens": 3, "recoverable_tokens": 480, "diagnostics": []}]}"#,
    )
    .unwrap();
    let json = primer(&["--from-check", &report.to_string_lossy()]);
    assert_eq!(column(&json, "context"), [2000, 512]);
    assert_eq!(json["rows"][0]["template"], "prompts/agent.j2");
    assert_eq!(column(&json, "concurrency_with_shared_prefix")[0], 2192);
    assert_eq!(
        column(&json, "concurrency_gain")[1],
        0,
        "3 tokens fill no block"
    );
}

#[test]
fn a_real_check_report_feeds_capacity() {
    let (_, check) = check_json(&["fixtures/prompts"]);
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    std::fs::write(&report, check.to_string()).unwrap();
    let json = primer(&["--from-check", &report.to_string_lossy()]);
    let templates = check["templates"].as_array().unwrap();
    assert_eq!(json["rows"].as_array().unwrap().len(), templates.len());
    for (row, template) in json["rows"].as_array().unwrap().iter().zip(templates) {
        assert_eq!(row["context"], template["tokens"]["max"]);
        assert_eq!(
            row["shared_prefix_tokens"],
            template["shared_prefix_tokens"]
        );
        assert!(row["concurrency_with_shared_prefix"].as_u64() >= row["concurrency"].as_u64());
    }
}

#[test]
fn refuses_mla() {
    let dir = tempfile::tempdir().unwrap();
    // The attention keys of DeepSeek-V3's config.json.
    let config = write_config(
        dir.path(),
        r#"{"model_type": "deepseek_v3", "num_hidden_layers": 61, "num_attention_heads": 128,
            "num_key_value_heads": 128, "hidden_size": 7168, "kv_lora_rank": 512,
            "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
            "v_head_dim": 128, "torch_dtype": "bfloat16"}"#,
    );
    refused(
        &[
            "capacity",
            "--model-config",
            &config,
            "--gpu-memory",
            "80GB",
            "--weights",
            "1GB",
        ],
        &["config.json", "kv_lora_rank", "MLA"],
    );
}

#[test]
fn refuses_hybrid_models() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        // Jamba-style: attention every few layers, mamba in between.
        (
            r#"{"model_type": "jamba", "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "hidden_size": 4096, "attn_layer_period": 8, "attn_layer_offset": 4}"#,
            "attn_layer",
        ),
        (
            r#"{"model_type": "granitemoehybrid", "num_hidden_layers": 4, "num_attention_heads": 32, "num_key_value_heads": 8, "hidden_size": 4096, "layers_block_type": ["mamba", "mamba", "attention", "mamba"]}"#,
            "layers_block_type",
        ),
        (
            r#"{"model_type": "some_new_hybrid", "num_hidden_layers": 2, "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256, "layer_types": ["linear_attention", "full_attention"]}"#,
            "linear_attention",
        ),
        (
            r#"{"model_type": "qwen3_next", "num_hidden_layers": 48, "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256}"#,
            "qwen3_next",
        ),
    ];
    for (config, key) in cases {
        let path = write_config(dir.path(), config);
        refused(
            &[
                "capacity",
                "--model-config",
                &path,
                "--gpu-memory",
                "80GB",
                "--weights",
                "1GB",
            ],
            &["config.json", key, "hybrid"],
        );
    }
}

#[test]
fn refuses_sliding_windows_it_cannot_place() {
    let dir = tempfile::tempdir().unwrap();
    // Gemma-2 style: alternating layers, but no layer_types to say which.
    let gemma = write_config(
        dir.path(),
        r#"{"model_type": "gemma2", "num_hidden_layers": 42, "num_attention_heads": 16,
            "num_key_value_heads": 8, "head_dim": 256, "sliding_window": 4096}"#,
    );
    refused(
        &[
            "capacity",
            "--model-config",
            &gemma,
            "--gpu-memory",
            "80GB",
            "--weights",
            "1GB",
        ],
        &["config.json", "sliding_window", "gemma2", "layer_types"],
    );
    let qwen = write_config(
        dir.path(),
        r#"{"model_type": "qwen2", "num_hidden_layers": 28, "num_attention_heads": 28,
            "num_key_value_heads": 4, "hidden_size": 3584, "sliding_window": 4096,
            "use_sliding_window": true, "max_window_layers": 21}"#,
    );
    let llama4_dir = tempfile::tempdir().unwrap();
    let llama4 = write_config(
        llama4_dir.path(),
        r#"{"model_type": "llama4_text", "num_hidden_layers": 48, "num_attention_heads": 40,
            "num_key_value_heads": 8, "head_dim": 128, "attention_chunk_size": 8192}"#,
    );
    refused(
        &[
            "capacity",
            "--model-config",
            &llama4,
            "--gpu-memory",
            "80GB",
            "--weights",
            "1GB",
        ],
        &["config.json", "attention_chunk_size", "chunked"],
    );
    refused(
        &[
            "capacity",
            "--model-config",
            &qwen,
            "--gpu-memory",
            "80GB",
            "--weights",
            "1GB",
        ],
        &["use_sliding_window", "max_window_layers"],
    );
}

#[test]
fn refuses_missing_and_bad_keys() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            r#"{"num_attention_heads": 32, "hidden_size": 4096}"#,
            "num_hidden_layers",
        ),
        (r#"{"n_layer": 12, "n_head": 12, "n_embd": 768}"#, "n_layer"),
        (
            r#"{"num_hidden_layers": 32, "hidden_size": 4096}"#,
            "num_key_value_heads",
        ),
        (
            r#"{"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8}"#,
            "hidden_size",
        ),
        (
            r#"{"num_hidden_layers": 32, "num_attention_heads": 3, "hidden_size": 4096}"#,
            "not a multiple",
        ),
        (
            r#"{"num_hidden_layers": "32", "num_attention_heads": 32, "hidden_size": 4096}"#,
            "positive integer",
        ),
        (
            r#"{"num_hidden_layers": 32, "num_attention_heads": 71, "hidden_size": 4544, "multi_query": true}"#,
            "multi_query",
        ),
        (
            r#"{"num_hidden_layers": 2, "num_attention_heads": 8, "hidden_size": 512, "torch_dtype": "float8_e4m3fn"}"#,
            "torch_dtype",
        ),
        (r#"{"num_hidden_layers": 32,"#, "not valid JSON"),
    ];
    for (config, needle) in cases {
        let path = write_config(dir.path(), config);
        refused(
            &[
                "capacity",
                "--model-config",
                &path,
                "--gpu-memory",
                "80GB",
                "--weights",
                "1GB",
            ],
            &["config.json", needle],
        );
    }
    refused(
        &[
            "capacity",
            "--model-config",
            "no/such/config.json",
            "--gpu-memory",
            "80GB",
        ],
        &["no/such/config.json"],
    );
}

#[test]
fn refuses_bad_units_and_impossible_numbers() {
    let base = [
        "capacity",
        "--layers",
        "32",
        "--kv-heads",
        "8",
        "--head-dim",
        "128",
    ];
    let with = |extra: &[&'static str]| -> Vec<&'static str> { [&base[..], extra].concat() };
    refused(
        &with(&["--gpu-memory", "80G", "--weights", "16GB"]),
        &["--gpu-memory", "ambiguous"],
    );
    refused(
        &with(&["--gpu-memory", "80", "--weights", "16GB"]),
        &["--gpu-memory", "no unit"],
    );
    refused(
        &with(&["--gpu-memory", "80GB", "--weights", "16 gigs"]),
        &["--weights", "unknown unit"],
    );
    refused(
        &with(&[
            "--gpu-memory",
            "80GB",
            "--weights",
            "70GB",
            "--overhead",
            "20GB",
        ]),
        &["exceed --gpu-memory"],
    );
    refused(
        &with(&[
            "--gpu-memory",
            "80GB",
            "--weights",
            "16GB",
            "--context",
            "4k",
        ]),
        &["--context", "4k"],
    );
    refused(
        &with(&[
            "--gpu-memory",
            "80GB",
            "--weights",
            "16GB",
            "--context",
            "0",
        ]),
        &["--context"],
    );
    refused(
        &with(&["--gpu-memory", "80GB", "--params", "8 billion"]),
        &["--params"],
    );
    refused(
        &with(&["--gpu-memory", "80GB"]),
        &["no weights size", "--params"],
    );
    refused(
        &with(&[
            "--gpu-memory",
            "80GB",
            "--weights",
            "16GB",
            "--block-size",
            "0",
        ]),
        &["--block-size"],
    );
    refused(
        &with(&[
            "--gpu-memory",
            "80GB",
            "--weights",
            "16GB",
            "--context",
            "1000",
            "--shared-prefix",
            "2000",
        ]),
        &["--shared-prefix", "longer"],
    );
    refused(
        &[
            "capacity",
            "--layers",
            "32",
            "--gpu-memory",
            "80GB",
            "--weights",
            "16GB",
        ],
        &["--kv-heads"],
    );
    refused(
        &[
            "capacity",
            "--layers",
            "0",
            "--kv-heads",
            "8",
            "--head-dim",
            "128",
            "--gpu-memory",
            "80GB",
            "--weights",
            "1GB",
        ],
        &["layers"],
    );
}

#[test]
fn refuses_params_for_a_quantized_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        r#"{"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
            "hidden_size": 4096, "torch_dtype": "float16",
            "quantization_config": {"quant_method": "awq", "bits": 4}}"#,
    );
    refused(
        &[
            "capacity",
            "--model-config",
            &config,
            "--gpu-memory",
            "24GB",
            "--params",
            "8B",
        ],
        &["quantization_config", "--weights"],
    );
}

/// Serves each canned `(path, status, body)` answer once per request, on a loopback port.
fn fake_server(answers: Vec<(&'static str, u16, String)>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut request = Vec::new();
            let mut buf = [0u8; 1024];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buf[..n]),
                }
            }
            let request = String::from_utf8_lossy(&request);
            let path = request.split_whitespace().nth(1).unwrap_or("").to_owned();
            let (status, body) = answers
                .iter()
                .find(|(p, _, _)| *p == path)
                .map(|(_, s, b)| (*s, b.clone()))
                .unwrap_or((404, "not found".into()));
            let _ = write!(
                stream,
                "HTTP/1.1 {status} X\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    url
}

fn fixture(path: &str) -> String {
    std::fs::read_to_string(repo_root().join(path)).unwrap()
}

#[test]
fn cross_checks_a_vllm_server() {
    let metrics = format!(
        "# HELP vllm:num_requests_running Number of requests in model execution batches.\n# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{{engine=\"0\",model_name=\"qwen3-32b\"}} 0.0\n{}",
        fixture("fixtures/capacity/server/vllm-cache-config-info.txt")
    );
    let url = fake_server(vec![("/metrics", 200, metrics)]);
    let json = primer(&["--server", &url]);
    let server = &json["server"];
    assert_eq!(server["engine"], "vllm");
    assert_eq!(server["num_gpu_blocks"], 573);
    assert_eq!(server["block_size"], 16);
    assert_eq!(server["token_capacity"], 573 * 16);
    assert_eq!(server["computed_token_capacity"], json["token_capacity"]);
    assert_eq!(json["token_capacity"], 28_610 * 16);
    assert_eq!(server["prefix_caching"], true);

    let table = capacity(&[&PRIMER[..], &["4GB", "--server", &url]].concat());
    assert!(
        table
            .stdout
            .contains("573 blocks × 16 tokens = 9,168 tokens"),
        "{}",
        table.stdout
    );
}

#[test]
fn cross_checks_a_llamacpp_server() {
    let props = fixture("fixtures/capacity/server/llamacpp-props.json");
    let url = fake_server(vec![
        ("/metrics", 501, "metrics disabled".into()),
        ("/props", 200, props),
    ]);
    let json = primer(&["--server", &url]);
    let server = &json["server"];
    assert_eq!(server["engine"], "llama.cpp");
    assert_eq!(server["n_ctx_per_slot"], 4096);
    assert_eq!(server["slots"], 2);
    assert_eq!(server["token_capacity"], 8192);
}

#[test]
fn server_errors_name_the_url() {
    let url = fake_server(vec![]);
    refused(
        &[&PRIMER[..], &["4GB", "--server", &url]].concat(),
        &[&url, "neither vLLM nor llama.cpp"],
    );
    let unused = TcpListener::bind("127.0.0.1:0").unwrap();
    let closed = format!("http://{}", unused.local_addr().unwrap());
    drop(unused);
    refused(
        &[&PRIMER[..], &["4GB", "--server", &closed]].concat(),
        &[&closed, "cannot connect"],
    );
    refused(
        &[&PRIMER[..], &["4GB", "--server", "https://example.com"]].concat(),
        &["https"],
    );
    let not_ready = fake_server(vec![(
        "/metrics",
        200,
        "vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"None\"} 1.0\n".into(),
    )]);
    refused(
        &[&PRIMER[..], &["4GB", "--server", &not_ready]].concat(),
        &["num_gpu_blocks", "not sized"],
    );
}

/// Against the real llama.cpp server the measure tests use (xllamacpp with a random-weight
/// model carrying the Qwen3 tokenizer: n_ctx 8192, one slot).
#[test]
fn cross_checks_a_live_llamacpp_server() {
    let llama = support::llama::LlamaServer::start();
    let url = llama.url.clone();
    let slots: u64 = 1;
    let json = primer(&["--server", &url]);
    let server = &json["server"];
    assert_eq!(server["engine"], "llama.cpp");
    assert_eq!(server["slots"], slots);
    let n_ctx = server["n_ctx_per_slot"].as_u64().unwrap();
    assert_eq!(n_ctx, 8192);
    assert_eq!(server["token_capacity"].as_u64().unwrap(), n_ctx * slots);
}

#[test]
fn sliding_window_table_with_a_shared_prefix() {
    let r = capacity(&[
        "capacity",
        "--model-config",
        "fixtures/capacity/mistral-7b-v0.1/config.json",
        "--gpu-memory",
        "80GB",
        "--params",
        "7.24B",
        "--overhead",
        "4GB",
        "--context",
        "2000,32768",
        "--shared-prefix",
        "1800",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    insta::assert_snapshot!(r.stdout);
}

#[test]
fn gqa_table_with_a_shared_prefix() {
    let r = capacity(&[
        "capacity",
        "--model-config",
        "fixtures/capacity/qwen3-0.6b/config.json",
        "--gpu-memory",
        "24GB",
        "--params",
        "0.6B",
        "--overhead",
        "2GB",
        "--context",
        "2000,8192",
        "--shared-prefix",
        "1800",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    insta::assert_snapshot!(r.stdout);
}
