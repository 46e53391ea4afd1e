//! Python's `datetime.datetime` and `datetime.date` for templates: what an application
//! passes as a clock value, and what PyYAML makes of an unquoted timestamp. They print as
//! `str()` does and answer `.strftime()`, `.isoformat()`, `.date()`, `.year`, comparisons.

use chrono::{Datelike, FixedOffset, NaiveDate, NaiveDateTime, Timelike};
use minijinja::value::{from_args, DynObject, Kwargs, Object, ObjectRepr, Value};
use minijinja::{Error, ErrorKind, State};
use std::cmp::Ordering;
use std::fmt::{self, Write};
use std::sync::Arc;

/// A `datetime.datetime` (naive or with a fixed offset) or a `datetime.date`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PyDateTime {
    pub at: NaiveDateTime,
    pub offset: Option<FixedOffset>,
    /// `datetime.date`: no time of day.
    pub date_only: bool,
}

impl PyDateTime {
    pub fn naive(at: NaiveDateTime) -> Self {
        PyDateTime {
            at,
            offset: None,
            date_only: false,
        }
    }

    pub fn date(date: NaiveDate) -> Self {
        PyDateTime {
            at: date.and_hms_opt(0, 0, 0).unwrap_or_default(),
            offset: None,
            date_only: true,
        }
    }

    pub fn value(self) -> Value {
        Value::from_object(self)
    }

    /// `str(dt)`: `2024-05-01 10:00:00`, microseconds and offset only when present.
    pub fn py_str(&self) -> String {
        if self.date_only {
            return self.at.format("%Y-%m-%d").to_string();
        }
        self.iso(' ')
    }

    /// `repr(dt)`: `datetime.date(2026, 3, 14)`, `datetime.datetime(2026, 3, 14, 9, 26)`
    /// (a zero microsecond, then a zero second, left out), `tzinfo=` with an offset.
    pub fn py_repr(&self) -> String {
        let (date, time) = (self.at.date(), self.at.time());
        if self.date_only {
            return format!(
                "datetime.date({}, {}, {})",
                date.year(),
                date.month(),
                date.day()
            );
        }
        let mut parts = vec![
            i64::from(date.year()),
            i64::from(date.month()),
            i64::from(date.day()),
            i64::from(time.hour()),
            i64::from(time.minute()),
            i64::from(time.second()),
            i64::from(time.nanosecond() / 1000 % 1_000_000),
        ];
        for _ in 0..2 {
            if parts.last() == Some(&0) {
                parts.pop();
            }
        }
        let mut out = format!(
            "datetime.datetime({}",
            parts
                .iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        );
        if let Some(offset) = self.offset {
            let seconds = i64::from(offset.local_minus_utc());
            out.push_str(", tzinfo=");
            if seconds == 0 {
                out.push_str("datetime.timezone.utc");
            } else {
                // `timedelta`'s repr: days (floored) and the seconds left.
                let (days, rest) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
                let delta = if days == 0 {
                    format!("seconds={rest}")
                } else {
                    format!("days={days}, seconds={rest}")
                };
                out.push_str(&format!("datetime.timezone(datetime.timedelta({delta}))"));
            }
        }
        out.push(')');
        out
    }

    fn iso(&self, sep: char) -> String {
        if self.date_only {
            return self.at.format("%Y-%m-%d").to_string();
        }
        let mut out = format!(
            "{}{sep}{}",
            self.at.format("%Y-%m-%d"),
            self.at.format("%H:%M:%S")
        );
        let micros = self.at.nanosecond() / 1000 % 1_000_000;
        if micros != 0 {
            let _ = write!(out, ".{micros:06}");
        }
        if let Some(offset) = self.offset {
            out.push_str(&py_offset(offset, true));
        }
        out
    }

