//! The entries of one run key, packed in one file (`<run key>.pack`): a first run creates one
//! file instead of one per template (a thousand file creations cost a cold run more than it
//! saved, and each can wait on the file system's journal), and a warm run opens one file
//! instead of a thousand. The results cache keeps two packs per run key: the reports, and
//! the templates as written ([`super::ResultsCache`]), so a warm run in a form the cache has
//! reads the written forms alone.
//!
//! A pack is [`MAGIC`], then records: the entry's key (the 32 bytes of its SHA-256), its
//! length (`u64`, little-endian), its bytes and their checksum ([`record_sum`], over the
//! key, length and bytes); then the number of records (`u64`), so a pack cut short anywhere
//! does not read back, and a record damaged anywhere (one flipped bit in its key, length,
//! bytes or checksum) is not read: its template is checked again, never reported from
//! damaged bytes (a damaged length or count loses the whole pack). A pack is read at its first lookup (a run
//! that looks nothing up in it never reads it), whole, once (one read where a read per
//! entry cost a system call and a copy each), and each entry looked up is found where it
//! lies in those bytes. New entries are appended, as they are checked, to a new pack beside
//! the old one; at the end of the run the old pack's other entries follow them (the ones
//! this run read first, so the least recently used are last) up to the bound, and the new
//! pack replaces the old one whole (rename). A pack that does not read back is ignored:
//! its templates are checked again.

use super::{lock, EntryId};
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::hash::{BuildHasherDefault, Hasher};
use std::io::{BufWriter, Read, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

/// Bump with the stored form: old packs are then ignored (and pruned in time).
const MAGIC: &[u8] = b"prefixlint results pack v3\n";

/// An entry's key: a SHA-256.
const KEY_LEN: usize = 32;

/// An entry's name in a file name (a pack's, by its run key): 64 lower-case hex digits.
const HEX_KEY_LEN: usize = 64;

/// An entry longer than this is not trusted (a damaged length).
const MAX_ENTRY_BYTES: u64 = 64 << 20;

/// The entries' keys are SHA-256 digests, uniformly spread already: their first eight
/// bytes are the map's hash (SipHash over 32 bytes cost a warm run more than the lookups).
#[derive(Default)]
pub struct DigestHasher(u64);

impl Hasher for DigestHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // A digest's bytes come in one write; a length prefix (`write_usize`) is left out.
        let mut first = [0u8; 8];
        let n = bytes.len().min(8);
        first[..n].copy_from_slice(&bytes[..n]);
        self.0 ^= u64::from_le_bytes(first);
    }
    fn write_usize(&mut self, _: usize) {}
}

pub type DigestMap<V> = HashMap<EntryId, V, BuildHasherDefault<DigestHasher>>;
type DigestSet = HashSet<EntryId, BuildHasherDefault<DigestHasher>>;

/// Where an entry lies in the old pack's bytes, and whether this run read it.
struct Place {
    bytes: Range<usize>,
    used: AtomicBool,
}

/// The pack of one run key, as a run reads and extends it.
pub struct Pack {
    path: PathBuf,
    /// The pack as it was when the run began, read at the first lookup.
    old: OnceLock<OldPack>,
    /// Entries marked read before the pack was (applied when it is written again).
    kept: Mutex<Vec<EntryId>>,
    /// The new pack, made at the first entry stored: this run's entries, as checked.
    new: Mutex<Option<NewPack>>,
}

/// A pack's bytes as read, and where each entry lies in them.
#[derive(Default)]
struct OldPack {
    bytes: Vec<u8>,
    places: DigestMap<Place>,
}

struct NewPack {
    file: tempfile::NamedTempFile,
    out: BufWriter<File>,
    keys: DigestSet,
    /// A write failed: the new pack is dropped, the old one stays.
    failed: bool,
}

impl Pack {
    /// The pack at `path` (read at its first lookup; one that does not read back is empty).
    pub fn open(path: PathBuf) -> Pack {
        Pack {
            path,
            old: OnceLock::new(),
            kept: Mutex::new(Vec::new()),
            new: Mutex::new(None),
        }
    }

