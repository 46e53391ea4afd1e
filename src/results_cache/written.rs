//! A template as written ([`WrittenTemplate`]) as the results cache stores it: the row and
//! the text through serde's derives, in postcard's compact form. A warm run reads one per
//! template served (the row's JSON was a tenth of such a run's instructions).
//!
//! A field added to [`crate::report::TemplateRow`] is stored with no change here. No version
//! is kept by hand: the layout is the types', and an entry is found only by a key that
//! starts with the build's fingerprint (a hash of `src/`, `Cargo.lock` and the compiler,
//! [`super::BUILD_FINGERPRINT`]), so no build reads an entry another build wrote. An entry
//! that does not decode whole (damaged, cut) is a miss, checked again.

use crate::report::stream::WrittenTemplate;

pub(super) fn encode(written: &WrittenTemplate) -> Vec<u8> {
    // Serializing owned strings and numbers into a `Vec` cannot fail.
    postcard::to_stdvec(written).unwrap_or_default()
}

/// The template [`encode`] stored; `None` for bytes it did not write (a damaged or cut entry,
/// bytes left over).
pub(super) fn decode(bytes: &[u8]) -> Option<WrittenTemplate> {
    match postcard::take_from_bytes(bytes) {
        Ok((written, [])) => Some(written),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::TemplateCost;
    use crate::render::stand_ins::{CallableKind, UnknownCallable};
    use crate::report::TemplateRow;
    use crate::rules::Severity;

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

    /// Every field comes back as it went in, with and without a cost (a field the row skips
    /// when empty would not: postcard has no field names); the text follows byte for byte;
    /// an entry cut anywhere, with a byte too many or an unknown severity, kind or cost tag
    /// does not read back.
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
            let has_cost = row.cost.is_some();
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
            // The first severity's byte, then the first kind's, then the cost's tag (small
            // lengths and numbers take one byte each).
            let severities = 1 + written.row.path.len() + 6 + 1;
            let kinds = severities + 3 + 1 + (1 + 5) + (1 + "ünïcode".len()) + 1;
            let cost_tag = kinds + 4 * (1 + 1) + 5 + 7 + 3 + "prompts:intro".len();
            let expected = [(severities, 2), (kinds, 0), (cost_tag, u8::from(has_cost))];
            for (at, byte) in expected {
                assert_eq!(bytes[at], byte, "byte {at}");
                let mut damaged = bytes.clone();
                damaged[at] = 7;
                assert_eq!(decode(&damaged), None, "byte {at}");
            }
        }
        assert_eq!(decode(&[]), None);
    }
}
