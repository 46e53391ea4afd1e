//! The SSE parser of `measure`, fed whole and in two pieces: same events either way.

use prefixlint::measure::sse::{parse_all, SseParser};

pub fn run(data: &[u8]) {
    let Some((&split, bytes)) = data.split_first() else {
        return;
    };
    let whole = parse_all(bytes, 4096);
    let cut = (split as usize).min(bytes.len());
    let mut parser = SseParser::new(4096);
    let pieces = parser.feed(&bytes[..cut]).and_then(|mut first| {
        first.extend(parser.feed(&bytes[cut..])?);
        Ok(first)
    });
    if let (Ok((events, _)), Ok(split_events)) = (whole, pieces) {
        assert_eq!(events, split_events, "chunking changed the events");
    }
}