    /// The old pack's entries, read on first use.
    fn old(&self) -> &OldPack {
        self.old
            .get_or_init(|| read(&self.path).unwrap_or_default())
    }

    /// The bytes stored under `key` when the run began; the entry is marked read (kept
    /// before the others when the pack is written again).
    pub fn get(&self, key: &EntryId) -> Option<&[u8]> {
        let old = self.old();
        let place = old.places.get(key)?;
        place.used.store(true, Ordering::Relaxed);
        old.bytes.get(place.bytes.clone())
    }

    /// Marks the entry under `key` read without reading it (a report whose written form
    /// was served: another form is written from it), and without reading the pack.
    pub fn keep(&self, key: &EntryId) {
        match self.old.get() {
            Some(old) => {
                if let Some(place) = old.places.get(key) {
                    place.used.store(true, Ordering::Relaxed);
                }
            }
            None => lock(&self.kept).push(*key),
        }
    }

    /// Reads the pack now, if it was not read yet (on a thread that has nothing else to do).
    pub fn read_ahead(&self) {
        self.old();
    }

    /// The pack's file, when there is one.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends an entry to the new pack; failures drop the new pack (the old one stays).
    pub fn put(&self, key: &EntryId, bytes: &[u8]) {
        let mut new = lock(&self.new);
        if new.is_none() {
            *new = self.start_new();
        }
        let Some(pack) = new.as_mut().filter(|pack| !pack.failed) else {
            return;
        };
        if !pack.keys.insert(*key) {
            return;
        }
        pack.failed = write_record(&mut pack.out, key, bytes).is_err();
    }

    fn start_new(&self) -> Option<NewPack> {
        let dir = self.path.parent()?;
        let file = tempfile::NamedTempFile::new_in(dir).ok()?;
        let mut out = BufWriter::with_capacity(256 << 10, file.as_file().try_clone().ok()?);
        out.write_all(MAGIC).ok()?;
        Some(NewPack {
            file,
            out,
            keys: DigestSet::default(),
            failed: false,
        })
    }

    /// Whether this run stored entries.
    pub fn changed(&self) -> bool {
        lock(&self.new).is_some()
    }

    /// Ends the run's new pack: after its own entries, the old pack's others, those read
    /// this run first, up to `keep` entries in all; then it replaces the old pack. Nothing
    /// happens when the run stored nothing; failures leave the old pack as it was.
    pub fn finish(&self, keep: usize) {
        let Some(mut pack) = lock(&self.new).take() else {
            return;
        };
        let old_pack = self.old();
        for key in lock(&self.kept).drain(..) {
            if let Some(place) = old_pack.places.get(&key) {
                place.used.store(true, Ordering::Relaxed);
            }
        }
        let mut old: Vec<(&EntryId, &Place)> = old_pack
            .places
            .iter()
            .filter(|(key, _)| !pack.keys.contains(*key))
            .collect();
        // Read this run first, then the rest in their old order (least recently used last).
        old.sort_by_key(|(_, place)| (!place.used.load(Ordering::Relaxed), place.bytes.start));
        let room = keep.saturating_sub(pack.keys.len());
        let mut count = pack.keys.len() as u64;
        for (key, place) in old.into_iter().take(room) {
            if pack.failed {
                break;
            }
            if let Some(bytes) = old_pack.bytes.get(place.bytes.clone()) {
                pack.failed = write_record(&mut pack.out, key, bytes).is_err();
                count += 1;
            }
        }
        if pack.failed
            || pack.out.write_all(&count.to_le_bytes()).is_err()
            || pack.out.flush().is_err()
        {
            return;
        }
        drop(pack.out);
        let _ = pack.file.persist(&self.path);
    }
}

fn write_record(out: &mut impl Write, key: &EntryId, bytes: &[u8]) -> std::io::Result<()> {
    let head = record_head(key, bytes.len() as u64);
    out.write_all(&head)?;
    out.write_all(bytes)?;
    out.write_all(&record_sum(&head, bytes).to_le_bytes())
}

/// A record's key and length, as they lie before its bytes.
fn record_head(key: &EntryId, len: u64) -> [u8; KEY_LEN + 8] {
    let mut head = [0; KEY_LEN + 8];
    head[..KEY_LEN].copy_from_slice(key);
    head[KEY_LEN..].copy_from_slice(&len.to_le_bytes());
    head
}

