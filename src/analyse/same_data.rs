//! "Equal as data": JSON texts that hold the same data in different bytes (key order,
//! list order, spacing). Analysis uses it to tell serialization drift from real change.

use serde_json::Value;

/// The values all parse as JSON objects or arrays, are equal as data (keys in any order,
/// lists as multisets), and are not all the same text.
pub fn same_data_different_text(values: &[String]) -> bool {
    let canonical: Option<Vec<String>> = values
        .iter()
        .map(|v| {
            serde_json::from_str::<Value>(v)
                .ok()
                .filter(|j| j.is_object() || j.is_array())
                .map(|j| canonical(&j))
        })
        .collect();
    match canonical {
        Some(c) => c.windows(2).all(|w| w[0] == w[1]) && values.windows(2).any(|w| w[0] != w[1]),
        None => false,
    }
}

/// A text form in which equal data is equal text: keys sorted, list elements sorted.
pub fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, String)> = map
                .iter()
                .map(|(k, v)| (Value::String(k.clone()).to_string(), canonical(v)))
                .collect();
            entries.sort();
            let inner: Vec<String> = entries.into_iter().map(|(k, v)| k + ":" + &v).collect();
            format!("{{{}}}", inner.join(","))
        }
        Value::Array(items) => {
            let mut inner: Vec<String> = items.iter().map(canonical).collect();
            inner.sort();
            format!("[{}]", inner.join(","))
        }
        other => other.to_string(),
    }
}
