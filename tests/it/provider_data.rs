//! `rules/providers/*.yaml`: every figure carries its source and the date it was checked.
//! Each number must sit in a mapping with `source` (an https URL) and `checked` (a date,
//! not in the future); a figure with `alternatives` must say what was `picked`; every file
//! in the folder is embedded in the binary.

use serde_yaml_ng::Value;
use std::path::Path;

fn is_date(s: &str) -> bool {
    chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .is_ok_and(|d| d <= chrono::Utc::now().date_naive())
}

/// Every problem under `value` at `path`: numbers without a dated source, disagreements
/// without a pick.
fn check(value: &Value, path: &str, sourced: bool, problems: &mut Vec<String>) {
    match value {
        Value::Number(_) if !sourced => problems.push(format!(
            "{path}: a number without `source` and `checked` beside it"
        )),
        Value::Mapping(map) => {
            let text = |key: &str| map.get(key).and_then(Value::as_str);
            let has_source = text("source").is_some() || text("checked").is_some();
            if has_source {
                match text("source") {
                    Some(url) if url.starts_with("https://") => {}
                    other => problems.push(format!("{path}: source {other:?} is not an https URL")),
                }
                match text("checked") {
                    Some(date) if is_date(date) => {}
                    other => problems.push(format!(
                        "{path}: checked {other:?} is not a past date (YYYY-MM-DD)"
                    )),
                }
            }
            if map.contains_key("alternatives") && text("picked").is_none() {
                problems.push(format!("{path}: alternatives without `picked`"));
            }
            for (key, child) in map {
                let key = key.as_str().unwrap_or("?");
                check(child, &format!("{path}.{key}"), has_source, problems);
            }
        }
        Value::Sequence(items) => {
            for (i, item) in items.iter().enumerate() {
                check(item, &format!("{path}[{i}]"), false, problems);
            }
        }
        _ => {}
    }
}

#[test]
fn every_provider_figure_has_a_source_and_a_date() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("rules/providers");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    let mut embedded: Vec<&str> = prefixlint::providers::PROVIDER_FILES
        .iter()
        .map(|(name, _)| *name)
        .collect();
    embedded.sort();
    assert_eq!(files, embedded, "every provider file is embedded");
    let mut problems = Vec::new();
    let mut figures = 0;
    for (name, text) in prefixlint::providers::PROVIDER_FILES {
        assert_eq!(
            std::fs::read_to_string(dir.join(name)).unwrap(),
            *text,
            "{name}: the embedded copy is the file"
        );
        let value: Value = serde_yaml_ng::from_str(text).unwrap();
        figures += text.matches("checked:").count();
        check(&value, name, false, &mut problems);
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(figures > 50, "{figures} dated figures");
}

/// The check itself fails on what it is for.
#[test]
fn an_undated_or_unsourced_figure_is_caught() {
    let mut problems = Vec::new();
    let bad: Value = serde_yaml_ng::from_str(
        "step_tokens: 128\nmin_tokens: {value: 1024, source: 'docs', checked: 2026-13-01}\nx: {value: 1, source: 'https://a', checked: 2026-01-01, alternatives: []}\n",
    )
    .unwrap();
    check(&bad, "bad.yaml", false, &mut problems);
    assert_eq!(problems.len(), 4, "{problems:#?}");
}