/// The checksum a record ends with: any one changed word of its key, length or bytes
/// changes it (each step of [`checksum`] is a bijection of its state).
fn record_sum(head: &[u8], bytes: &[u8]) -> u64 {
    use crate::tokenize::cache::checksum;
    checksum(head).rotate_left(17) ^ checksum(bytes).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// The size of a record's checksum.
const SUM_LEN: usize = 8;

/// The pack at `path`, read whole; `None` when there is none or it does not read back.
fn read(path: &Path) -> Option<OldPack> {
    // A regular file only: a pack replaced by a FIFO would block the run.
    let mut file = crate::source::open_regular(path, "a pack").ok()?;
    let len = file.metadata().ok()?.len();
    let mut bytes = Vec::with_capacity(usize::try_from(len).ok()?);
    file.read_to_end(&mut bytes).ok()?;
    let places = read_places(&bytes)?;
    Some(OldPack { bytes, places })
}

/// Where each entry lies in a pack's bytes; `None` for anything but a whole pack.
fn read_places(bytes: &[u8]) -> Option<DigestMap<Place>> {
    let records = bytes.strip_prefix(MAGIC)?;
    let records_end = MAGIC.len() + records.len().checked_sub(8)?;
    let mut at = MAGIC.len();
    let mut places = DigestMap::default();
    let mut count = 0u64;
    while at < records_end {
        let head = bytes.get(at..at + KEY_LEN + 8)?;
        let key: EntryId = head[..KEY_LEN].try_into().ok()?;
        let size = u64::from_le_bytes(head[KEY_LEN..].try_into().ok()?);
        if size > MAX_ENTRY_BYTES {
            return None;
        }
        let start = at + head.len();
        let end = start.checked_add(usize::try_from(size).ok()?)?;
        let sum_end = end.checked_add(SUM_LEN)?;
        if sum_end > records_end {
            return None;
        }
        let sum = u64::from_le_bytes(bytes[end..sum_end].try_into().ok()?);
        // A damaged record is left out (a miss: its template is checked again); its
        // length still led to the next one, or the count at the end does not match.
        if record_sum(head, &bytes[start..end]) == sum {
            places.insert(
                key,
                Place {
                    bytes: start..end,
                    used: AtomicBool::new(false),
                },
            );
        }
        count += 1;
        at = sum_end;
    }
    let trailer: [u8; 8] = bytes.get(records_end..)?.try_into().ok()?;
    (at == records_end && u64::from_le_bytes(trailer) == count).then_some(places)
}

/// 64 lower-case hex digits: the name of a pack.
fn is_key(text: &str) -> bool {
    text.len() == HEX_KEY_LEN && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The pack of `run_key` in `dir`: its reports.
pub fn path_in(dir: &Path, run_key: &str) -> PathBuf {
    dir.join(format!("{run_key}.pack"))
}

/// The pack of `run_key`'s templates as written, in `dir`.
pub fn written_path_in(dir: &Path, run_key: &str) -> PathBuf {
    dir.join(format!("{run_key}{WRITTEN_SUFFIX}"))
}

const WRITTEN_SUFFIX: &str = ".written.pack";

/// The run key of a file named as a pack (either kind), or `None`.
pub fn run_key_of(file_name: &str) -> Option<&str> {
    let key = file_name
        .strip_suffix(WRITTEN_SUFFIX)
        .or_else(|| file_name.strip_suffix(".pack"))?;
    is_key(key).then_some(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u8) -> EntryId {
        let mut key = [0; KEY_LEN];
        key[KEY_LEN - 1] = n;
        key
    }

    fn entries(path: &Path) -> Vec<(EntryId, Vec<u8>)> {
        let pack = Pack::open(path.to_path_buf());
        let mut all: Vec<(EntryId, Range<usize>)> = pack
            .old()
            .places
            .iter()
            .map(|(k, p)| (*k, p.bytes.clone()))
            .collect();
        all.sort_by_key(|(_, place)| place.start);
        all.into_iter()
            .map(|(k, _)| {
                let bytes = pack.get(&k).unwrap().to_vec();
                (k, bytes)
            })
            .collect()
    }

    #[test]
    fn a_run_appends_its_entries_and_keeps_the_recently_read_up_to_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_in(dir.path(), &format!("{:064x}", 0));
        let first = Pack::open(path.clone());
        assert!(first.old().places.is_empty());
        for n in 1..=4 {
            first.put(&key(n), format!("report {n}").as_bytes());
        }
        first.put(&key(1), b"a second time");
        first.finish(10);
        let stored = entries(&path);
        assert_eq!(stored.len(), 4);
        assert_eq!(stored[0], (key(1), b"report 1".to_vec()));

        // A run reads entry 3, stores 5 and a new 2: its own first, then what it read, then
        // the least recently used, cut at the bound.
        let second = Pack::open(path.clone());
        assert_eq!(second.get(&key(3)).unwrap(), b"report 3");
        second.put(&key(5), b"report 5");
        second.put(&key(2), b"report 2 again");
        second.finish(4);
        let order: Vec<EntryId> = entries(&path).into_iter().map(|(k, _)| k).collect();
        assert_eq!(order, [key(5), key(2), key(3), key(1)]);
        assert_eq!(
            Pack::open(path.clone()).get(&key(2)).unwrap(),
            b"report 2 again"
        );

        // A run that marks entry 1 read without reading the pack (its written form was
        // served from the other pack), then stores 6: the mark counts all the same.
        let third = Pack::open(path.clone());
        third.keep(&key(1));
        assert!(third.old.get().is_none(), "keep read the pack");
        third.put(&key(6), b"report 6");
        third.finish(3);
        let order: Vec<EntryId> = entries(&path).into_iter().map(|(k, _)| k).collect();
        assert_eq!(order, [key(6), key(1), key(5)]);

        // A run that stores nothing leaves the pack as it is.
        let bytes = std::fs::read(&path).unwrap();
        Pack::open(path.clone()).finish(1);
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
        // Only the pack is left in the folder: no temporary files.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_damaged_pack_reads_as_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_in(dir.path(), &format!("{:064x}", 0));
        let pack = Pack::open(path.clone());
        pack.put(&key(1), b"one");
        pack.put(&key(2), b"two");
        pack.finish(10);
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(Pack::open(path.clone()).old().places.len(), 2);
        for cut in 0..bytes.len() {
            std::fs::write(&path, &bytes[..cut]).unwrap();
            assert!(Pack::open(path.clone()).old().places.is_empty(), "{cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        std::fs::write(&path, &longer).unwrap();
        assert!(Pack::open(path.clone()).old().places.is_empty());
        let mut bad_length = bytes.clone();
        bad_length[MAGIC.len() + KEY_LEN + 7] = 0xff;
        std::fs::write(&path, &bad_length).unwrap();
        assert!(Pack::open(path.clone()).old().places.is_empty());
        // One flipped bit anywhere (magic, key, length, bytes, checksum, count): no entry
        // reads back with other bytes than were stored; the damaged one is a miss.
        for at in 0..bytes.len() {
            for bit in [0x01u8, 0x80] {
                let mut flipped = bytes.clone();
                flipped[at] ^= bit;
                std::fs::write(&path, &flipped).unwrap();
                let pack = Pack::open(path.clone());
                let read: Vec<(EntryId, Vec<u8>)> = [key(1), key(2)]
                    .iter()
                    .filter_map(|k| pack.get(k).map(|b| (*k, b.to_vec())))
                    .collect();
                assert!(read.len() < 2, "a flip at byte {at} went unseen");
                for (k, got) in read {
                    let want: &[u8] = if k == key(1) { b"one" } else { b"two" };
                    assert_eq!(got, want, "a flip at byte {at} changed an entry");
                }
            }
        }
    }

    #[test]
    fn a_pack_replaced_by_a_fifo_is_a_miss_not_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_in(dir.path(), &format!("{:064x}", 0));
        assert!(std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .unwrap()
            .success());
        let pack = Pack::open(path.clone());
        assert!(pack.get(&key(1)).is_none());
    }
}
