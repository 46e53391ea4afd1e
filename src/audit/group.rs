//! The first phase of a partitioned audit: one group of log records (one session's, in log
//! order) audited on its own, with the cache key of each request for the replay
//! ([`super::replay`]).
//!
//! A distributed engine groups the log by session ([`session_of`] reads a record's session as
//! `prefixlint audit` does) and hands each group to an [`super::Auditor`] here, in parallel.
//! The group's results are the report's `requests[]` entries, its summary is merged with the
//! others' ([`super::merge`]), and its keys are replayed in log order for the hits one session
//! gets from another. Records without a session key form one fallback group (the `None`
//! key), audited in log order by one worker. `prefixlint audit` matches a request without a
//! session with the [`WINDOW`](super::session::WINDOW) most recent session-less requests only
//! (never with a session's), so the fallback group, which holds just those, matches each
//! with the same earlier request and finds the same breaks; the summary's
//! `requests_without_session` counts them.

use super::input::{self, Logged, SkipLog};
use super::replay::CacheKey;
use super::{Auditor, Entry, RequestAudit, Summary};
use crate::error::{Error, Result};

/// A group's audit: its requests' entries, their cache keys (in log order) and its summary.
pub struct GroupAudit {
    pub requests: Vec<RequestAudit>,
    pub keys: Vec<CacheKey>,
    pub summary: Summary,
}

/// One log record: its file and line in the log, and its text (one JSON line).
pub struct Record<'a> {
    pub file: &'a str,
    pub line: usize,
    pub text: &'a [u8],
}

impl Auditor<'_> {
    /// Audits one group of records (one session's, in log order) as `prefixlint audit`
    /// audits them in a log of their own, at their files and lines.
    pub fn audit_group(&self, records: &[Record<'_>]) -> Result<GroupAudit> {
        let mut blob = Vec::new();
        for (i, record) in records.iter().enumerate() {
            if record.text.contains(&b'\n') {
                return Err(Error::input(format!(
                    "{}:{}: a record holds a line break (one JSON line each)",
                    record.file, record.line
                )));
            }
            if i > 0 {
                blob.push(b'\n');
            }
            blob.extend_from_slice(record.text);
        }
        // The blob's line `at` is record `at - 1`.
        let place = |at: usize| {
            records
                .get(at.wrapping_sub(1))
                .map_or(("-", at), |r| (r.file, r.line))
        };
        let options = self.options;
        let (forced, key, cap) = (
            options.input_format,
            &options.session_key,
            options.max_line_bytes,
        );
        let read = |each: &mut dyn FnMut(&str, Logged) -> Result<()>| -> Result<SkipLog> {
            let mut skipped = input::read_bytes("-", &blob, forced, key, cap, |_, mut logged| {
                let (file, line) = place(logged.line);
                logged.line = line;
                each(file, logged)
            })?;
            for s in &mut skipped.first {
                let (file, line) = place(s.line);
                (s.file, s.line) = (file.to_owned(), line);
            }
            Ok(skipped)
        };
        let mut requests = Vec::new();
        let mut keys = Vec::new();
        let summary = self.run_from(
            read,
            |entry| {
                if let Entry::Audited(r) = entry {
                    requests.push(r.clone());
                }
                Ok(())
            },
            Some(&mut |key| {
                keys.push(key);
                Ok(())
            }),
        )?;
        Ok(GroupAudit {
            requests,
            keys,
            summary,
        })
    }

    /// The session key of one log record as this audit reads it (`None`: the fallback group,
    /// also for a line that is not a request).
    pub fn session_of(&self, text: &[u8]) -> Option<String> {
        let options = self.options;
        let mut session = None;
        let _ = input::read_bytes(
            "-",
            text,
            options.input_format,
            &options.session_key,
            options.max_line_bytes,
            |_, logged| {
                session = session.take().or(logged.session);
                Ok(())
            },
        );
        session
    }
}
