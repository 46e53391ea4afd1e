//! The clock that `now()` and `strftime_now()` read. It is set per render, so renders can
//! differ in time (to expose templates that print it) or share a pinned time (`--now`).

use super::datetime::PyDateTime;
use chrono::{DateTime, Utc};
use std::cell::Cell;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clock {
    pub at: DateTime<Utc>,
}

thread_local! {
    static CURRENT: Cell<Option<Clock>> = const { Cell::new(None) };
}

/// Base time of synthesized renders: fixed, so output is reproducible.
pub const SYNTHETIC_BASE: &str = "2026-03-14T09:26:53Z";

impl Clock {
    pub fn parse(iso: &str) -> Result<Clock, String> {
        DateTime::parse_from_rfc3339(iso)
            .map(|t| Clock {
                at: t.with_timezone(&Utc),
            })
            .or_else(|_| {
                chrono::NaiveDateTime::parse_from_str(iso, "%Y-%m-%dT%H:%M:%S")
                    .or_else(|_| {
                        chrono::NaiveDate::parse_from_str(iso, "%Y-%m-%d")
                            .map(|d| d.and_hms_opt(0, 0, 0).unwrap_or_default())
                    })
                    .map(|t| Clock { at: t.and_utc() })
            })
            .map_err(|_| {
                format!("`{iso}` is not an ISO-8601 date or time (e.g. 2026-11-29T12:00:00Z)")
            })
    }

    /// The clock of the `n`th synthesized render: each one moves day, hour, minute, second and millisecond.
    pub fn synthetic(n: usize) -> Clock {
        let base = Clock::parse(SYNTHETIC_BASE).expect("valid constant").at;
        let step =
            chrono::Duration::milliseconds(((24 * 3600 + 3600 + 60 + 1) * 1000 + 7) * n as i64);
        Clock { at: base + step }
    }

    pub fn now() -> Clock {
        Clock { at: Utc::now() }
    }

    pub fn iso8601(&self) -> String {
        self.at.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
    }

    pub fn strftime(&self, format: &str) -> Result<String, String> {
        use std::fmt::Write;
        let mut out = String::new();
        write!(out, "{}", self.at.format(format))
            .map_err(|_| format!("invalid strftime format `{format}`"))?;
        Ok(out)
    }

    /// The clock as an application passes it: a naive `datetime.datetime`.
    pub fn datetime(&self) -> PyDateTime {
        PyDateTime::naive(self.at.naive_utc())
    }
}

pub struct ClockGuard(Option<Clock>);

impl Drop for ClockGuard {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.0));
    }
}

pub fn set_current(clock: Clock) -> ClockGuard {
    ClockGuard(CURRENT.with(|c| c.replace(Some(clock))))
}

pub fn current() -> Clock {
    CURRENT.with(|c| c.get()).unwrap_or_else(Clock::now)
}

/// The `now` global: `now()` returns the render's time as a datetime, and a bare `{{ now }}`
/// is that datetime too (`now.strftime(...)`), so a template that prints the clock either way
/// is caught.
#[derive(Debug)]
pub struct NowGlobal;

impl minijinja::value::Object for NowGlobal {
    fn repr(self: &std::sync::Arc<Self>) -> minijinja::value::ObjectRepr {
        minijinja::value::ObjectRepr::Plain
    }

    fn call(
        self: &std::sync::Arc<Self>,
        _state: &mut minijinja::State<'_, '_>,
        args: &[minijinja::Value],
    ) -> Result<minijinja::Value, minijinja::Error> {
        if !args.is_empty() {
            return Err(minijinja::Error::new(
                minijinja::ErrorKind::TooManyArguments,
                "now() takes no arguments; use now().strftime(format) or strftime_now(format)",
            ));
        }
        Ok(current().datetime().value())
    }

    fn get_value(self: &std::sync::Arc<Self>, key: &minijinja::Value) -> Option<minijinja::Value> {
        super::datetime::attribute(&current().datetime(), key.as_str()?)
    }

    fn call_method(
        self: &std::sync::Arc<Self>,
        _state: &mut minijinja::State<'_, '_>,
        method: &str,
        args: &[minijinja::Value],
    ) -> Result<minijinja::Value, minijinja::Error> {
        super::datetime::call_method(&current().datetime(), method, args)
    }

    fn render(self: &std::sync::Arc<Self>, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&current().datetime().py_str())
    }
}
