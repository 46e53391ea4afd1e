//! The summary's lists that can hold one entry per request (`missed_hits`: requests that
//! shared a prefix with an earlier one but got no hit; `not_audited`: requests that could
//! not be rendered). Past the first few, entries wait in an anonymous temporary file (one
//! JSON line each) and are read back when the summary is written: memory stays bounded
//! however long the log.

use super::MissedHit;
use crate::error::{Error, Result};
use serde::ser::{Error as _, SerializeSeq, Serializer};
use serde::Serialize;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Seek, SeekFrom, Write};

/// Missed hits kept in memory before they go to the temporary file.
const IN_MEMORY: usize = 1024;

/// A list kept in memory up to [`IN_MEMORY`] entries, the rest in a temporary file.
pub struct Spilled<T> {
    count: usize,
    /// The first [`IN_MEMORY`].
    first: Vec<T>,
    /// The rest, in order, one JSON line each.
    spill: Option<BufWriter<File>>,
}

pub type MissedHits = Spilled<MissedHit>;

impl<T> Default for Spilled<T> {
    fn default() -> Self {
        Spilled {
            count: 0,
            first: Vec::new(),
            spill: None,
        }
    }
}

impl<T> std::fmt::Debug for Spilled<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spilled")
            .field("count", &self.count)
            .finish_non_exhaustive()
    }
}

fn spill_error(e: std::io::Error) -> Error {
    Error::input(format!(
        "cannot write a summary list to a temporary file: {e}"
    ))
}

impl<T: Serialize> Spilled<T> {
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The entries kept in memory (the first [`IN_MEMORY`]).
    pub fn first(&self) -> &[T] {
        &self.first
    }

    pub fn push(&mut self, hit: T) -> Result<()> {
        self.count += 1;
        if self.first.len() < IN_MEMORY {
            self.first.push(hit);
            return Ok(());
        }
        if self.spill.is_none() {
            self.spill = Some(BufWriter::new(tempfile::tempfile().map_err(spill_error)?));
        }
        let spill = self.spill.as_mut().expect("just created");
        let line = serde_json::to_string(&hit).expect("a summary entry serializes");
        writeln!(spill, "{line}").map_err(spill_error)
    }

    /// Writes out what is buffered, so the hits can be read back.
    pub fn seal(&mut self) -> Result<()> {
        match &mut self.spill {
            Some(spill) => spill.flush().map_err(spill_error),
            None => Ok(()),
        }
    }
}

/// A list, as `Vec<T>` would be; the spilled ones are read back one at a time.
impl<T: Serialize> Serialize for Spilled<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.count))?;
        for hit in &self.first {
            seq.serialize_element(hit)?;
        }
        if let Some(spill) = &self.spill {
            let mut file: &File = spill.get_ref();
            file.seek(SeekFrom::Start(0)).map_err(S::Error::custom)?;
            for line in BufReader::new(file).lines() {
                let line = line.map_err(S::Error::custom)?;
                let hit: Flat<'_> = serde_json::from_str(&line).map_err(S::Error::custom)?;
                seq.serialize_element(&hit)?;
            }
        }
        seq.end()
    }
}

/// A spilled entry read back as written: its fields in order, strings borrowed from the line
/// where they have no escape. It serializes as the `serde_json::Value` it parses to would
/// (a map; numbers as unsigned, signed or float, as read), without building the map: the
/// read-back is serial, at the end of the run, one entry per request.
struct Flat<'a>(Vec<(Text<'a>, Field<'a>)>);

enum Field<'a> {
    Null,
    Bool(bool),
    Unsigned(u64),
    Signed(i64),
    Float(f64),
    Text(Text<'a>),
    /// A list or an object: as `serde_json` reads it.
    Nested(serde_json::Value),
}

struct Text<'a>(std::borrow::Cow<'a, str>);

impl<'de> serde::Deserialize<'de> for Text<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> std::result::Result<Text<'de>, E> {
                Ok(Text(v.into()))
            }
            fn visit_str<E>(self, v: &str) -> std::result::Result<Text<'de>, E> {
                Ok(Text(v.to_owned().into()))
            }
        }
        d.deserialize_str(Visit)
    }
}

