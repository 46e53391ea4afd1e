//! What the results cache knows about each file it has read: the file's stamp (size, times,
//! inode, device) and what was read from it (its SHA-256 and, for a template, the names it
//! loads). A file whose stamp is unchanged is not read again, as git's index and ruff's cache
//! trust a file's metadata; a changed stamp means the file is read and hashed, so the key
//! stays a key of the contents.
//!
//! A stamp taken less than [`RACY_NANOS`] after the file last changed is not trusted: a
//! write in the same clock tick could leave the stamp as it was. Such a file is read once in
//! every run until a run stamps it later than that.
//!
//! The records live in one file in the cache folder ([`FILE_NAME`]), loaded when the cache
//! opens and rewritten (atomically) at the end of a run that read something. A record file
//! that does not read back is ignored: every file is then read once more.

use super::lock;
use crate::tokenize::bpe::PairHasher;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::ffi::OsString;
use std::hash::BuildHasherDefault;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

/// Bump when a record's meaning changes (how a template's loaded names are found).
const FILE_NAME: &str = "files-v1.bin";
const MAGIC: &[u8] = b"prefixlint files v1\n";

/// How long after a file's last change its stamp is trusted (coarse file-system clocks
/// tick in milliseconds; two seconds also covers file systems that keep whole seconds).
const RACY_NANOS: i64 = 2_000_000_000;

/// Records kept at most; past it, only this run's are kept.
const MAX_RECORDS: usize = 200_000;

/// Records by their path's bytes: a path hashed as a `Path` is walked byte by byte for
/// separators. Two spellings of one path get a record each (both correct). Hashed eight
/// bytes a step: a warm run looks up thousands of paths, and SipHash cost more than that.
type PathMap<V> = HashMap<OsString, V, BuildHasherDefault<PairHasher>>;

/// What a file's metadata says about its contents: if none of it changed, neither did they.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified_ns: i64,
    changed_ns: i64,
    inode: u64,
    device: u64,
}

impl Stamp {
    #[cfg(unix)]
    fn of(meta: &std::fs::Metadata) -> Option<Stamp> {
        use std::os::unix::fs::MetadataExt;
        Some(Stamp {
            len: meta.len(),
            modified_ns: meta.mtime().checked_mul(1_000_000_000)? + meta.mtime_nsec(),
            changed_ns: meta.ctime().checked_mul(1_000_000_000)? + meta.ctime_nsec(),
            inode: meta.ino(),
            device: meta.dev(),
        })
    }

    /// Elsewhere a file is always read (a change time and an inode are what make the
    /// stamp safe against edits that keep the size and restore the modification time).
    #[cfg(not(unix))]
    fn of(_meta: &std::fs::Metadata) -> Option<Stamp> {
        None
    }
}

/// The names a template includes, imports or extends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Loads {
    /// Not looked for (a samples or tokenizer file).
    NotLooked,
    /// Not UTF-8 text, so not a template that renders.
    NotText,
    /// A name given by an expression: what it loads depends on values.
    ByExpression,
    /// Literal names, in source order.
    Names(Vec<String>),
}

#[derive(Debug)]
pub struct Record {
    stamp: Stamp,
    /// When the stamp was taken (just before the file was read), in ns since the epoch.
    stamped_ns: i64,
    pub digest: [u8; 32],
    pub loads: Loads,
}

impl Record {
    fn trusted(&self, now: Stamp) -> bool {
        self.stamp == now
            && self.stamp.modified_ns.max(self.stamp.changed_ns) <= self.stamped_ns - RACY_NANOS
    }
}

pub struct Files {
    /// The build fingerprint the records are kept under.
    build: String,
    path: PathBuf,
    /// Relative paths are keyed as absolute ones: the records outlive this working folder.
    /// Without one (it was removed), relative paths get no records.
    cwd: Option<PathBuf>,
    loaded: PathMap<Arc<Record>>,
    /// The records this run met, and whether it made them (they are what is saved).
    this_run: Mutex<PathMap<(Arc<Record>, bool)>>,
    read: AtomicUsize,
}