    /// `dt.strftime(fmt)` with Python's meaning of `%f`, `%z` and `%Z`.
    pub fn strftime(&self, format: &str) -> Result<String, String> {
        let mut translated = String::with_capacity(format.len());
        let mut chars = format.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '%' {
                translated.push(c);
                continue;
            }
            match chars.next() {
                Some('f') => {
                    let _ = write!(translated, "{:06}", self.at.nanosecond() / 1000 % 1_000_000);
                }
                Some('z') => {
                    if let Some(offset) = self.offset {
                        translated.push_str(&py_offset(offset, false));
                    }
                }
                Some('Z') => {
                    if let Some(offset) = self.offset {
                        translated.push_str(&if offset.local_minus_utc() == 0 {
                            "UTC".to_owned()
                        } else {
                            format!("UTC{}", py_offset(offset, true))
                        });
                    }
                }
                Some(other) => {
                    translated.push('%');
                    translated.push(other);
                }
                None => translated.push('%'),
            }
        }
        let mut out = String::new();
        write!(out, "{}", self.at.format(&translated))
            .map_err(|_| format!("invalid strftime format `{format}`"))?;
        Ok(out)
    }

    fn attribute(&self, name: &str) -> Option<Value> {
        let at = &self.at;
        Some(match name {
            "year" => Value::from(at.year()),
            "month" => Value::from(at.month()),
            "day" => Value::from(at.day()),
            "hour" if !self.date_only => Value::from(at.hour()),
            "minute" if !self.date_only => Value::from(at.minute()),
            "second" if !self.date_only => Value::from(at.second()),
            "microsecond" if !self.date_only => Value::from(at.nanosecond() / 1000 % 1_000_000),
            "tzinfo" if !self.date_only => match self.offset {
                Some(offset) => Value::from(if offset.local_minus_utc() == 0 {
                    "UTC".to_owned()
                } else {
                    format!("UTC{}", py_offset(offset, true))
                }),
                None => Value::from(()),
            },
            _ => return None,
        })
    }

    fn method(&self, name: &str, args: &[Value]) -> Result<Value, Error> {
        let no_args = || -> Result<(), Error> {
            let _: () = from_args(args)?;
            Ok(())
        };
        Ok(match name {
            "strftime" => {
                let (format,): (String,) = from_args(args)?;
                Value::from(
                    self.strftime(&format)
                        .map_err(|e| Error::new(ErrorKind::InvalidOperation, e))?,
                )
            }
            "isoformat" => {
                let (sep, _kwargs): (Option<String>, Kwargs) = from_args(args)?;
                let sep = sep.and_then(|s| s.chars().next()).unwrap_or('T');
                Value::from(self.iso(sep))
            }
            "date" => {
                no_args()?;
                PyDateTime::date(self.at.date()).value()
            }
            "time" => {
                no_args()?;
                Value::from(self.at.format("%H:%M:%S").to_string())
            }
            "timestamp" => {
                no_args()?;
                let utc = self.at
                    - self
                        .offset
                        .map(|o| chrono::Duration::seconds(o.local_minus_utc().into()))
                        .unwrap_or_default();
                Value::from(utc.and_utc().timestamp_millis() as f64 / 1000.0)
            }
            "weekday" => {
                no_args()?;
                Value::from(self.at.weekday().num_days_from_monday())
            }
            "isoweekday" => {
                no_args()?;
                Value::from(self.at.weekday().number_from_monday())
            }
            "ctime" => {
                no_args()?;
                Value::from(self.at.format("%a %b %e %H:%M:%S %Y").to_string())
            }
            "replace" => {
                let (kwargs,): (Kwargs,) = from_args(args)?;
                let mut at = self.at;
                let mut set = |key: &str,
                               apply: &dyn Fn(NaiveDateTime, u32) -> Option<NaiveDateTime>|
                 -> Result<(), Error> {
                    if let Some(v) = kwargs.get::<Option<u32>>(key)? {
                        at = apply(at, v).ok_or_else(|| {
                            Error::new(
                                ErrorKind::InvalidOperation,
                                format!("replace: {key}={v} is out of range"),
                            )
                        })?;
                    }
                    Ok(())
                };
                set("year", &|t, v| t.with_year(v as i32))?;
                set("month", &|t, v| t.with_month(v))?;
                set("day", &|t, v| t.with_day(v))?;
                set("hour", &|t, v| t.with_hour(v))?;
                set("minute", &|t, v| t.with_minute(v))?;
                set("second", &|t, v| t.with_second(v))?;
                set("microsecond", &|t, v| {
                    (v < 1_000_000)
                        .then(|| t.with_nanosecond(v * 1000))
                        .flatten()
                })?;
                kwargs.assert_all_used()?;
                PyDateTime { at, ..*self }.value()
            }
            "astimezone" | "now" => PyDateTime { ..*self }.value(),
            "utcoffset" => {
                no_args()?;
                match self.offset {
                    Some(o) => Value::from(py_offset(o, true)),
                    None => Value::from(()),
                }
            }
            _ => return Err(Error::from(ErrorKind::UnknownMethod)),
        })
    }

    /// Comparable instants: aware times are compared in UTC.
    fn instant(&self) -> NaiveDateTime {
        match self.offset {
            Some(o) => self.at - chrono::Duration::seconds(o.local_minus_utc().into()),
            None => self.at,
        }
    }
}

