//! The on-disk cache of converted tokenizers: a flat little-endian file per tokenizer,
//! named by the SHA-256 of the `tokenizer.json` it came from, so an edited tokenizer never
//! meets a stale entry. It lives in the user's cache folder, never next to templates, and is
//! written atomically (temp file + rename). Every failure here just means "no cache".

use super::bpe::{BpeParts, Metaspace, TokenTexts};
use super::pretokenize::SplitRule;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// Bump when [`BpeParts`] or its encoding changes: old files are then simply not found.
const FORMAT: &str = "bpe-v4";
const MAGIC: &[u8; 8] = b"PLBPE\x00\x04\x00";

/// `$PREFIXLINT_CACHE_DIR`, else `$XDG_CACHE_HOME/prefixlint`, else `~/.cache/prefixlint`.
pub fn cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("PREFIXLINT_CACHE_DIR") {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir).join("prefixlint"));
    }
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty())?;
    Some(PathBuf::from(home).join(".cache").join("prefixlint"))
}

pub fn content_key(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn entry_path(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("{FORMAT}-{key}.bin"))
}

/// The special tokens a `tokenizer.json` declares ([`super::special::Declared`], as JSON).
pub fn specials_path(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("specials-v1-{key}.json"))
}

/// Marks a tokenizer this engine does not reproduce, so later runs skip the conversion.
pub fn unsupported_marker(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("{FORMAT}-{key}.unsupported"))
}

pub fn read(path: &Path) -> Option<BpeParts> {
    decode(&crate::source::read_cached(
        path,
        super::MAX_TOKENIZER_BYTES,
    )?)
}

/// Writes atomically; a failure leaves no partial file and is not an error.
pub fn write(path: &Path, bytes: &[u8]) {
    let Some(dir) = path.parent() else { return };
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let Ok(mut file) = tempfile::NamedTempFile::new_in(dir) else {
        return;
    };
    if std::io::Write::write_all(&mut file, bytes).is_ok() {
        let _ = file.persist(path);
    }
}

