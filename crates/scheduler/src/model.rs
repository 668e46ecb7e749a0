//! What a schedule is: a trigger (cron, interval or one-shot), the run it
//! starts, its missed-fire policy and its concurrency cap; and when it is
//! next due.

use chrono::{DateTime, FixedOffset, TimeZone};
use chrono_tz::Tz;
use croner::Cron;
use croner::parser::{CronParser, Seconds};
use serde::{Deserialize, Serialize};

use crate::error::Error;

/// Microseconds since the Unix epoch (the store's time unit).
pub type Micros = i64;

const MICROS_PER_SEC: i64 = 1_000_000;

/// When a schedule fires.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum Trigger {
    /// A cron expression (5 fields, or 6 with leading seconds) evaluated in
    /// an explicit time zone: `UTC`, a fixed offset such as `+02:00`, or an
    /// IANA name such as `Europe/Berlin` (daylight saving time followed:
    /// see [`ScheduleSpec::next_after`] for the gap and overlap rules).
    Cron {
        /// The expression.
        expr: String,
        /// `UTC` (the default), `±HH:MM` or an IANA zone name.
        #[serde(default = "utc")]
        tz: String,
    },
    /// Every `seconds` seconds, the first fire `seconds` after creation.
    Interval {
        /// The period in seconds (at least 1).
        seconds: u64,
    },
    /// Once, at this instant (RFC 3339, with its offset).
    Once {
        /// The instant.
        at: String,
    },
}

fn utc() -> String {
    "UTC".to_owned()
}

/// What to do with fires whose due instant passed while no scheduler ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum MissedFire {
    /// Record them `skipped` (`schedule.skipped.missed_fire`) and wait for
    /// the next due instant (the default).
    #[default]
    Skip,
    /// Run once, late, at the first tick (several missed fires coalesce).
    RunOnce,
}

/// The run a fire starts: a runner request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRequest {
    /// `scripted`, `claude`, `codex`, `gemini` or `pi`.
    #[serde(default = "scripted")]
    pub provider: String,
    /// The prompt.
    pub prompt: String,
    /// The workspace the agent works in.
    pub workspace: String,
    /// Run in a fresh worktree sandbox of the workspace.
    #[serde(default)]
    pub sandbox: bool,
    /// The model, as the provider names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// For the scripted provider: the script (JSON text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<String>,
}

fn scripted() -> String {
    "scripted".to_owned()
}

/// The providers a request may name.
pub const PROVIDERS: [&str; 5] = ["scripted", "claude", "codex", "gemini", "pi"];

/// One schedule's definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleSpec {
    /// Its unique name (letters, digits, `-`, `_`, `.`).
    pub name: String,
    /// When it fires.
    pub trigger: Trigger,
    /// What it runs.
    pub run: RunRequest,
    /// The missed-fire policy.
    #[serde(default)]
    pub missed_fire: MissedFire,
    /// How many of its runs may be `running` at once; a fire beyond it is
    /// recorded `skipped` with `schedule.skipped.overlap`.
    #[serde(default = "one")]
    pub max_concurrent: u32,
    /// Whether it fires at all.
    #[serde(default = "yes")]
    pub enabled: bool,
}

fn one() -> u32 {
    1
}

fn yes() -> bool {
    true
}

