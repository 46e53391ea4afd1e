//! The editor's open buffers: their text as the editor has it (unsaved edits included),
//! and the conversions between LSP positions, byte offsets, URIs and paths.

use lsp_types::{Position, Range, TextDocumentContentChangeEvent, Uri};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// How the client counts columns: UTF-16 code units (the LSP default) or bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    Utf16,
}

#[derive(Debug, Clone)]
pub struct Document {
    pub text: String,
    /// The [`Documents::revision`] of its last change: a check of an older one is stale.
    pub changed_at: u64,
}

/// Open buffers by URI, shared between the message loop (which edits them) and the worker
/// (which checks a snapshot).
#[derive(Debug, Default)]
pub struct Documents {
    open: HashMap<String, Document>,
    /// Bumped by every change to any buffer.
    pub revision: u64,
}

impl Documents {
    pub fn open(&mut self, uri: &Uri, text: String) {
        self.revision += 1;
        self.open.insert(
            uri.as_str().to_owned(),
            Document {
                text,
                changed_at: self.revision,
            },
        );
    }

    pub fn close(&mut self, uri: &Uri) {
        self.revision += 1;
        self.open.remove(uri.as_str());
    }

    /// Applies the editor's changes (whole texts or ranges) in order.
    pub fn change(
        &mut self,
        uri: &Uri,
        changes: Vec<TextDocumentContentChangeEvent>,
        encoding: Encoding,
    ) {
        self.revision += 1;
        let revision = self.revision;
        let Some(document) = self.open.get_mut(uri.as_str()) else {
            return;
        };
        for change in changes {
            match change.range {
                Some(range) => {
                    let start = offset(&document.text, range.start, encoding);
                    let end = offset(&document.text, range.end, encoding).max(start);
                    document.text.replace_range(start..end, &change.text);
                }
                None => document.text = change.text,
            }
        }
        document.changed_at = revision;
    }

    pub fn get(&self, uri: &str) -> Option<&Document> {
        self.open.get(uri)
    }

    pub fn uris(&self) -> Vec<String> {
        self.open.keys().cloned().collect()
    }

    /// The URI the client opened `path` under (clients spell URIs differently: `%3A`
    /// or `:`, upper or lower case hex), if it is open.
    pub fn uri_of(&self, path: &Path) -> Option<&str> {
        let spelled = uri_from_path(path);
        if self.open.contains_key(spelled.as_str()) {
            return self
                .open
                .get_key_value(spelled.as_str())
                .map(|(k, _)| k.as_str());
        }
        self.open
            .keys()
            .find(|uri| path_from_uri(uri).as_deref() == Some(path))
            .map(String::as_str)
    }

    /// The open buffer of `path`, if any.
    pub fn text_of(&self, path: &Path) -> Option<&str> {
        let uri = self.uri_of(path)?;
        self.open.get(uri).map(|d| d.text.as_str())
    }
}

/// The LSP position of a byte offset in `text` (clamped, and moved back to a character
/// boundary).
pub fn position(text: &str, offset: usize, encoding: Encoding) -> Position {
    let offset = crate::source::floor_char_boundary(text, offset.min(text.len()));
    let before = &text[..offset];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = before.matches('\n').count();
    let in_line = &text[line_start..offset];
    let character = match encoding {
        Encoding::Utf8 => in_line.len(),
        Encoding::Utf16 => in_line.encode_utf16().count(),
    };
    Position::new(line as u32, character as u32)
}

pub fn range(text: &str, span: std::ops::Range<usize>, encoding: Encoding) -> Range {
    Range::new(
        position(text, span.start, encoding),
        position(text, span.end.max(span.start), encoding),
    )
}

/// The byte offset of an LSP position; past the end of a line means its end, past the
/// last line the end of the text.
pub fn offset(text: &str, position: Position, encoding: Encoding) -> usize {
    let mut line_start = 0;
    for _ in 0..position.line {
        match text[line_start..].find('\n') {
            Some(i) => line_start += i + 1,
            None => return text.len(),
        }
    }
    let line_end = text[line_start..]
        .find('\n')
        .map_or(text.len(), |i| line_start + i);
    let line = &text[line_start..line_end];
    let wanted = position.character as usize;
    let mut units = 0;
    for (at, c) in line.char_indices() {
        if units >= wanted {
            return line_start + at;
        }
        units += match encoding {
            Encoding::Utf8 => c.len_utf8(),
            Encoding::Utf16 => c.len_utf16(),
        };
    }
    line_end
}

/// The local path of a `file:` URI.
pub fn path_from_uri(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    // `file://host/path` is not local; `file:///path` has an empty host.
    let path = rest.strip_prefix("localhost").unwrap_or(rest);
    if !path.starts_with('/') {
        return None;
    }
    let bytes = path.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
            if let Ok(byte) = u8::from_str_radix(hex, 16) {
                decoded.push(byte);
                i += 3;
                continue;
            }
        }
        decoded.push(bytes[i]);
        i += 1;
    }
    let text = String::from_utf8(decoded).ok()?;
    // Windows clients send `file:///C:/…`.
    let text = match text.as_bytes() {
        [b'/', drive, b':', ..] if drive.is_ascii_alphabetic() && cfg!(windows) => {
            text[1..].to_owned()
        }
        _ => text,
    };
    Some(PathBuf::from(text))
}

/// The `file:` URI of a path, percent-encoding what a URI path may not hold.
pub fn uri_from_path(path: &Path) -> Uri {
    let shown = path.to_string_lossy().replace('\\', "/");
    let mut encoded = String::from("file://");
    if !shown.starts_with('/') {
        encoded.push('/');
    }
    for byte in shown.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                encoded.push(byte as char)
            }
            _ => encoded.push_str(&format!("%{byte:02X}")),
        }
    }
    Uri::from_str(&encoded).unwrap_or_else(|_| Uri::from_str("file:///").expect("a valid URI"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_round_trip_in_both_encodings() {
        let text = "a\nhé😀x\n";
        for encoding in [Encoding::Utf8, Encoding::Utf16] {
            for offset in [0, 2, 3, 5, 9, 10, text.len()] {
                let p = position(text, offset, encoding);
                assert_eq!(
                    super::offset(text, p, encoding),
                    offset,
                    "{encoding:?} {offset}"
                );
            }
        }
        assert_eq!(position(text, 9, Encoding::Utf16), Position::new(1, 4));
    }

    #[test]
    fn a_uri_spelled_otherwise_finds_its_buffer() {
        let mut documents = Documents::default();
        let uri = Uri::from_str("file:///tmp/my%2Dprompt.j2").unwrap();
        documents.open(&uri, "text".into());
        let path = Path::new("/tmp/my-prompt.j2");
        assert_eq!(documents.uri_of(path), Some("file:///tmp/my%2Dprompt.j2"));
        assert_eq!(documents.text_of(path), Some("text"));
    }

    #[test]
    fn uris_and_paths() {
        let path = Path::new("/tmp/a b/ü.jinja");
        let uri = uri_from_path(path);
        assert_eq!(uri.as_str(), "file:///tmp/a%20b/%C3%BC.jinja");
        assert_eq!(path_from_uri(uri.as_str()).as_deref(), Some(path));
        assert_eq!(path_from_uri("untitled:1"), None);
    }
}