impl<'de> serde::Deserialize<'de> for Field<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
        use serde::Deserialize as _;
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Field<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_unit<E>(self) -> std::result::Result<Field<'de>, E> {
                Ok(Field::Null)
            }
            fn visit_bool<E>(self, v: bool) -> std::result::Result<Field<'de>, E> {
                Ok(Field::Bool(v))
            }
            fn visit_u64<E>(self, v: u64) -> std::result::Result<Field<'de>, E> {
                Ok(Field::Unsigned(v))
            }
            fn visit_i64<E>(self, v: i64) -> std::result::Result<Field<'de>, E> {
                Ok(Field::Signed(v))
            }
            fn visit_f64<E>(self, v: f64) -> std::result::Result<Field<'de>, E> {
                Ok(Field::Float(v))
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> std::result::Result<Field<'de>, E> {
                Ok(Field::Text(Text(v.into())))
            }
            fn visit_str<E>(self, v: &str) -> std::result::Result<Field<'de>, E> {
                Ok(Field::Text(Text(v.to_owned().into())))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> std::result::Result<Field<'de>, A::Error> {
                serde_json::Value::deserialize(SeqAccessDeserializer::new(seq)).map(Field::Nested)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> std::result::Result<Field<'de>, A::Error> {
                serde_json::Value::deserialize(MapAccessDeserializer::new(map)).map(Field::Nested)
            }
        }
        d.deserialize_any(Visit)
    }
}

impl<'de> serde::Deserialize<'de> for Flat<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Flat<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<Flat<'de>, A::Error> {
                let mut fields = Vec::with_capacity(map.size_hint().unwrap_or(8));
                while let Some(field) = map.next_entry()? {
                    fields.push(field);
                }
                Ok(Flat(fields))
            }
        }
        d.deserialize_map(Visit)
    }
}

impl Serialize for Flat<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, value) in &self.0 {
            map.serialize_key(&*key.0)?;
            match value {
                Field::Null => map.serialize_value(&())?,
                Field::Bool(v) => map.serialize_value(v)?,
                Field::Unsigned(v) => map.serialize_value(v)?,
                Field::Signed(v) => map.serialize_value(v)?,
                Field::Float(v) => map.serialize_value(v)?,
                Field::Text(v) => map.serialize_value(&*v.0)?,
                Field::Nested(v) => map.serialize_value(v)?,
            }
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(i: usize) -> MissedHit {
        MissedHit {
            file: format!("log \"{i}\".jsonl"),
            line: i,
            session: (i % 2 == 0).then(|| format!("s{i}")),
            shared_tokens: i * 3,
            reason: "ttl",
        }
    }

    #[test]
    fn a_line_read_back_serializes_as_its_value_would() {
        let lines = [
            r#"{"file":"a \"b\" \u00e9\n.jsonl","line":3,"session":null,"n":-4,"x":1.5e300,"t":true,"e":""}"#,
            r#"{"z":{"b":[1,{"c":null}],"a":0.1},"y":[],"w":18446744073709551615,"v":-0.0}"#,
            r#"{}"#,
        ];
        for line in lines {
            let flat: Flat<'_> = serde_json::from_str(line).unwrap();
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(
                serde_json::to_string_pretty(&flat).unwrap(),
                serde_json::to_string_pretty(&value).unwrap()
            );
            assert_eq!(
                serde_json::to_string(&flat).unwrap(),
                serde_json::to_string(&value).unwrap()
            );
        }
    }

    #[test]
    fn spilled_hits_serialize_as_the_list_would() {
        let all: Vec<MissedHit> = (0..IN_MEMORY + 300).map(hit).collect();
        let mut hits = MissedHits::default();
        for h in &all {
            hits.push(h.clone()).unwrap();
        }
        hits.seal().unwrap();
        assert!(hits.spill.is_some());
        assert_eq!(hits.len(), all.len());
        assert_eq!(
            serde_json::to_string_pretty(&hits).unwrap(),
            serde_json::to_string_pretty(&all).unwrap()
        );
        // Read back twice (the file is rewound each time).
        assert_eq!(
            serde_json::to_string(&hits).unwrap(),
            serde_json::to_string(&all).unwrap()
        );
    }
}
