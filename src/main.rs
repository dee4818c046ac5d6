//! The `fedrun` binary: parse the command line and run it (`cli`); an error is one line on
//! stderr and exit status 1.

use clap::Parser;

fn main() {
    // Like any Unix filter, end quietly when the reader of stdout goes away (`fedrun report … |
    // head`): Rust ignores SIGPIPE, which turns the next print into a panic.
    #[cfg(unix)]
    // SAFETY: restores the default action of one signal before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = fedrun::cli::Cli::parse();
    if let Err(e) = fedrun::cli::main_with(cli) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
