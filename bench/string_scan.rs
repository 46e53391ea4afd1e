//! Issue 41 §4: the audit reader's string scan alone, SSE2 against the safe 8-byte loop.
//!
//! `audit::doc`'s reader finds the end of a JSON string's plain run with `special` (the first
//! quote, backslash or control byte). This program walks every string of a log the way the
//! reader does (a string's run to its quote, stepping over escapes) with each of the two
//! scans, checks that both stop at the same bytes, and prints the wall time of each, passes
//! alternating. Under callgrind (`--scan sse2` or `--scan words`, one scan a run), the
//! `scan_*` functions' inclusive instruction counts are the scans' own.
//!
//! Build: `rustc -O --edition 2021 bench/string_scan.rs -o bench/out/string_scan`
//! Run:   `bench/out/string_scan LOG [--passes N] [--scan both|sse2|words]`

use std::time::Instant;

/// The SSE2 block as it stood in `src/audit/doc.rs` (16 bytes a step), then the 8-byte loop.
#[inline(never)]
fn scan_sse2(bytes: &[u8], from: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    let from = {
        use std::arch::x86_64::*;
        let mut i = from;
        // SAFETY: SSE2 is part of the x86-64 baseline, and every load reads 16 bytes of
        // `bytes` (`i + 16 <= bytes.len()`), unaligned.
        unsafe {
            let quote = _mm_set1_epi8(b'"' as i8);
            let backslash = _mm_set1_epi8(b'\\' as i8);
            let control = _mm_set1_epi8(0x1f);
            while i + 16 <= bytes.len() {
                let chunk = _mm_loadu_si128(bytes.as_ptr().add(i).cast::<__m128i>());
                let found = _mm_or_si128(
                    _mm_or_si128(
                        _mm_cmpeq_epi8(chunk, quote),
                        _mm_cmpeq_epi8(chunk, backslash),
                    ),
                    _mm_cmpeq_epi8(_mm_min_epu8(chunk, control), chunk),
                );
                let mask = _mm_movemask_epi8(found) as u32;
                if mask != 0 {
                    return i + mask.trailing_zeros() as usize;
                }
                i += 16;
            }
        }
        i
    };
    words(bytes, from)
}

/// The safe loop alone (what `src/audit/doc.rs` keeps).
#[inline(never)]
fn scan_words(bytes: &[u8], from: usize) -> usize {
    words(bytes, from)
}

#[inline(always)]
fn words(bytes: &[u8], from: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut i = from;
    while let Some(chunk) = bytes.get(i..i + 8) {
        let chunk = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        let quote = chunk ^ (ONES * u64::from(b'"'));
        let backslash = chunk ^ (ONES * u64::from(b'\\'));
        let found = (quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash)
            | (chunk.wrapping_sub(ONES * 0x20) & !chunk);
        let found = found & HIGH;
        if found != 0 {
            return i + (found.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while let Some(&b) = bytes.get(i) {
        if b == b'"' || b == b'\\' || b < 0x20 {
            return i;
        }
        i += 1;
    }
    i
}

/// Walks every string of `line` as the reader does; returns the bytes of plain runs seen and
/// a checksum of where the scan stopped.
fn walk(line: &[u8], scan: fn(&[u8], usize) -> usize) -> (u64, u64) {
    let (mut plain, mut sum) = (0u64, 0u64);
    let mut i = 0;
    while i < line.len() {
        if line[i] != b'"' {
            i += 1;
            continue;
        }
        let mut at = i + 1;
        loop {
            let stop = scan(line, at);
            plain += (stop - at) as u64;
            sum = sum.wrapping_mul(31).wrapping_add(stop as u64);
            match line.get(stop) {
                None => {
                    i = stop;
                    break;
                }
                Some(b'"') => {
                    i = stop + 1;
                    break;
                }
                Some(b'\\') => at = stop + if line.get(stop + 1) == Some(&b'u') { 6 } else { 2 },
                Some(_) => at = stop + 1,
            }
        }
    }
    (plain, sum)
}

fn pass(lines: &[&[u8]], scan: fn(&[u8], usize) -> usize) -> (f64, u64, u64) {
    let start = Instant::now();
    let (mut plain, mut sum) = (0u64, 0u64);
    for line in lines {
        let (p, s) = walk(std::hint::black_box(line), scan);
        plain += p;
        sum ^= s;
    }
    (start.elapsed().as_secs_f64(), plain, sum)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let log = args.get(1).expect("usage: string_scan LOG [--passes N] [--scan both|sse2|words]");
    let flag = |name: &str| args.iter().position(|a| a == name).map(|i| args[i + 1].clone());
    let passes: usize = flag("--passes").map_or(5, |n| n.parse().expect("a number"));
    let which = flag("--scan").unwrap_or_else(|| "both".into());
    let text = std::fs::read(log).expect("the log");
    let lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
    let scans: Vec<(&str, fn(&[u8], usize) -> usize)> = match which.as_str() {
        "sse2" => vec![("sse2", scan_sse2)],
        "words" => vec![("words", scan_words)],
        _ => vec![("sse2", scan_sse2), ("words", scan_words)],
    };
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); scans.len()];
    let mut seen = None;
    for _ in 0..passes {
        for (k, (_, scan)) in scans.iter().enumerate() {
            let (secs, plain, sum) = pass(&lines, *scan);
            times[k].push(secs);
            match seen {
                None => seen = Some((plain, sum)),
                Some(s) => assert_eq!(s, (plain, sum), "the scans stopped at other bytes"),
            }
        }
    }
    let (plain, _) = seen.expect("a pass");
    println!(
        "{} MB, {} lines, {:.1} MB in strings' plain runs; {passes} passes, medians:",
        text.len() / 1_000_000,
        lines.len(),
        plain as f64 / 1e6
    );
    for (k, (name, _)) in scans.iter().enumerate() {
        let secs = median(times[k].clone());
        println!(
            "  {name}: {:.1} ms a pass ({:.2} GB/s of plain run)",
            secs * 1e3,
            plain as f64 / secs / 1e9
        );
    }
}
