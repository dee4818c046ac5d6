//! SIGINT and SIGTERM for the commands that run for long (a run, a sweep): the first sets a flag
//! the command stops on, and a line on stderr says what happens next (a watcher thread: a
//! signal handler may not print); a second ends the process at once (exit status 130 or 143).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{Error, Result};

/// Set once the watcher has printed its line.
static ACKNOWLEDGED: AtomicBool = AtomicBool::new(false);

/// The flag SIGINT and SIGTERM set; `then` is what the line on stderr says the command does.
pub fn stop_on_signals(then: &'static str) -> Result<Arc<AtomicBool>> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let stop = Arc::new(AtomicBool::new(false));
    for (sig, status) in [(SIGINT, 130), (SIGTERM, 143)] {
        signal_hook::flag::register_conditional_shutdown(sig, status, Arc::clone(&stop))
            .and_then(|_| signal_hook::flag::register(sig, Arc::clone(&stop)))
            .map_err(|e| Error::io("cannot install the signal handlers", e))?;
    }
    let seen = Arc::clone(&stop);
    std::thread::spawn(move || {
        while !seen.load(Ordering::SeqCst) {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        eprintln!("\nstopping: signal received; {then} (a second signal ends the process at once)");
        ACKNOWLEDGED.store(true, Ordering::SeqCst);
    });
    Ok(stop)
}

/// A command that stopped on a signal waits (briefly) for the watcher's line, so that it is
/// never lost to a quick exit.
pub fn wait_acknowledged() {
    let t0 = std::time::Instant::now();
    while !ACKNOWLEDGED.load(Ordering::SeqCst) && t0.elapsed() < std::time::Duration::from_secs(1) {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}
