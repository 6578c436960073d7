//! How a simulation shows its progress to whoever started it: a bar on a terminal, a line every
//! so often where there is none (a pipe, a CI log), or a Python callable (a notebook's bar), and
//! the periodic Ctrl-C check that all of them share.

use indicatif::{ProgressBar, ProgressStyle};
use pyo3::prelude::*;
use pyo3::types::PyString;
use std::time::{Duration, Instant};

/// How often the callback runs and Ctrl-C is checked (each takes the GIL briefly).
const CHECK_INTERVAL: Duration = Duration::from_millis(200);

/// Seconds between progress lines, unless `XLAT_PROGRESS_SECONDS` says otherwise.
const LINE_INTERVAL_SECONDS: f64 = 60.0;

/// What the caller asked for.
pub enum Mode {
    Off,
    Bar,
    /// A line on stderr at this interval.
    Lines(Duration),
    /// Called with `(done, total)`, `total` None when unknown.
    Callback(Py<PyAny>),
}

impl Mode {
    /// From the Python argument: `None` or `False` off, `True` or `"bar"` a bar, `"lines"` a
    /// line every `XLAT_PROGRESS_SECONDS` (default 60) seconds, a callable called with
    /// `(done, total)`.
    pub fn from_py(arg: Option<&Bound<'_, PyAny>>) -> PyResult<Mode> {
        let Some(arg) = arg else {
            return Ok(Mode::Off);
        };
        if arg.is_none() {
            return Ok(Mode::Off);
        }
        if let Ok(on) = arg.extract::<bool>() {
            return Ok(if on { Mode::Bar } else { Mode::Off });
        }
        if arg.is_instance_of::<PyString>() {
            return match arg.extract::<String>()?.as_str() {
                "bar" => Ok(Mode::Bar),
                "lines" => Ok(Mode::Lines(line_interval())),
                "off" => Ok(Mode::Off),
                other => Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "progress must be True, False, None, \"bar\", \"lines\", \"off\" or a \
                     callable, got \"{other}\""
                ))),
            };
        }
        if arg.is_callable() {
            return Ok(Mode::Callback(arg.clone().unbind()));
        }
        Err(pyo3::exceptions::PyTypeError::new_err(
            "progress must be True, False, None, \"bar\", \"lines\" or a callable",
        ))
    }
}

fn line_interval() -> Duration {
    let seconds = std::env::var("XLAT_PROGRESS_SECONDS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .unwrap_or(LINE_INTERVAL_SECONDS);
    Duration::from_secs_f64(seconds)
}

/// The progress of one simulation.
pub struct Progress {
    mode: Mode,
    bar: Option<ProgressBar>,
    start: Instant,
    /// When the first reference was simulated (set-up is not part of the rate).
    first: Option<(Instant, u64)>,
    last_line: Instant,
    last_check: Instant,
    last: (u64, Option<u64>),
}

impl Progress {
    pub fn new(mode: Mode) -> Progress {
        let bar = matches!(mode, Mode::Bar).then(|| {
            let bar = ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
            // No estimate during set-up: it would be made from no progress at all.
            bar.set_style(
                ProgressStyle::with_template("{spinner} [{elapsed_precise}] setting up")
                    .expect("static template"),
            );
            bar
        });
        let now = Instant::now();
        Progress {
            mode,
            bar,
            start: now,
            first: None,
            last_line: now,
            last_check: now,
            last: (0, None),
        }
    }

    /// `done` of `total` references simulated: move the bar, print a line or call back when it
    /// is time, and let Ctrl-C through.
    pub fn report(&mut self, done: u64, total: Option<u64>) -> xlat::Result<()> {
        self.last = (done, total);
        if let Some(b) = &self.bar {
            if let Some(t) = total {
                b.set_length(t);
            }
            b.set_position(done);
        }
        if done > 0 && self.first.is_none() {
            self.first = Some((Instant::now(), done));
            if let Some(b) = &self.bar {
                b.set_style(
                    ProgressStyle::with_template(
                        "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} refs \
                         ({per_sec}, eta {eta})",
                    )
                    .expect("static template"),
                );
                b.reset_eta();
            }
        }
        if let Mode::Lines(every) = self.mode {
            if self.last_line.elapsed() >= every {
                self.last_line = Instant::now();
                eprintln!("{}", self.line(done, total));
            }
        }
        if self.last_check.elapsed() >= CHECK_INTERVAL {
            self.last_check = Instant::now();
            self.call_back(done, total);
            Python::attach(|py| py.check_signals()).map_err(|_| xlat::Error::Interrupted)?;
        }
        Ok(())
    }

    /// The run is over: clear the bar, give the callback the last count.
    pub fn finish(self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
        let (done, total) = self.last;
        self.call_back(done, total);
    }

    fn call_back(&self, done: u64, total: Option<u64>) {
        if let Mode::Callback(f) = &self.mode {
            Python::attach(|py| {
                if let Err(e) = f.call1(py, (done, total)) {
                    // A broken progress display must not lose the run: say so and go on.
                    e.print(py);
                }
            });
        }
    }

    /// "xlat: 1,234,567 of 10,000,000 references (12.3%) after 1m02s, 19.9K refs/s, about
    /// 8m left".
    fn line(&self, done: u64, total: Option<u64>) -> String {
        let mut s = format!("xlat: {} ", thousands(done));
        if let Some(t) = total.filter(|&t| t > 0) {
            s += &format!(
                "of {} references ({:.1}%)",
                thousands(t),
                100.0 * done as f64 / t as f64
            );
        } else {
            s += "references";
        }
        s += &format!(" after {}", duration(self.start.elapsed()));
        if let Some((at, from)) = self.first {
            let seconds = at.elapsed().as_secs_f64();
            if seconds > 0.0 && done > from {
                let rate = (done - from) as f64 / seconds;
                s += &format!(", {}/s", si(rate));
                if let Some(t) = total.filter(|&t| t > done) {
                    let left = Duration::from_secs_f64((t - done) as f64 / rate);
                    s += &format!(", about {} left", duration(left));
                }
            }
        }
        s
    }
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn si(x: f64) -> String {
    match x {
        x if x >= 1e9 => format!("{:.1}G", x / 1e9),
        x if x >= 1e6 => format!("{:.1}M", x / 1e6),
        x if x >= 1e3 => format!("{:.1}K", x / 1e3),
        x => format!("{x:.0}"),
    }
}

fn duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        s if s >= 86_400 => format!("{}d{:02}h", s / 86_400, s % 86_400 / 3600),
        s if s >= 3600 => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
        s if s >= 60 => format!("{}m{:02}s", s / 60, s % 60),
        s => format!("{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_durations_read_as_people_write_them() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands(100), "100");
        assert_eq!(si(19_900.0), "19.9K");
        assert_eq!(si(2.5e6), "2.5M");
        assert_eq!(duration(Duration::from_secs(62)), "1m02s");
        assert_eq!(duration(Duration::from_secs(3 * 3600 + 5 * 60)), "3h05m");
        assert_eq!(duration(Duration::from_secs(2 * 86_400 + 3600)), "2d01h");
    }
}
