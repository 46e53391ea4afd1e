//! Server-sent events, parsed as a pure function over bytes (no I/O), so it can be fuzzed.
//!
//! Only what OpenAI-style streams use: `data:` lines (joined with `\n`), comments, and a
//! blank line ending each event. `event:`, `id:` and `retry:` are accepted and ignored.

/// One event's `data`, its lines joined with `\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub data: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseError {
    /// A single event grew past the limit without ending: a runaway or hostile stream.
    EventTooLarge { limit: usize },
    /// An event's bytes are not UTF-8.
    InvalidUtf8 { event: usize },
}

impl std::fmt::Display for SseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SseError::EventTooLarge { limit } => {
                write!(f, "an SSE event is larger than {limit} bytes")
            }
            SseError::InvalidUtf8 { event } => write!(f, "SSE event {event} is not valid UTF-8"),
        }
    }
}

/// Incremental parser: feed it bytes as they arrive, collect complete events.
#[derive(Debug)]
pub struct SseParser {
    pending: Vec<u8>,
    data: Option<String>,
    events_seen: usize,
    max_event_bytes: usize,
}

impl SseParser {
    pub fn new(max_event_bytes: usize) -> Self {
        SseParser {
            pending: Vec::new(),
            data: None,
            events_seen: 0,
            max_event_bytes,
        }
    }

    /// Parses every complete line in `bytes` (plus what was pending) and returns the
    /// events that a blank line completed.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>, SseError> {
        self.pending.extend_from_slice(bytes);
        let mut events = Vec::new();
        let mut start = 0;
        while let Some(newline) = self.pending[start..].iter().position(|&b| b == b'\n') {
            let end = start + newline;
            let mut line = &self.pending[start..end];
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            if line.is_empty() {
                if let Some(data) = self.data.take() {
                    self.events_seen += 1;
                    events.push(SseEvent { data });
                }
            } else {
                let line = std::str::from_utf8(line)
                    .map_err(|_| SseError::InvalidUtf8 {
                        event: self.events_seen,
                    })?
                    .to_owned();
                self.field(&line)?;
            }
            start = end + 1;
        }
        self.pending.drain(..start);
        let buffered = self.pending.len() + self.data.as_ref().map_or(0, String::len);
        if buffered > self.max_event_bytes {
            return Err(SseError::EventTooLarge {
                limit: self.max_event_bytes,
            });
        }
        Ok(events)
    }

    fn field(&mut self, line: &str) -> Result<(), SseError> {
        if line.starts_with(':') {
            return Ok(()); // a comment (keep-alive pings)
        }
        let (name, value) = match line.split_once(':') {
            Some((name, value)) => (name, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        if name == "data" {
            match &mut self.data {
                // A second data line of the same event joins the first with a newline.
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            }
            if self.data.as_ref().map_or(0, String::len) > self.max_event_bytes {
                return Err(SseError::EventTooLarge {
                    limit: self.max_event_bytes,
                });
            }
        }
        Ok(())
    }

    /// True when bytes of an unfinished event are buffered: the stream ended mid-event.
    pub fn has_partial_event(&self) -> bool {
        self.data.is_some() || self.pending.iter().any(|b| !b.is_ascii_whitespace())
    }
}

/// Parses a complete byte stream; also reports whether it ended mid-event.
pub fn parse_all(bytes: &[u8], max_event_bytes: usize) -> Result<(Vec<SseEvent>, bool), SseError> {
    let mut parser = SseParser::new(max_event_bytes);
    let events = parser.feed(bytes)?;
    Ok((events, parser.has_partial_event()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(events: &[SseEvent]) -> Vec<&str> {
        events.iter().map(|e| e.data.as_str()).collect()
    }

    #[test]
    fn events_split_across_feeds() {
        let mut p = SseParser::new(1024);
        assert!(p.feed(b"data: {\"a\"").unwrap().is_empty());
        assert!(p.has_partial_event());
        let events = p.feed(b":1}\n\n: ping\n\ndata: [DONE]\r\n\r\n").unwrap();
        assert_eq!(data(&events), ["{\"a\":1}", "[DONE]"]);
        assert!(!p.has_partial_event());
    }

    #[test]
    fn multi_line_data_joins_with_newline() {
        let (events, partial) = parse_all(b"event: x\ndata: a\ndata:b\n\n", 64).unwrap();
        assert_eq!(data(&events), ["a\nb"]);
        assert!(!partial);
    }

    #[test]
    fn truncated_and_oversized() {
        let (_, partial) = parse_all(b"data: {\"choices\"", 64).unwrap();
        assert!(partial);
        assert_eq!(
            parse_all(&[b'x'; 100], 64),
            Err(SseError::EventTooLarge { limit: 64 })
        );
        assert!(parse_all(b"data: \xff\n\n", 64).is_err());
    }
}
