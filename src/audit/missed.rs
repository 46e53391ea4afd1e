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
                let hit: serde_json::Value =
                    serde_json::from_str(&line).map_err(S::Error::custom)?;
                seq.serialize_element(&hit)?;
            }
        }
        seq.end()
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
