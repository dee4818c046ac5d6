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
