//! A template as written ([`WrittenTemplate`]) as the results cache stores it: its summary
//! row field by field, then the text as it is written. A warm run reads one per template
//! served, and the row's JSON was a tenth of such a run's instructions.
//!
//! The row is destructured field by field on both sides (no `..`), so a field added to
//! [`TemplateRow`], [`TemplateCost`] or [`UnknownCallable`] does not compile until it is
//! stored here; the first byte is the layout's version ([`VERSION`]), so an entry of
//! another layout does not read back (it is checked again, as any entry that does not).
//! Numbers are `u64`, little-endian; strings and lists their length (`u64`) first.

use crate::cost::TemplateCost;
use crate::render::stand_ins::{CallableKind, UnknownCallable};
use crate::report::stream::WrittenTemplate;
use crate::report::TemplateRow;
use crate::rules::Severity;

/// Bump when the layout changes.
const VERSION: u8 = 1;

pub(super) fn encode(written: &WrittenTemplate) -> Vec<u8> {
    let WrittenTemplate { row, text } = written;
    let TemplateRow {
        path,
        samples,
        tokens_min,
        tokens_max,
        shared_prefix_tokens,
        cached_tokens_expected,
        recoverable_tokens,
        severities,
        stand_ins,
        unknown,
        cost,
    } = row;
    let mut out = Vec::with_capacity(128 + path.len() + text.len());
    out.push(VERSION);
    put_str(&mut out, path);
    for number in [
        samples,
        tokens_min,
        tokens_max,
        shared_prefix_tokens,
        cached_tokens_expected,
        recoverable_tokens,
    ] {
        put_number(&mut out, *number as u64);
    }
    put_number(&mut out, severities.len() as u64);
    out.extend(severities.iter().map(|severity| match severity {
        Severity::Info => 0,
        Severity::Warning => 1,
        Severity::Error => 2,
    }));
    put_number(&mut out, stand_ins.len() as u64);
    for stand_in in stand_ins {
        put_str(&mut out, stand_in);
    }
    put_number(&mut out, unknown.len() as u64);
    for UnknownCallable { kind, name } in unknown {
        out.push(match kind {
            CallableKind::Filter => 0,
            CallableKind::Test => 1,
            CallableKind::Function => 2,
            CallableKind::Loader => 3,
        });
        put_str(&mut out, name);
    }
    match cost {
        None => out.push(0),
        Some(TemplateCost {
            model,
            prices_date,
            currency,
            now,
            fixed,
            cached_now,
            cached_fixed,
        }) => {
            out.push(1);
            for text in [model, prices_date, currency] {
                put_str(&mut out, text);
            }
            for number in [*now, *fixed, *cached_now as u64, *cached_fixed as u64] {
                put_number(&mut out, number);
            }
        }
    }
    put_str(&mut out, text);
    out
}

