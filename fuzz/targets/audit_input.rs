//! The audit log reader: any bytes, in every input format (detected, or forced by the first
//! byte), plain or gzip, through the line cap; each request read is then seen through every
//! engine's request model (`audit::server_view`).

use prefixlint::audit::input::{read_bytes, InputFormat};
use prefixlint::audit::server_view::ServerView;
use prefixlint::audit::session::SessionKey;

const FORMATS: [Option<InputFormat>; 6] = [
    None,
    Some(InputFormat::Records),
    Some(InputFormat::Body),
    Some(InputFormat::Batch),
    Some(InputFormat::Litellm),
    Some(InputFormat::Otlp),
];

pub fn run(data: &[u8]) {
    let Some((&pick, bytes)) = data.split_first() else {
        return;
    };
    let forced = FORMATS[usize::from(pick) % FORMATS.len()];
    // A small cap now and then, so the over-long-line path runs too.
    let cap = if pick >= 128 { 64 } else { 1 << 20 };
    let key = if pick & 64 != 0 {
        SessionKey::parse(Some("/metadata/conversation"))
    } else {
        SessionKey::parse(None)
    };
    let _ = read_bytes("fuzz.jsonl", bytes, forced, &key, cap, |_, logged| {
        for view in [ServerView::LlamaCpp, ServerView::Vllm, ServerView::AsSent] {
            let _ = view.apply(&logged.body);
            if let Some(reply) = &logged.reply {
                let _ = view.message(&reply.message);
            }
        }
        Ok(())
    });
}