/// `+05:30` (`str()`, `isoformat()`) or `+0530` (`%z`).
fn py_offset(offset: FixedOffset, colon: bool) -> String {
    let seconds = offset.local_minus_utc();
    let sign = if seconds < 0 { '-' } else { '+' };
    let seconds = seconds.unsigned_abs();
    let (hours, minutes) = (seconds / 3600, seconds % 3600 / 60);
    if colon {
        format!("{sign}{hours:02}:{minutes:02}")
    } else {
        format!("{sign}{hours:02}{minutes:02}")
    }
}

impl Object for PyDateTime {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Plain
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        self.attribute(key.as_str()?)
    }

    fn call_method(
        self: &Arc<Self>,
        _state: &mut State<'_, '_>,
        method: &str,
        args: &[Value],
    ) -> Result<Value, Error> {
        self.method(method, args)
    }

    fn is_true(self: &Arc<Self>) -> bool {
        true
    }

    fn custom_cmp(self: &Arc<Self>, other: &DynObject) -> Option<Ordering> {
        let other = other.downcast_ref::<Self>()?;
        Some(self.instant().cmp(&other.instant()))
    }

    fn render(self: &Arc<Self>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.py_str())
    }
}

/// A datetime answers its attributes and methods, also when reached through another object.
pub fn attribute(at: &PyDateTime, name: &str) -> Option<Value> {
    at.attribute(name)
}

pub fn call_method(at: &PyDateTime, name: &str, args: &[Value]) -> Result<Value, Error> {
    at.method(name, args)
}