impl ScheduleSpec {
    /// Checks every field (the cron expression parses, the zone is known,
    /// the interval is positive, the provider exists, the cap is at least 1).
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |reason: String| Error::Invalid {
            name: self.name.clone(),
            reason,
        };
        if self.name.is_empty()
            || self.name.len() > 128
            || !self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        {
            return Err(bad(
                "the name must be 1-128 letters, digits, '-', '_' or '.'".into(),
            ));
        }
        if self.max_concurrent == 0 {
            return Err(bad("max_concurrent must be at least 1".into()));
        }
        if !PROVIDERS.contains(&self.run.provider.as_str()) {
            return Err(bad(format!(
                "unknown provider {:?} (one of {})",
                self.run.provider,
                PROVIDERS.join(", ")
            )));
        }
        if self.run.prompt.trim().is_empty() {
            return Err(bad("the prompt is empty".into()));
        }
        if self.run.workspace.is_empty() {
            return Err(bad("the workspace is empty".into()));
        }
        match &self.trigger {
            Trigger::Cron { expr, tz } => {
                parse_cron(expr).map_err(|e| bad(format!("cron expression {expr:?}: {e}")))?;
                parse_zone(tz).map_err(bad)?;
            }
            Trigger::Interval { seconds } => {
                if *seconds == 0 || *seconds > (i64::MAX / MICROS_PER_SEC) as u64 / 2 {
                    return Err(bad("the interval must be at least 1 second".into()));
                }
            }
            Trigger::Once { at } => {
                DateTime::parse_from_rfc3339(at)
                    .map_err(|e| bad(format!("one-shot instant {at:?}: {e} (RFC 3339)")))?;
            }
        }
        Ok(())
    }

    /// The first due instant of a schedule defined at `now`.
    pub fn first_due(&self, now: Micros) -> Result<Option<Micros>, Error> {
        match &self.trigger {
            Trigger::Interval { seconds } => Ok(Some(now + interval_micros(*seconds))),
            Trigger::Once { at } => Ok(Some(once_at(&self.name, at)?)),
            Trigger::Cron { .. } => self.next_after(now, now),
        }
    }

    /// The first due instant strictly after `now`, continuing the series
    /// whose last due instant was `last_due` (interval schedules keep their
    /// phase; a one-shot has none after its instant).
    ///
    /// A cron schedule in a named zone follows its daylight saving time
    /// (croner's rules, which are vixie-cron's):
    /// - **gap** (clocks forward, e.g. 02:00-03:00 does not exist): a
    ///   fixed-time expression (`30 2 * * *`) fires once at the first valid
    ///   instant after the gap, the same day (03:00); a wildcard or step
    ///   field (`*/15 * * * *`) skips the instants inside the gap.
    /// - **overlap** (clocks back, e.g. 02:00-03:00 happens twice): a
    ///   fixed-time expression fires once, in the first pass; a wildcard or
    ///   step field fires in both passes.
    ///
    /// Instants always move forward in real time: the search starts at the
    /// exact instant `now`, so it knows which pass of an overlap it is in.
    pub fn next_after(&self, last_due: Micros, now: Micros) -> Result<Option<Micros>, Error> {
        let bad = |reason: String| Error::Invalid {
            name: self.name.clone(),
            reason,
        };
        match &self.trigger {
            Trigger::Interval { seconds } => {
                let step = interval_micros(*seconds);
                if last_due > now {
                    return Ok(Some(last_due));
                }
                let k = (now - last_due) / step + 1;
                Ok(Some(last_due.saturating_add(k.saturating_mul(step))))
            }
            Trigger::Once { at } => {
                let at = once_at(&self.name, at)?;
                Ok((at > now).then_some(at))
            }
            Trigger::Cron { expr, tz } => {
                let cron = parse_cron(expr).map_err(|e| bad(e.to_string()))?;
                match parse_zone(tz).map_err(bad)? {
                    Zone::Fixed(zone) => next_in(&cron, &zone, now),
                    Zone::Named(zone) => next_in(&cron, &zone, now),
                }
                .map_err(bad)
            }
        }
    }

    /// Every due instant in `(after, until]`, at most `cap` of them, and
    /// whether there were more.
    pub fn due_between(
        &self,
        first: Micros,
        until: Micros,
        cap: usize,
    ) -> Result<(Vec<Micros>, bool), Error> {
        let mut out = Vec::new();
        let mut due = Some(first);
        while let Some(d) = due {
            if d > until {
                return Ok((out, false));
            }
            if out.len() == cap {
                return Ok((out, true));
            }
            out.push(d);
            due = self.next_after(d, d)?;
        }
        Ok((out, false))
    }
}

fn interval_micros(seconds: u64) -> Micros {
    i64::try_from(seconds)
        .unwrap_or(i64::MAX)
        .saturating_mul(MICROS_PER_SEC)
        .max(1)
}

fn once_at(name: &str, at: &str) -> Result<Micros, Error> {
    DateTime::parse_from_rfc3339(at)
        .map(|t| t.timestamp_micros())
        .map_err(|e| Error::Invalid {
            name: name.to_owned(),
            reason: format!("one-shot instant {at:?}: {e}"),
        })
}

fn parse_cron(expr: &str) -> Result<Cron, croner::errors::CronError> {
    CronParser::builder()
        .seconds(Seconds::Optional)
        .build()
        .parse(expr)
}

/// A cron schedule's zone.
#[derive(Debug, Clone, Copy)]
enum Zone {
    /// UTC or a fixed offset.
    Fixed(FixedOffset),
    /// An IANA zone, with its daylight saving time.
    Named(Tz),
}

fn next_in<Z: TimeZone>(cron: &Cron, zone: &Z, now: Micros) -> Result<Option<Micros>, String> {
    let start = zone
        .timestamp_micros(now)
        .single()
        .ok_or_else(|| format!("instant {now} is out of range"))?;
    Ok(cron
        .find_next_occurrence(&start, false)
        .ok()
        .map(|next| next.timestamp_micros()))
}

/// `UTC`/`Z`, a fixed offset `±HH:MM`, or an IANA zone name
/// (`Europe/Berlin`, case as in the tz database).
fn parse_zone(tz: &str) -> Result<Zone, String> {
    let t = tz.trim();
    if t.eq_ignore_ascii_case("utc") || t == "Z" {
        return FixedOffset::east_opt(0)
            .map(Zone::Fixed)
            .ok_or_else(|| "utc".to_owned());
    }
    let bad = || {
        format!(
            "time zone {tz:?}: expected UTC, an offset such as +02:00 or an IANA name such as Europe/Berlin"
        )
    };
    let (sign, rest) = match t.as_bytes().first() {
        Some(b'+') => (1, &t[1..]),
        Some(b'-') => (-1, &t[1..]),
        _ => return t.parse::<Tz>().map(Zone::Named).map_err(|_| bad()),
    };
    let (h, m) = rest.split_once(':').ok_or_else(bad)?;
    let h: i32 = h.parse().map_err(|_| bad())?;
    let m: i32 = m.parse().map_err(|_| bad())?;
    if !(0..=23).contains(&h) || !(0..=59).contains(&m) {
        return Err(bad());
    }
    FixedOffset::east_opt(sign * (h * 3600 + m * 60))
        .map(Zone::Fixed)
        .ok_or_else(bad)
}