/// The most a records file may hold (one row per file a run met).
const MAX_RECORDS_BYTES: u64 = 256 << 20;

/// A file to hash, if it is a regular one: a FIFO or a device is an error (a miss), so
/// the stage that reads it for the report says what it is.
fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    crate::source::open_regular(path, "the file").map_err(|e| match e {
        crate::error::Error::Io { source, .. } => source,
        other => std::io::Error::other(other.to_string()),
    })
}

impl Files {
    /// The records kept in `dir` by the build whose fingerprint is `build` (none when they
    /// do not read back, or another build kept them: how it found loaded names may differ).
    pub fn open(dir: &Path, build: &str) -> Files {
        let path = dir.join(FILE_NAME);
        let loaded = crate::source::read_cached(&path, MAX_RECORDS_BYTES)
            .and_then(|bytes| decode(&bytes, build))
            .unwrap_or_default();
        // Room for what a warm run meets: the files it met last time.
        let this_run = PathMap::with_capacity_and_hasher(loaded.len(), Default::default());
        Files {
            build: build.to_owned(),
            path,
            cwd: std::env::current_dir().ok(),
            loaded,
            this_run: Mutex::new(this_run),
            read: AtomicUsize::new(0),
        }
    }

    /// The file's record, read afresh unless its stamp is trusted; `Ok(None)` when there is
    /// no file. With `template`, the names it loads are known too.
    pub fn record(&self, path: &Path, template: bool) -> std::io::Result<Option<Arc<Record>>> {
        let key = match &self.cwd {
            _ if path.is_absolute() => Some(path.as_os_str().to_owned()),
            Some(cwd) => Some(cwd.join(path).into_os_string()),
            None => None,
        };
        let usable = |record: &Record| !template || record.loads != Loads::NotLooked;
        // A file met earlier in this run is taken as it was then, racy or not: within a run,
        // its content is the one the run renders, so a shared include is looked at once.
        if let Some(key) = &key {
            if let Some((seen, _)) = lock(&self.this_run).get(key) {
                if usable(seen) {
                    return Ok(Some(seen.clone()));
                }
            }
        }
        // Before the stat: a stamp must not claim a later moment than the read it vouches for.
        let stamped_ns = now_ns();
        let meta = match std::fs::metadata(path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        // Without a stamp or a key, the file is read and its record not kept.
        let stamp = key.as_ref().and(Stamp::of(&meta));
        if let (Some(key), Some(stamp)) = (&key, stamp) {
            if let Some(known) = self.loaded.get(key) {
                if known.trusted(stamp) && usable(known) {
                    lock(&self.this_run).insert(key.clone(), (known.clone(), false));
                    return Ok(Some(known.clone()));
                }
            }
        }
        let (digest, loads) = if template {
            let mut bytes = Vec::new();
            open_regular(path)?
                .take(crate::source::MAX_INPUT_BYTES + 1)
                .read_to_end(&mut bytes)?;
            let loads = match std::str::from_utf8(&bytes) {
                Err(_) => Loads::NotText,
                Ok(text) if super::loads_by_expression(text) => Loads::ByExpression,
                Ok(text) => Loads::Names(
                    crate::render::template_references(text)
                        .into_iter()
                        .map(|reference| reference.name)
                        .collect(),
                ),
            };
            (Sha256::digest(&bytes).into(), loads)
        } else {
            // Streamed: a GGUF tokenizer is gigabytes.
            let mut hasher = Sha256::new();
            std::io::copy(&mut open_regular(path)?, &mut hasher)?;
            (hasher.finalize().into(), Loads::NotLooked)
        };
        self.read.fetch_add(1, Ordering::Relaxed);
        let record = Arc::new(Record {
            // A record without a stamp is not kept, so this one is never compared.
            stamp: stamp.unwrap_or(Stamp {
                len: u64::MAX,
                modified_ns: i64::MAX,
                changed_ns: i64::MAX,
                inode: 0,
                device: 0,
            }),
            stamped_ns,
            digest,
            loads,
        });
        if let (Some(key), Some(_)) = (key, stamp) {
            lock(&self.this_run).insert(key, (record.clone(), true));
        }
        Ok(Some(record))
    }

    /// Files read (and hashed) in this run.
    pub fn read_count(&self) -> usize {
        self.read.load(Ordering::Relaxed)
    }

    /// Writes the records back when this run made new ones; failures are ignored.
    pub fn save(&self) {
        let this_run = std::mem::take(&mut *lock(&self.this_run));
        let made: Vec<(&OsString, &Arc<Record>)> = this_run
            .iter()
            .filter(|(_, (_, made))| *made)
            .map(|(path, (record, _))| (path, record))
            .collect();
        if made.is_empty() {
            return;
        }
        let mut all: HashMap<&OsString, &Arc<Record>> = HashMap::new();
        if self.loaded.len() + made.len() <= MAX_RECORDS {
            all.extend(self.loaded.iter());
        }
        all.extend(made);
        super::replace_file(&self.path, &encode(all, &self.build));
    }
}

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

fn encode(records: HashMap<&OsString, &Arc<Record>>, build: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + records.len() * 160);
    out.extend_from_slice(MAGIC);
    put_bytes(&mut out, build.as_bytes());
    out.extend_from_slice(&(records.len() as u64).to_le_bytes());
    for (path, record) in records {
        put_bytes(&mut out, path.as_encoded_bytes());
        let stamp = &record.stamp;
        for number in [stamp.len, stamp.inode, stamp.device] {
            out.extend_from_slice(&number.to_le_bytes());
        }
        for number in [stamp.modified_ns, stamp.changed_ns, record.stamped_ns] {
            out.extend_from_slice(&number.to_le_bytes());
        }
        out.extend_from_slice(&record.digest);
        match &record.loads {
            Loads::NotLooked => out.push(0),
            Loads::NotText => out.push(1),
            Loads::ByExpression => out.push(2),
            Loads::Names(names) => {
                out.push(3);
                out.extend_from_slice(&(names.len() as u64).to_le_bytes());
                for name in names {
                    put_bytes(&mut out, name.as_bytes());
                }
            }
        }
    }
    out
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// `None` for anything but a whole record file of this build.
fn decode(bytes: &[u8], build: &str) -> Option<PathMap<Arc<Record>>> {
    let mut reader = Reader(bytes.strip_prefix(MAGIC)?);
    if reader.bytes()? != build.as_bytes() {
        return None;
    }
    let count = reader.u64()?;
    let mut records = PathMap::with_capacity_and_hasher(
        usize::try_from(count).ok()?.min(MAX_RECORDS),
        Default::default(),
    );
    for _ in 0..count {
        let path = path_of(reader.bytes()?)?;
        let (len, inode, device) = (reader.u64()?, reader.u64()?, reader.u64()?);
        let (modified_ns, changed_ns, stamped_ns) = (reader.i64()?, reader.i64()?, reader.i64()?);
        let digest: [u8; 32] = reader.take(32)?.try_into().ok()?;
        let loads = match reader.take(1)?[0] {
            0 => Loads::NotLooked,
            1 => Loads::NotText,
            2 => Loads::ByExpression,
            3 => {
                let count = reader.u64()?;
                let mut names = Vec::new();
                for _ in 0..count {
                    names.push(String::from_utf8(reader.bytes()?.to_vec()).ok()?);
                }
                Loads::Names(names)
            }
            _ => return None,
        };
        let stamp = Stamp {
            len,
            modified_ns,
            changed_ns,
            inode,
            device,
        };
        let record = Record {
            stamp,
            stamped_ns,
            digest,
            loads,
        };
        records.insert(path, Arc::new(record));
    }
    reader.0.is_empty().then_some(records)
}

#[cfg(unix)]
fn path_of(bytes: &[u8]) -> Option<OsString> {
    use std::os::unix::ffi::OsStrExt;
    Some(std::ffi::OsStr::from_bytes(bytes).to_owned())
}

/// Records are only kept where stamps are (unix).
#[cfg(not(unix))]
fn path_of(_bytes: &[u8]) -> Option<OsString> {
    None
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn i64(&mut self) -> Option<i64> {
        Some(i64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn bytes(&mut self) -> Option<&'a [u8]> {
        let len = usize::try_from(self.u64()?).ok()?;
        self.take(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn records_read_back_and_a_damaged_file_reads_as_none() {
        let record = Arc::new(Record {
            stamp: Stamp {
                len: 7,
                modified_ns: 1,
                changed_ns: 2,
                inode: 3,
                device: 4,
            },
            stamped_ns: 5,
            digest: [9; 32],
            loads: Loads::Names(vec!["a.j2".into(), "partials/b.md".into()]),
        });
        let path = OsString::from("/p/t.j2");
        let bytes = encode(HashMap::from([(&path, &record)]), "build A");
        assert!(decode(&bytes, "build B").is_none());
        let back = decode(&bytes, "build A").unwrap();
        let read = &back[&path];
        assert_eq!(read.stamp, record.stamp);
        assert_eq!(read.stamped_ns, 5);
        assert_eq!(read.digest, [9; 32]);
        assert_eq!(read.loads, record.loads);
        for cut in 0..bytes.len() {
            assert!(decode(&bytes[..cut], "build A").is_none(), "{cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode(&longer, "build A").is_none());
    }

    /// The racy-stamp rule through `record`: a file whose stamp is as recorded, but was
    /// recorded within two seconds of its last change (an edit in the same clock tick, on a
    /// file system whose times are coarse, leaves the size and times as they were), is read
    /// again; recorded later than that, it is trusted and not read.
    #[cfg(unix)]
    #[test]
    fn a_record_taken_in_the_racy_window_is_read_again_even_with_its_stamp_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.j2");
        std::fs::write(&path, "Hello {{ name }}!").unwrap();
        let now = Stamp::of(&std::fs::metadata(&path).unwrap()).unwrap();
        let last_change = now.modified_ns.max(now.changed_ns);
        // What a run recorded before an edit that kept the stamp: another content's hash.
        let files_with = |stamped_ns| {
            let mut files = Files::open(&dir.path().join("cache"), "build");
            files.loaded.insert(
                path.clone().into_os_string(),
                Arc::new(Record {
                    stamp: now,
                    stamped_ns,
                    digest: [7; 32],
                    loads: Loads::Names(Vec::new()),
                }),
            );
            files
        };
        let actual: [u8; 32] = Sha256::digest(b"Hello {{ name }}!").into();
        let racy = files_with(last_change + RACY_NANOS / 2);
        let record = racy.record(&path, true).unwrap().unwrap();
        assert_eq!(record.digest, actual);
        assert_eq!(racy.read_count(), 1);
        let settled = files_with(last_change + RACY_NANOS);
        let record = settled.record(&path, true).unwrap().unwrap();
        assert_eq!(record.digest, [7; 32], "a settled stamp is trusted");
        assert_eq!(settled.read_count(), 0);
        // Any change to the stamp is read, settled or not.
        let mut moved = Files::open(&dir.path().join("cache"), "build");
        moved.loaded.insert(
            path.clone().into_os_string(),
            Arc::new(Record {
                stamp: Stamp {
                    len: now.len + 1,
                    ..now
                },
                stamped_ns: last_change + 10 * RACY_NANOS,
                digest: [7; 32],
                loads: Loads::Names(Vec::new()),
            }),
        );
        assert_eq!(moved.record(&path, true).unwrap().unwrap().digest, actual);
    }

    #[test]
    fn a_stamp_is_trusted_only_when_unchanged_and_taken_well_after_the_last_change() {
        let stamp = Stamp {
            len: 1,
            modified_ns: 10 * RACY_NANOS,
            changed_ns: 10 * RACY_NANOS,
            inode: 1,
            device: 1,
        };
        let record = |stamped_ns| Record {
            stamp,
            stamped_ns,
            digest: [0; 32],
            loads: Loads::NotLooked,
        };
        assert!(record(11 * RACY_NANOS).trusted(stamp));
        assert!(!record(11 * RACY_NANOS - 1).trusted(stamp));
        let edited = Stamp {
            changed_ns: stamp.changed_ns + 1,
            ..stamp
        };
        assert!(!record(20 * RACY_NANOS).trusted(edited));
    }
}
