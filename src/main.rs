//! The `fedrun` binary: parse the command line and run it (`cli`); an error is one line on
//! stderr and exit status 1.

use clap::Parser;

fn main() {
    let cli = fedrun::cli::Cli::parse();
    if let Err(e) = fedrun::cli::main_with(cli) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
