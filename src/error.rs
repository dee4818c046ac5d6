//! One error type whose messages name the file, key or value at fault.

use std::fmt;

#[derive(Debug)]
pub enum Error {
    /// A bad spec: key, type or value.
    Config(String),
    /// Bad or missing data.
    Data(String),
    /// An I/O failure, with what was being done.
    Io(String, std::io::Error),
    /// Anything else the run could not do.
    Run(String),
    /// A run or a sweep stopped by a signal, resumable by the same command (exit status
    /// [`STOPPED`]: a scheduler's script requeues it).
    Stopped(String),
}

/// The exit status of a run or sweep stopped by a signal and resumable (`EX_TEMPFAIL`: try
/// again), apart from 1 for every other error.
pub const STOPPED: i32 = 75;

impl Error {
    pub fn io(what: impl Into<String>, e: std::io::Error) -> Self {
        Error::Io(what.into(), e)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Config(m) => write!(f, "config error: {m}"),
            Error::Data(m) => write!(f, "data error: {m}"),
            Error::Io(m, e) => write!(f, "{m}: {e}"),
            Error::Run(m) | Error::Stopped(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// A GPU device that failed on the work given it (out of memory, a buffer over its limit, lost):
/// what burn said, its first and innermost lines. A read is where an asynchronous device's
/// failure shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceFailed(pub String);

impl std::fmt::Display for DeviceFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl DeviceFailed {
    /// What a run's error says after the failure: what it likely was, the `keys` whose smaller
    /// values need less, and that a changed spec is a new run.
    pub fn advice(&self, keys: &str) -> String {
        format!(
            "{self}; out of device memory or over a buffer's limit, a smaller {keys} needs less (a changed spec is a new run: another run.name, or --force)"
        )
    }

    /// From a backend error's report: its first line and the first line of its innermost
    /// cause (the last "Caused by:" section).
    pub fn from_report(report: &str) -> Self {
        let head = |section: &str| {
            section
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty() && !l.contains("acktrace") && !l.starts_with("Asked at"))
                .map(str::to_string)
        };
        let sections: Vec<&str> = report.split("Caused by:").collect();
        let first = sections.first().and_then(|s| head(s));
        let last = sections.last().and_then(|s| head(s));
        DeviceFailed(match (first, last) {
            (Some(a), Some(b)) if a != b => format!("{a} … {b}"),
            (Some(a), _) | (None, Some(a)) => a,
            (None, None) => "the device reported an error without a message".to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::DeviceFailed;

    /// A failure's report as burn 0.22 words a failed allocation: its first line and its
    /// innermost cause, without the skip records and backtrace lines between.
    #[test]
    fn a_failure_is_its_first_line_and_innermost_cause() {
        let report = "An error happened during execution\nCaused by:\n  Several failures at once\nCaused by:\n  The bytes were never written (failure #377)\n  skipped `SliceAssignKernel`\nCaused by:\n  An IO error happened\nCaused by:\n  can't allocate buffer of size: 188743680\nNo backtrace available\nAsked at:\nNo backtrace available\n";
        assert_eq!(
            DeviceFailed::from_report(report).0,
            "An error happened during execution … can't allocate buffer of size: 188743680"
        );
        assert_eq!(DeviceFailed::from_report("lost\n").0, "lost");
        assert!(!DeviceFailed::from_report("").0.is_empty());
    }
}