/// The template [`encode`] stored; `None` for bytes it did not write (another layout, a
/// damaged or cut entry).
pub(super) fn decode(bytes: &[u8]) -> Option<WrittenTemplate> {
    let mut r = Reader(bytes);
    if r.byte()? != VERSION {
        return None;
    }
    let path = r.string()?;
    let samples = r.size()?;
    let tokens_min = r.size()?;
    let tokens_max = r.size()?;
    let shared_prefix_tokens = r.size()?;
    let cached_tokens_expected = r.size()?;
    let recoverable_tokens = r.size()?;
    let severities = (0..r.count(1)?)
        .map(|_| match r.byte()? {
            0 => Some(Severity::Info),
            1 => Some(Severity::Warning),
            2 => Some(Severity::Error),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()?;
    let stand_ins = (0..r.count(8)?)
        .map(|_| r.string())
        .collect::<Option<Vec<_>>>()?;
    let unknown = (0..r.count(9)?)
        .map(|_| {
            let kind = match r.byte()? {
                0 => CallableKind::Filter,
                1 => CallableKind::Test,
                2 => CallableKind::Function,
                3 => CallableKind::Loader,
                _ => return None,
            };
            Some(UnknownCallable {
                kind,
                name: r.string()?,
            })
        })
        .collect::<Option<Vec<_>>>()?;
    let cost = match r.byte()? {
        0 => None,
        1 => Some(TemplateCost {
            model: r.string()?,
            prices_date: r.string()?,
            currency: r.string()?,
            now: r.number()?,
            fixed: r.number()?,
            cached_now: r.size()?,
            cached_fixed: r.size()?,
        }),
        _ => return None,
    };
    let text = r.string()?;
    if !r.0.is_empty() {
        return None;
    }
    Some(WrittenTemplate {
        row: TemplateRow {
            path,
            samples,
            tokens_min,
            tokens_max,
            shared_prefix_tokens,
            cached_tokens_expected,
            recoverable_tokens,
            severities,
            stand_ins,
            unknown,
            cost,
        },
        text,
    })
}

fn put_number(out: &mut Vec<u8>, number: u64) {
    out.extend_from_slice(&number.to_le_bytes());
}

fn put_str(out: &mut Vec<u8>, text: &str) {
    put_number(out, text.len() as u64);
    out.extend_from_slice(text.as_bytes());
}

/// The bytes not read yet.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }

    fn byte(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    fn number(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(*self.take(8)?.first_chunk()?))
    }

    fn size(&mut self) -> Option<usize> {
        usize::try_from(self.number()?).ok()
    }

    /// A list's length, each item taking at least `item_bytes`: a damaged length fails
    /// here rather than allocate.
    fn count(&mut self, item_bytes: usize) -> Option<usize> {
        self.size().filter(|&n| {
            n.checked_mul(item_bytes)
                .is_some_and(|bytes| bytes <= self.0.len())
        })
    }

    fn string(&mut self) -> Option<String> {
        let len = self.size()?;
        Some(std::str::from_utf8(self.take(len)?).ok()?.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(cost: Option<TemplateCost>) -> TemplateRow {
        TemplateRow {
            path: "prompts/t.j2#greeting".into(),
            samples: 3,
            tokens_min: 10,
            tokens_max: 12,
            shared_prefix_tokens: 4,
            cached_tokens_expected: 2,
            recoverable_tokens: 6,
            severities: vec![Severity::Error, Severity::Info, Severity::Warning],
            stand_ins: vec!["state".into(), "ünïcode".into()],
            unknown: vec![
                UnknownCallable {
                    kind: CallableKind::Filter,
                    name: "shout".into(),
                },
                UnknownCallable {
                    kind: CallableKind::Test,
                    name: "odd_one".into(),
                },
                UnknownCallable {
                    kind: CallableKind::Function,
                    name: "now".into(),
                },
                UnknownCallable {
                    kind: CallableKind::Loader,
                    name: "prompts:intro".into(),
                },
            ],
            cost,
        }
    }

    /// Every field comes back as it went in, with and without a cost; the text follows
    /// byte for byte; an entry cut anywhere, of another version, with a byte too many or
    /// an unknown severity, kind or cost tag does not read back.
    #[test]
    fn a_written_template_reads_back_whole_and_a_damaged_one_not_at_all() {
        let cost = TemplateCost {
            model: "claude-sonnet-4".into(),
            prices_date: "2026-11-30".into(),
            currency: "USD".into(),
            now: 4_000_000,
            fixed: u64::MAX,
            cached_now: 1024,
            cached_fixed: 0,
        };
        for row in [row(None), row(Some(cost))] {
            let written = WrittenTemplate {
                row,
                text: "    {\n      \"path\": \"t.j2\" \u{2192} é\n    }".into(),
            };
            let bytes = encode(&written);
            assert_eq!(decode(&bytes), Some(written.clone()));
            for cut in 0..bytes.len() {
                assert_eq!(decode(&bytes[..cut]), None, "cut at {cut}");
            }
            let mut longer = bytes.clone();
            longer.push(0);
            assert_eq!(decode(&longer), None);
            let mut other = bytes.clone();
            other[0] = VERSION + 1;
            assert_eq!(decode(&other), None);
            // The first severity's byte, then the first kind's, then the cost's tag.
            let severities = 1 + 8 + written.row.path.len() + 6 * 8 + 8;
            let kinds = severities + 3 + 8 + (8 + 5) + (8 + "ünïcode".len()) + 8;
            let cost_tag = kinds + 3 * (1 + 8) + 5 + 7 + 3;
            for at in [severities, kinds, cost_tag] {
                let mut damaged = bytes.clone();
                damaged[at] = 7;
                assert_eq!(decode(&damaged), None, "byte {at}");
            }
        }
        assert_eq!(decode(&[]), None);
    }
}
