//! Audit summaries merged: the summaries of a log's parts (its sessions, audited apart) into
//! the summary of the whole, as `prefixlint audit` writes it.
//!
//! The summary is sums and bounded lists, so the merge is field by field on the JSON
//! contract: counts and token sums add up (`tokens_lost_by_cause` key by key, and so does any
//! object of numbers, as `cost`); `worst_sessions` keeps the top 5 of all parts (most tokens
//! lost, then by name); `missed_hits` and `not_audited` are put back in log order (by file,
//! then line), `skipped` too, its first 20 kept; `miss_reason_agreement.table` rows add up by
//! reason, cause and part, and `cache_writes.reads_per_write` is computed again. Text fields
//! and settings (`written_then_missed.window_seconds`) must agree. Exact when no session
//! spans two parts; `predicted_cached_tokens` counts the hits one session gets from another
//! only after the cache model's replay ([`super::replay`]) has set it.

use super::input::SkipLog;
use crate::error::{Error, Result};
use serde_json::{Map, Value as Json};
use std::cmp::Ordering;

const WORST_SESSIONS: usize = super::WORST_SESSIONS;

/// The summary of the whole from the summaries of its parts.
pub fn merge(parts: &[Json]) -> Result<Json> {
    let mut merged = serde_json::to_value(super::Summary::default()).expect("a summary serializes");
    for (i, part) in parts.iter().enumerate() {
        let Json::Object(part) = part else {
            return Err(Error::input(format!("merge: summary {i} is not an object")));
        };
        let Json::Object(into) = &mut merged else {
            unreachable!("a summary is an object");
        };
        merge_object(into, part, "")?;
    }
    let Json::Object(into) = &mut merged else {
        unreachable!("a summary is an object");
    };
    if let Some(Json::Array(worst)) = into.get_mut("worst_sessions") {
        worst.sort_by(|a, b| {
            number(&b["tokens_lost"])
                .partial_cmp(&number(&a["tokens_lost"]))
                .unwrap_or(Ordering::Equal)
                .then_with(|| a["session"].as_str().cmp(&b["session"].as_str()))
        });
        worst.truncate(WORST_SESSIONS);
    }
    for list in ["missed_hits", "not_audited", "skipped"] {
        if let Some(Json::Array(entries)) = into.get_mut(list) {
            entries.sort_by(|a, b| {
                (a["file"].as_str(), a["line"].as_u64())
                    .cmp(&(b["file"].as_str(), b["line"].as_u64()))
            });
        }
    }
    if let Some(Json::Array(skipped)) = into.get_mut("skipped") {
        skipped.truncate(SkipLog::KEPT);
    }
    // A ratio is computed again from its merged sums.
    if let Some(Json::Object(writes)) = into.get_mut("cache_writes") {
        let (read, written) = (
            number(&writes["read_tokens"]),
            number(&writes["write_tokens"]),
        );
        if writes.contains_key("reads_per_write") {
            let ratio = if written > 0.0 {
                Json::from(read / written)
            } else {
                Json::Null
            };
            writes.insert("reads_per_write".into(), ratio);
        }
    }
    if let Some(Json::Array(table)) = into
        .get_mut("miss_reason_agreement")
        .and_then(|a| a.get_mut("table"))
    {
        *table = agreement_rows(std::mem::take(table));
    }
    Ok(merged)
}

/// The rows of `miss_reason_agreement.table` from all parts, one per server reason, cause
/// and part, in the order `hosted::Agreement::seal` gives them.
fn agreement_rows(rows: Vec<Json>) -> Vec<Json> {
    let mut merged: Vec<Json> = Vec::new();
    let key = |r: &Json| {
        (
            r["server_reason"].clone(),
            r["prefixlint_cause"].clone(),
            r["prefixlint_part"].clone(),
        )
    };
    for row in rows {
        match merged.iter_mut().find(|m| key(m) == key(&row)) {
            Some(m) => {
                for field in ["requests", "cache_missed_input_tokens"] {
                    let sum = m[field].as_u64().unwrap_or(0) + row[field].as_u64().unwrap_or(0);
                    m[field] = Json::from(sum);
                }
            }
            None => merged.push(row),
        }
    }
    let text = |v: &Json| v.as_str().map(str::to_owned);
    merged.sort_by(|a, b| {
        text(&a["server_reason"])
            .cmp(&text(&b["server_reason"]))
            .then(b["requests"].as_u64().cmp(&a["requests"].as_u64()))
            .then(text(&a["prefixlint_cause"]).cmp(&text(&b["prefixlint_cause"])))
            .then(text(&a["prefixlint_part"]).cmp(&text(&b["prefixlint_part"])))
    });
    merged
}

