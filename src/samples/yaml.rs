//! Samples YAML as PyYAML reads it: like `yaml.safe_load`, an unquoted timestamp
//! (`created: 2024-05-01 10:00:00`) is a datetime, a quoted one a string.

use crate::render::datetime::parse_yaml_timestamp;
use minijinja::Value;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// The whole document as a template value.
pub fn parse(text: &str) -> Result<Value, serde_yaml_ng::Error> {
    let deserializer = serde_yaml_ng::Deserializer::from_str(text);
    ValueSeed { text }.deserialize(deserializer)
}

/// Deserializes any YAML node; `text` is the whole source, to tell plain scalars (which
/// the parser lends straight out of it) from quoted ones.
#[derive(Clone, Copy)]
struct ValueSeed<'t> {
    text: &'t str,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl ValueSeed<'_> {
    /// A scalar lent from the source with no quote before it was written plain.
    fn is_plain(&self, scalar: &str) -> bool {
        let base = self.text.as_ptr() as usize;
        let at = scalar.as_ptr() as usize;
        if at < base || at + scalar.len() > base + self.text.len() {
            return false;
        }
        let before = self.text[..at - base].chars().next_back();
        !matches!(before, Some('\'' | '"'))
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a YAML value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_i128<E>(self, v: i128) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u128<E>(self, v: u128) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Value, E> {
        if self.is_plain(v) {
            if let Some(timestamp) = parse_yaml_timestamp(v) {
                return timestamp.map(|t| t.value()).map_err(E::custom);
            }
        }
        Ok(Value::from(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::from(()))
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::from(()))
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Value::from(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut entries: Vec<(Value, Value)> = Vec::new();
        while let Some(key) = map.next_key_seed(self)? {
            let value = map.next_value_seed(self)?;
            // A key given twice: the last value wins, as in PyYAML.
            match entries.iter_mut().find(|(k, _)| *k == key) {
                Some(entry) => entry.1 = value,
                None => entries.push((key, value)),
            }
        }
        Ok(Value::from_pairs(entries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unquoted_timestamps_are_datetimes_quoted_ones_strings() {
        let v = parse("- a: 2024-05-01 10:00:00\n  b: '2024-05-01 10:00:00'\n  c: \"2024-05-01\"\n  d: 2024-05-01\n  e: [2024-05-01T10:00:00Z]\n").unwrap();
        let first = v.get_item(&Value::from(0)).unwrap();
        let kind = |k: &str| first.get_attr(k).unwrap().kind();
        assert_eq!(kind("a"), minijinja::value::ValueKind::Plain);
        assert_eq!(kind("b"), minijinja::value::ValueKind::String);
        assert_eq!(kind("c"), minijinja::value::ValueKind::String);
        assert_eq!(kind("d"), minijinja::value::ValueKind::Plain);
        assert_eq!(
            first.get_attr("a").unwrap().to_string(),
            "2024-05-01 10:00:00"
        );
        assert_eq!(
            first
                .get_attr("e")
                .unwrap()
                .get_item(&Value::from(0))
                .unwrap()
                .to_string(),
            "2024-05-01 10:00:00+00:00"
        );
    }

    #[test]
    fn an_impossible_date_is_a_located_error() {
        let err = parse("- a: 1\n- created: 2024-02-30\n").unwrap_err();
        assert!(err.to_string().contains("2024-02-30"), "{err}");
        assert_eq!(err.location().map(|l| l.line()), Some(2));
    }
}