/// PyYAML's implicit timestamp: `2024-05-01`, `2024-05-01 10:00:00`, `2024-05-01T10:00:00.5Z`.
/// `None` when `text` is not one; an error when it is one but names no real date.
pub fn parse_yaml_timestamp(text: &str) -> Option<Result<PyDateTime, String>> {
    static TIMESTAMP: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = TIMESTAMP.get_or_init(|| {
        regex::Regex::new(
            r"^(?P<year>[0-9]{4})-(?P<month>[0-9]{1,2})-(?P<day>[0-9]{1,2})(?:(?:[Tt]|[ \t]+)(?P<hour>[0-9]{1,2}):(?P<minute>[0-9]{2}):(?P<second>[0-9]{2})(?:\.(?P<fraction>[0-9]*))?(?:[ \t]*(?P<tz>Z|(?P<sign>[-+])(?P<tzhour>[0-9]{1,2})(?::(?P<tzminute>[0-9]{2}))?))?)?$",
        )
        .expect("valid regex")
    });
    let caps = re.captures(text)?;
    // YAML 1.1 writes a date-only timestamp with exactly two-digit month and day.
    let number = |name: &str| caps.name(name).and_then(|m| m.as_str().parse::<u32>().ok());
    if caps.name("hour").is_none() && (caps["month"].len() != 2 || caps["day"].len() != 2) {
        return None;
    }
    let invalid = || format!("`{text}` looks like a timestamp but is not a valid date or time");
    let date = match NaiveDate::from_ymd_opt(
        caps["year"].parse().unwrap_or(0),
        number("month").unwrap_or(0),
        number("day").unwrap_or(0),
    ) {
        Some(date) => date,
        None => return Some(Err(invalid())),
    };
    let Some(hour) = number("hour") else {
        return Some(Ok(PyDateTime::date(date)));
    };
    let micros = caps
        .name("fraction")
        .map(|f| {
            let digits: String = f
                .as_str()
                .chars()
                .chain(std::iter::repeat('0'))
                .take(6)
                .collect();
            digits.parse::<u32>().unwrap_or(0)
        })
        .unwrap_or(0);
    let Some(at) = date.and_hms_micro_opt(
        hour,
        number("minute").unwrap_or(0),
        number("second").unwrap_or(0),
        micros,
    ) else {
        return Some(Err(invalid()));
    };
    let offset = match (caps.name("sign"), caps.name("tz")) {
        (Some(sign), _) => {
            let seconds = (number("tzhour").unwrap_or(0) * 3600
                + number("tzminute").unwrap_or(0) * 60) as i32;
            let seconds = if sign.as_str() == "-" {
                -seconds
            } else {
                seconds
            };
            match FixedOffset::east_opt(seconds) {
                Some(offset) => Some(offset),
                None => return Some(Err(invalid())),
            }
        }
        (None, Some(_)) => FixedOffset::east_opt(0),
        (None, None) => None,
    };
    Some(Ok(PyDateTime {
        at,
        offset,
        date_only: false,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use minijinja::Environment;

    fn render(source: &str, value: Value) -> String {
        let mut env = Environment::new();
        env.add_template("t", source).unwrap();
        env.get_template("t")
            .unwrap()
            .render(minijinja::context! { t => value })
            .unwrap()
    }

    fn ts(text: &str) -> PyDateTime {
        parse_yaml_timestamp(text).unwrap().unwrap()
    }

    #[test]
    fn prints_like_python_str() {
        assert_eq!(ts("2024-05-01 10:00:00").py_str(), "2024-05-01 10:00:00");
        assert_eq!(ts("2024-05-01").py_str(), "2024-05-01");
        assert_eq!(
            ts("2024-05-01T10:00:00Z").py_str(),
            "2024-05-01 10:00:00+00:00"
        );
        assert_eq!(
            ts("2001-12-14t21:59:43.10-05:00").py_str(),
            "2001-12-14 21:59:43.100000-05:00"
        );
        assert_eq!(ts("2024-5-1 1:02:03").py_str(), "2024-05-01 01:02:03");
    }

    #[test]
    fn only_yaml_timestamps_are_timestamps() {
        for text in [
            "2024-5-1",
            "2024-05-01x",
            "May 1",
            "10:00:00",
            "2024-05-01 10:00",
        ] {
            assert!(parse_yaml_timestamp(text).is_none(), "{text}");
        }
        assert!(parse_yaml_timestamp("2024-02-30").unwrap().is_err());
    }

    #[test]
    fn methods_and_attributes() {
        let t = ts("2024-05-01 10:04:05").value();
        assert_eq!(
            render("{{ t.strftime('%Y-%m-%d %H:%M') }}|{{ t.isoformat() }}|{{ t.date() }}|{{ t.year }}/{{ t.month }}/{{ t.day }} {{ t.hour }}", t),
            "2024-05-01 10:04|2024-05-01T10:04:05|2024-05-01|2024/5/1 10"
        );
        let t = ts("2024-05-01 10:04:05.25+02:00").value();
        assert_eq!(
            render("{{ t.strftime('%f %z %Z') }}|{{ t.isoformat(' ') }}|{{ t.replace(microsecond=0) }}|{{ t.weekday() }}", t),
            "250000 +0200 UTC+02:00|2024-05-01 10:04:05.250000+02:00|2024-05-01 10:04:05+02:00|2"
        );
    }

    #[test]
    fn comparisons_order_instants() {
        let mut env = Environment::new();
        env.add_template("t", "{{ a < b }} {{ a == a2 }} {{ b > a }}")
            .unwrap();
        let out = env
            .get_template("t")
            .unwrap()
            .render(minijinja::context! {
                a => ts("2024-05-01 10:00:00").value(),
                a2 => ts("2024-05-01 10:00:00").value(),
                b => ts("2024-05-02").value(),
            })
            .unwrap();
        assert_eq!(out, "True True True");
    }
}