/// Numbers that are settings, not sums: every part says the same.
const SETTINGS: [&str; 1] = ["written_then_missed.window_seconds"];

fn number(value: &Json) -> f64 {
    value.as_f64().unwrap_or(0.0)
}

fn merge_object(into: &mut Map<String, Json>, part: &Map<String, Json>, at: &str) -> Result<()> {
    for (key, value) in part {
        let path = if at.is_empty() {
            key.clone()
        } else {
            format!("{at}.{key}")
        };
        match into.get_mut(key) {
            None => {
                into.insert(key.clone(), value.clone());
            }
            Some(existing) => merge_value(existing, value, &path)?,
        }
    }
    Ok(())
}

fn merge_value(into: &mut Json, part: &Json, path: &str) -> Result<()> {
    match (&mut *into, part) {
        (_, Json::Null) => {}
        (Json::Null, _) => *into = part.clone(),
        (Json::Number(a), Json::Number(b)) if SETTINGS.contains(&path) => {
            if a != b {
                return Err(Error::input(format!(
                    "merge: the summaries disagree on {path}: {a} and {b}"
                )));
            }
        }
        // Computed again from the merged sums.
        (Json::Number(_), Json::Number(_)) if path == "cache_writes.reads_per_write" => {}
        (Json::Number(a), Json::Number(b)) => {
            *into = match (a.as_u64(), b.as_u64()) {
                (Some(a), Some(b)) => Json::from(a + b),
                _ => Json::from(a.as_f64().unwrap_or(0.0) + b.as_f64().unwrap_or(0.0)),
            };
        }
        (Json::Object(a), Json::Object(b)) => merge_object(a, b, path)?,
        (Json::Array(a), Json::Array(b)) => a.extend(b.iter().cloned()),
        (a, b) if *a == *b => {}
        (a, b) => {
            return Err(Error::input(format!(
                "merge: the summaries disagree on {path}: {a} and {b}"
            )))
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sums_add_up_and_lists_come_back_in_log_order() {
        let a = json!({
            "requests": 2, "tokens_lost_by_cause": {"clock": 10},
            "worst_sessions": [{"session": "b", "tokens_lost": 10}],
            "missed_hits": [{"file": "l", "line": 9}],
            "cost": {"currency": "USD", "spent": 1.5, "lost_by_cause": {"clock": 0.25}}
        });
        let b = json!({
            "requests": 3, "tokens_lost_by_cause": {"clock": 5, "id": 7},
            "worst_sessions": [{"session": "a", "tokens_lost": 10}, {"session": "c", "tokens_lost": 30}],
            "missed_hits": [{"file": "l", "line": 2}],
            "cost": {"currency": "USD", "spent": 2.0, "lost_by_cause": {"clock": 0.5}}
        });
        let merged = merge(&[a, b]).unwrap();
        assert_eq!(merged["requests"], 5);
        assert_eq!(
            merged["tokens_lost_by_cause"],
            json!({"clock": 15, "id": 7})
        );
        let worst: Vec<&str> = merged["worst_sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["session"].as_str().unwrap())
            .collect();
        assert_eq!(worst, ["c", "a", "b"]);
        assert_eq!(merged["missed_hits"][0]["line"], 2);
        assert_eq!(
            merged["cost"],
            json!({"currency": "USD", "spent": 3.5, "lost_by_cause": {"clock": 0.75}})
        );
        // Fields no part has keep the empty summary's value.
        assert_eq!(merged["breaks"], 0);
    }

    #[test]
    fn parts_that_disagree_on_a_text_field_are_an_error() {
        let err = merge(&[
            json!({"cost": {"currency": "USD"}}),
            json!({"cost": {"currency": "EUR"}}),
        ])
        .unwrap_err();
        assert!(err.to_string().contains("cost.currency"), "{err}");
        assert!(merge(&[json!([1])]).is_err());
    }
}
