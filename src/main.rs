//! The `fedrun` binary: parse the command line and run it (`cli`); an error is one line on
//! stderr and exit status 1, or 75 for a run or sweep stopped by a signal (resumable).

use clap::Parser;

fn main() {
    // Like any Unix filter, end quietly when the reader of stdout goes away (`fedrun report … |
    // head`): Rust ignores SIGPIPE, which turns the next print into a panic.
    #[cfg(unix)]
    // SAFETY: restores the default action of one signal before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    // glibc hands freed blocks above its thresholds back to the OS at once (munmap, heap trim),
    // so every step's parameter-sized tensors come back as fresh pages: page faults and zeroing
    // took an eighth of a FEMNIST CNN step. Keep freed memory for reuse (docs/history/PERFORMANCE-2026-11.md).
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: allocator settings, made before any thread starts or any large block is taken.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX);
        libc::mallopt(libc::M_TOP_PAD, 64 << 20);
    }
    // Every compute thread flushes subnormals (src/kernels/fpu.rs): this thread and rayon's
    // global pool now, for the commands that compute without a run (`bench --workload ops`); a
    // run sets its spec's `run.flush_subnormals` again.
    fedrun::kernels::fpu::set_flush_subnormals(true);
    let cli = fedrun::cli::Cli::parse();
    // a SIMD cap that names no level is refused before anything runs (src/kernels/simd.rs)
    if let Err(e) = fedrun::kernels::simd::from_env() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
    if let Err(e) = fedrun::cli::main_with(cli) {
        eprintln!("error: {e}");
        let stopped = matches!(e, fedrun::error::Error::Stopped(_));
        std::process::exit(if stopped { fedrun::error::STOPPED } else { 1 });
    }
}
