//! Exact sizes: `GB` = 10^9 bytes and `GiB` = 2^30 bytes, in input and output.
//! Parsing keeps integers (a decimal fraction is scaled exactly, then floored to whole
//! bytes); nothing goes through floating point.

use crate::error::{Error, Result};

const DECIMAL: [(&str, u128); 5] = [
    ("B", 1),
    ("KB", 1_000),
    ("MB", 1_000_000),
    ("GB", 1_000_000_000),
    ("TB", 1_000_000_000_000),
];
const BINARY: [(&str, u128); 4] = [
    ("KiB", 1 << 10),
    ("MiB", 1 << 20),
    ("GiB", 1 << 30),
    ("TiB", 1 << 40),
];

/// Parses a memory size such as `80GB`, `74.5 GiB` or `16000000000B`. A bare number or a
/// bare `G` is refused: guessing between 10^9 and 2^30 is how capacity numbers go wrong.
pub fn parse_bytes(flag: &str, input: &str) -> Result<u64> {
    let text = input.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(text.len());
    let (number, unit) = (text[..split].trim(), text[split..].trim());
    let bad = |why: &str| {
        Error::input_with_help(
            format!("{flag} {input:?}: {why}"),
            "write a number and a unit: 80GB (10^9 bytes), 80GiB (2^30 bytes), 512MiB, 16000000000B",
        )
    };
    if unit.is_empty() {
        return Err(bad("no unit"));
    }
    let scale = DECIMAL
        .iter()
        .chain(BINARY.iter())
        .find(|(name, _)| name.eq_ignore_ascii_case(unit))
        .map(|(_, scale)| *scale)
        .ok_or_else(|| match unit.to_ascii_uppercase().as_str() {
            "K" | "M" | "G" | "T" => bad(&format!(
                "`{unit}` is ambiguous: say {unit}B (decimal) or {unit}iB (binary)"
            )),
            _ => bad(&format!("unknown unit `{unit}`")),
        })?;
    let bytes = scale_decimal(number, scale).ok_or_else(|| bad("not a number"))?;
    u64::try_from(bytes).map_err(|_| bad("too large"))
}

/// Parses a parameter count such as `8B`, `7.24B`, `135M` or `8000000000`.
pub fn parse_params(flag: &str, input: &str) -> Result<u64> {
    let text = input.trim();
    let (number, scale) = match text.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let scale = match c.to_ascii_uppercase() {
                'K' => 1_000,
                'M' => 1_000_000,
                'B' | 'G' => 1_000_000_000,
                'T' => 1_000_000_000_000,
                _ => 0,
            };
            (text[..i].trim(), scale)
        }
        _ => (text, 1),
    };
    let bad = || {
        Error::input_with_help(
            format!("{flag} {input:?} is not a parameter count"),
            "write the count with an optional suffix: 8B (8×10^9), 135M, 1.5T, 8000000000",
        )
    };
    if scale == 0 {
        return Err(bad());
    }
    let count = scale_decimal(number, scale).ok_or_else(bad)?;
    u64::try_from(count).ok().filter(|c| *c > 0).ok_or_else(bad)
}

/// `number × scale`, exactly, floored to an integer. `None` for anything but digits with at
/// most one decimal point (underscores allowed as separators).
fn scale_decimal(number: &str, scale: u128) -> Option<u128> {
    let number: String = number.chars().filter(|c| *c != '_').collect();
    let (whole, fraction) = number.split_once('.').unwrap_or((&number, ""));
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    if !whole
        .chars()
        .chain(fraction.chars())
        .all(|c| c.is_ascii_digit())
        || fraction.len() > 18
    {
        return None;
    }
    let whole: u128 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let fraction_value: u128 = if fraction.is_empty() {
        0
    } else {
        fraction.parse().ok()?
    };
    let denominator = 10u128.pow(fraction.len() as u32);
    let scaled_fraction = fraction_value.checked_mul(scale)? / denominator;
    whole.checked_mul(scale)?.checked_add(scaled_fraction)
}

/// `1234567` → `1,234,567`.
pub fn group(n: u128) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A byte count in decimal units with two decimals, rounded half up: `536870912` → `536.87 MB`.
pub fn decimal(bytes: u128) -> String {
    scaled(bytes, &DECIMAL[1..])
}

/// A byte count in binary units with two decimals, rounded half up: `536870912` → `512.00 MiB`.
pub fn binary(bytes: u128) -> String {
    scaled(bytes, &BINARY)
}

/// `decimal` and `binary` side by side, because users meet both.
pub fn both(bytes: u128) -> String {
    format!("{} = {}", decimal(bytes), binary(bytes))
}

fn scaled(bytes: u128, units: &[(&str, u128)]) -> String {
    let (name, scale) = units
        .iter()
        .rev()
        .find(|(_, scale)| bytes >= *scale)
        .copied()
        .unwrap_or(("B", 1));
    if scale == 1 {
        return format!("{} B", group(bytes));
    }
    let hundredths = (bytes * 100 + scale / 2) / scale;
    format!("{}.{:02} {name}", group(hundredths / 100), hundredths % 100)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_exactly() {
        assert_eq!(parse_bytes("--x", "80GB").unwrap(), 80_000_000_000);
        assert_eq!(parse_bytes("--x", "80 GiB").unwrap(), 80 << 30);
        assert_eq!(parse_bytes("--x", "0.5GB").unwrap(), 500_000_000);
        assert_eq!(parse_bytes("--x", "1.5gib").unwrap(), 3 << 29);
        assert_eq!(
            parse_bytes("--x", "16_000_000_000B").unwrap(),
            16_000_000_000
        );
        assert_eq!(parse_bytes("--x", "512MiB").unwrap(), 512 << 20);
        // 1.3 GiB is not a whole number of bytes; it floors.
        assert_eq!(parse_bytes("--x", "1.3GiB").unwrap(), 1_395_864_371);
    }

    #[test]
    fn ambiguous_or_bad_sizes_are_refused() {
        for bad in [
            "80",
            "80G",
            "80g",
            "eighty GB",
            "80 XB",
            "GB",
            "1.2.3GB",
            "-5GB",
            "99999999999TB",
        ] {
            assert!(parse_bytes("--gpu-memory", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn params_parse() {
        assert_eq!(parse_params("--params", "8B").unwrap(), 8_000_000_000);
        assert_eq!(parse_params("--params", "7.24b").unwrap(), 7_240_000_000);
        assert_eq!(parse_params("--params", "135M").unwrap(), 135_000_000);
        assert_eq!(parse_params("--params", "123").unwrap(), 123);
        assert!(parse_params("--params", "8X").is_err());
        assert!(parse_params("--params", "0").is_err());
    }

    #[test]
    fn formatting() {
        assert_eq!(group(536_870_912), "536,870,912");
        assert_eq!(group(0), "0");
        assert_eq!(decimal(536_870_912), "536.87 MB");
        assert_eq!(binary(536_870_912), "512.00 MiB");
        assert_eq!(decimal(60_000_000_000), "60.00 GB");
        assert_eq!(binary(60_000_000_000), "55.88 GiB");
        assert_eq!(decimal(999), "999 B");
    }
}