pub fn encode(parts: &BpeParts) -> Vec<u8> {
    let mut body = Vec::with_capacity(8 << 20);
    // The vocabulary as it lies in memory: its text, then each token's end.
    let (blob, ends) = parts.id_to_token.parts();
    put_u32(&mut body, blob.len() as u32);
    body.extend_from_slice(blob.as_bytes());
    put_u32s(&mut body, ends);
    put_u32s(&mut body, &parts.byte_ids);
    put_u32(&mut body, parts.merges.len() as u32);
    for &(left, right, merged) in &parts.merges {
        put_u32(&mut body, left);
        put_u32(&mut body, right);
        put_u32(&mut body, merged);
    }
    let added_contents: Vec<String> = parts.added.iter().map(|(c, _)| c.clone()).collect();
    let added_ids: Vec<u32> = parts.added.iter().map(|(_, id)| *id).collect();
    put_strings(&mut body, &added_contents);
    put_u32s(&mut body, &added_ids);
    let patterns: Vec<String> = parts.splits.iter().map(|s| s.pattern.clone()).collect();
    put_strings(&mut body, &patterns);
    for split in &parts.splits {
        body.push(
            u8::from(split.removed) | (u8::from(split.invert) << 1) | (u8::from(split.digits) << 2),
        );
    }
    let metaspace = match parts.metaspace {
        None => 0,
        Some(Metaspace { prepend }) => 4 | (u8::from(prepend) << 3),
    };
    body.push(
        u8::from(parts.nfc)
            | (u8::from(parts.ignore_merges) << 1)
            | metaspace
            | (u8::from(parts.nfkc) << 4)
            | (u8::from(parts.rank_is_merged_id) << 5),
    );
    let mut out = Vec::with_capacity(body.len() + 24);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(&checksum(&body).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

pub fn decode(bytes: &[u8]) -> Option<BpeParts> {
    let mut header = Reader(bytes);
    if header.take(8)? != MAGIC {
        return None;
    }
    let len = u64::from_le_bytes(header.take(8)?.try_into().ok()?) as usize;
    let sum = u64::from_le_bytes(header.take(8)?.try_into().ok()?);
    let body = header.0;
    if body.len() != len || checksum(body) != sum {
        return None;
    }
    let mut r = Reader(body);
    let blob_len = r.u32()? as usize;
    let blob = String::from_utf8(r.take(blob_len)?.to_vec()).ok()?;
    let id_to_token = TokenTexts::from_parts(blob, r.u32s()?)?;
    let byte_ids = r.u32s()?;
    let merge_count = r.u32()? as usize;
    let mut merges = Vec::with_capacity(merge_count.min(body.len() / 12));
    for _ in 0..merge_count {
        merges.push((r.u32()?, r.u32()?, r.u32()?));
    }
    let added_contents = r.strings()?;
    let added_ids = r.u32s()?;
    if added_contents.len() != added_ids.len() {
        return None;
    }
    let patterns = r.strings()?;
    let flags = r.take(patterns.len())?;
    let mut splits = Vec::with_capacity(patterns.len());
    for (pattern, &flag) in patterns.into_iter().zip(flags) {
        if flag > 7 {
            return None;
        }
        splits.push(SplitRule {
            pattern,
            removed: flag & 1 != 0,
            invert: flag & 2 != 0,
            digits: flag & 4 != 0,
        });
    }
    let [flags] = r.take(1)? else { return None };
    if *flags > 63 || (flags & 4 == 0 && flags & 8 != 0) || (flags & 1 != 0 && flags & 16 != 0) {
        return None;
    }
    let (nfc, ignore_merges, nfkc) = (flags & 1 != 0, flags & 2 != 0, flags & 16 != 0);
    let rank_is_merged_id = flags & 32 != 0;
    let metaspace = (flags & 4 != 0).then_some(Metaspace {
        prepend: flags & 8 != 0,
    });
    if !r.0.is_empty() {
        return None;
    }
    Some(BpeParts {
        id_to_token,
        byte_ids,
        merges,
        added: added_contents.into_iter().zip(added_ids).collect(),
        splits,
        nfc,
        nfkc,
        ignore_merges,
        metaspace,
        rank_is_merged_id,
    })
}

/// A fast 64-bit checksum (FNV-style over 8-byte words): catches a damaged file, cheaply.
pub(crate) fn checksum(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let word = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
        hash = (hash ^ word)
            .wrapping_mul(0x0000_0100_0000_01b3)
            .rotate_left(23);
    }
    for &b in chunks.remainder() {
        hash = (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash ^ bytes.len() as u64
}

pub(super) fn put_u32(out: &mut Vec<u8>, n: u32) {
    out.extend_from_slice(&n.to_le_bytes());
}

pub(super) fn put_u32s(out: &mut Vec<u8>, values: &[u32]) {
    put_u32(out, values.len() as u32);
    for &v in values {
        put_u32(out, v);
    }
}

/// Lengths first, then one blob: decoding is a single pass with no per-string parsing.
pub(super) fn put_strings(out: &mut Vec<u8>, strings: &[String]) {
    put_u32(out, strings.len() as u32);
    for s in strings {
        put_u32(out, s.len() as u32);
    }
    for s in strings {
        out.extend_from_slice(s.as_bytes());
    }
}

pub(super) struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Self {
        Reader(bytes)
    }

    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(super) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    pub(super) fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    pub(super) fn u32s(&mut self) -> Option<Vec<u32>> {
        let count = self.u32()? as usize;
        let raw = self.take(count.checked_mul(4)?)?;
        Some(
            raw.chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        )
    }

    pub(super) fn strings(&mut self) -> Option<Vec<String>> {
        let lengths = self.u32s()?;
        let total = lengths
            .iter()
            .try_fold(0usize, |sum, &l| sum.checked_add(l as usize))?;
        let blob = std::str::from_utf8(self.take(total)?).ok()?;
        let mut out = Vec::with_capacity(lengths.len());
        let mut at = 0;
        for len in lengths {
            let end = at + len as usize;
            out.push(blob.get(at..end)?.to_owned());
            at = end;
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> BpeParts {
        BpeParts {
            id_to_token: ["a", "b", "", "ab"].into_iter().collect(),
            byte_ids: (0..256).collect(),
            merges: vec![(0, 1, 3)],
            added: vec![("<|x|>".into(), 4)],
            splits: vec![
                SplitRule {
                    pattern: r"\s+|\S+".into(),
                    removed: false,
                    invert: false,
                    digits: false,
                },
                SplitRule {
                    pattern: r"\p{N}{1,3}".into(),
                    removed: true,
                    invert: true,
                    digits: false,
                },
                SplitRule {
                    pattern: "individual".into(),
                    removed: false,
                    invert: false,
                    digits: true,
                },
            ],
            nfc: true,
            nfkc: false,
            ignore_merges: true,
            metaspace: Some(Metaspace { prepend: true }),
            rank_is_merged_id: true,
        }
    }

    #[test]
    fn round_trips() {
        let parts = sample();
        assert_eq!(decode(&encode(&parts)), Some(parts));
    }

    #[test]
    fn damaged_or_truncated_files_are_refused() {
        let bytes = encode(&sample());
        for cut in [0, 7, 8, 24, bytes.len() / 2, bytes.len() - 1] {
            assert_eq!(decode(&bytes[..cut]), None, "cut at {cut}");
        }
        let mut flipped = bytes.clone();
        let last = flipped.len() - 3;
        flipped[last] ^= 0x40;
        assert_eq!(decode(&flipped), None);
    }
}
